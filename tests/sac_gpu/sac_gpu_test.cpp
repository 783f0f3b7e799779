#include <doctest/doctest.h>

#include <cstdio>

#include "sac_gpu/runs.hpp"

// The batched device gradients against the host's per-sample gradients on one batch (float on both sides; the
// device sums in another order), with 32-wide networks (shared-memory kernels) and 256-wide ones (cuBLASLt); the
// loss means of the fixed-order device sums against the host's.
TEST_CASE("sac_gpu.device_gradients_match_host") {
  for (int hidden : {32, 256}) {
    const auto r = sac_gpu::device_matches_host(300, hidden);
    std::printf("sac_gpu agreement, hidden %d (%s): targets %.2e critic_grad %.2e actor_grad %.2e actor_loss host %.6f "
                "device %.6f log_prob host %.6f device %.6f critic_loss host %.6f device %.6f\n",
                hidden, r.path, r.targets, r.critic_grad, r.actor_grad, r.actor_loss_host, r.actor_loss_device,
                r.log_prob_host, r.log_prob_device, r.critic_loss_host, r.critic_loss_device);
    CHECK(r.targets < 1e-4);
    CHECK(r.critic_grad < 1e-2);
    CHECK(r.actor_grad < 1e-2);
    CHECK(r.actor_loss_device == doctest::Approx(r.actor_loss_host).epsilon(1e-3));
    CHECK(r.log_prob_device == doctest::Approx(r.log_prob_host).epsilon(1e-3));
    CHECK(r.critic_loss_device == doctest::Approx(r.critic_loss_host).epsilon(1e-3));
  }
}

// SAC with replay, update and collection on the device: Pendulum's deterministic return must rise from the
// random policy's to the level the host test asks for, with
// one gradient step per collected transition whether 1 or 8 environments collect (6000 env steps: 1000 more
// than the host test, as the device sums in another order and 8 environments collect between updates).
TEST_CASE("sac_gpu.learns_pendulum") {
  for (int envs : {1, 8}) {
    const auto r = sac_gpu::learn_pendulum(envs, 6000);
    for (const auto& l : r.log) std::printf("sac_gpu pendulum envs %d: %s\n", envs, l.c_str());
    std::printf("sac_gpu pendulum envs %d: random %.1f, trained %.1f after %zu env steps, %zu updates, %.1f s\n", envs,
                r.random_return, r.final_return, r.env_steps, r.updates, r.seconds);
    CHECK(r.random_return < -900.0);
    CHECK(r.final_return > -400.0);
    CHECK(r.final_return > r.random_return + 600.0);
  }
}

// The replay as 3 device shards (groups of 3, 3 and 2 of the 8 environments, 33333 transitions each), drawn as one
// table, with a placement step every 50 vector steps under a budget of 1.5 shards' columns: every shard starts in
// pinned host memory, the first decided step (150: the warm-up ends at 125) brings the hotter of shards 0 and 1 (3
// environments each) into device memory and nothing moves after (a host shard's draws count 0.75 against it); each shard's draws against its items' share (3/8, 3/8,
// 2/8: chi-square, 2 degrees of freedom, tail 1e-4: 18.4) and far off against even shares; Pendulum learned to the
// level of the one-table test.
TEST_CASE("sac_gpu.sharded_replay_placed_learns_pendulum") {
  sac_gpu::shard_settings replay;
  replay.shards = 3;
  replay.every = 50;
  replay.mib = 1.5 * 33333.0 * 9 * 4 / (1024.0 * 1024.0);
  const auto r = sac_gpu::learn_pendulum(8, 6000, replay);
  for (const auto& l : r.log) std::printf("sac_gpu sharded pendulum: %s\n", l.c_str());
  REQUIRE(r.shard_drawn.size() == 3);
  double all = 0, x = 0, x_even = 0;
  for (double d : r.shard_drawn) all += d;
  for (std::size_t k = 0; k < 3; ++k) {
    const double e = all * double(r.shard_envs[k]) / 8.0, even = all / 3.0;
    x += (r.shard_drawn[k] - e) * (r.shard_drawn[k] - e) / e;
    x_even += (r.shard_drawn[k] - even) * (r.shard_drawn[k] - even) / even;
    std::printf("sac_gpu sharded pendulum: shard %zu, %zu envs, %s, %.0f draws (%.4f; items %.4f)\n", k,
                r.shard_envs[k], r.shard_memory[k].c_str(), r.shard_drawn[k], r.shard_drawn[k] / all,
                double(r.shard_envs[k]) / 8.0);
  }
  std::printf("sac_gpu sharded pendulum: random %.1f, trained %.1f after %zu env steps, %zu updates, %.1f s; "
              "placement steps %llu (decided %llu), moves %llu; chi-square %.2f (even shares %.0f)\n",
              r.random_return, r.final_return, r.env_steps, r.updates, r.seconds,
              static_cast<unsigned long long>(r.placement_steps), static_cast<unsigned long long>(r.decided_steps),
              static_cast<unsigned long long>(r.moves), x, x_even);
  CHECK(r.shard_envs == std::vector<std::size_t>{3, 3, 2});
  REQUIRE(r.shard_memory.size() == 3);
  CHECK((r.shard_memory[0] == "device") != (r.shard_memory[1] == "device"));  // the incumbent keeps its place
  CHECK(r.shard_memory[2] == "pinned_host");
  CHECK(r.placement_steps == 15);
  CHECK(r.decided_steps == 13);
  CHECK(r.moves == 1);
  CHECK(all == doctest::Approx(double(r.updates) * 128.0));
  CHECK(x < 18.4);
  CHECK(x_even > 184.0);
  CHECK(r.final_return > -400.0);
  CHECK(r.final_return > r.random_return + 600.0);
}

// Two device learners on one GPU, each its own environments and replay table, gradients averaged through the
// host: after thousands of updates the weights are the same bits on both.
TEST_CASE("sac_gpu.data_parallel_weights_equal") {
  const auto r = sac_gpu::device_learners(2, 4000);
  std::printf("sac_gpu data parallel: %zu updates, weights %s\n", r.updates, r.weights_equal ? "equal" : "DIFFER");
  CHECK(r.updates >= 3000);
  CHECK(r.weights_moved);
  CHECK(r.weights_equal);
}

// K = 2..4 device learners on one GPU with the gradients averaged on the device (comm::hierarchical_allreduce over
// the trainers' sum buffers, no stream wait in an update): every update's two sums take the device path, the weights
// stay the same bits on every learner, and they stay within 1% of the training's own movement of the host-sum
// path's weights after the same updates from the same seeds (the sums may add in another order).
TEST_CASE("sac_gpu.device_sum_matches_host_sum") {
  for (int k = 2; k <= 4; ++k) {
    const auto r = sac_gpu::device_sum_against_host_sum(k, 1024);
    std::printf("sac_gpu device sums, %d learners: %zu updates, %llu device sums (%llu through the host), weights %s, "
                "distance to the host-sum path %.3e (%s)\n",
                k, r.updates, static_cast<unsigned long long>(r.device_sums),
                static_cast<unsigned long long>(r.host_sums_of_device_run), r.weights_equal ? "equal" : "DIFFER",
                r.distance, r.paths_bit_equal ? "bit-equal" : "not bit-equal");
    CHECK(r.updates >= 400);
    CHECK(r.device_sums == 2 * r.updates);
    CHECK(r.host_sums_of_device_run == 0);
    CHECK(r.weights_equal);
    CHECK(r.distance < 1e-2);
  }
}

// The device path over thousands of updates: the weights still the same bits on every learner.
TEST_CASE("sac_gpu.device_sum_weights_equal") {
  const auto r = sac_gpu::device_learners(3, 4000, true);
  std::printf("sac_gpu device sums, 3 learners: %zu updates, weights %s\n", r.updates,
              r.weights_equal ? "equal" : "DIFFER");
  CHECK(r.updates >= 3000);
  CHECK(r.device_sums == 2 * r.updates);
  CHECK(r.weights_moved);
  CHECK(r.weights_equal);
}

// Global sampling over 2 device learners on one GPU whose tables differ (up to 100000 and 2000 transitions; 6000 and
// 2000 at the end): each update's 2 x 128 draws split by the tables' items (chi-square of both learners' draws
// against their expected draws, 1 degree of freedom, tail 1e-4: 15.1), far off against even shares; every update's
// draws add up to 256; the weights the same bits on both after thousands of updates (the device sums); Pendulum's
// deterministic return above -400 after 6000 env steps a learner, as in sac_gpu.learns_pendulum.
TEST_CASE("sac_gpu.global_sampling_two_learners") {
  const auto r = sac_gpu::global_learners(6000);
  double x = 0, even = 0;
  const double total = r.drawn[0] + r.drawn[1];
  for (std::size_t k = 0; k < 2; ++k) {
    x += (r.drawn[k] - r.expected[k]) * (r.drawn[k] - r.expected[k]) / r.expected[k];
    even += (r.drawn[k] - total / 2) * (r.drawn[k] - total / 2) / (total / 2);
    std::printf("sac_gpu global sampling: learner %zu, table %zu, draws %.0f (expected %.1f, share %.4f), %llu "
                "updates without draws\n", k, r.tables[k], r.drawn[k], r.expected[k], r.drawn[k] / total,
                static_cast<unsigned long long>(r.empty[k]));
  }
  std::printf("sac_gpu global sampling: %zu updates, %llu device sums, weights %s, chi-square %.2f (even shares "
              "%.0f), trained %.1f after %.1f s\n",
              r.updates, static_cast<unsigned long long>(r.device_sums), r.weights_equal ? "equal" : "DIFFER", x, even,
              r.final_return, r.seconds);
  CHECK(r.tables[0] == 6000);
  CHECK(r.tables[1] == 2000);
  CHECK(r.updates >= 4000);
  CHECK(r.global_updates[0] == r.updates);
  CHECK(r.global_updates[1] == r.updates);
  CHECK(total == doctest::Approx(double(r.updates) * 256.0));
  CHECK(r.device_sums == 2 * r.updates);
  CHECK(x < 15.1);
  CHECK(even > 151.0);
  CHECK(r.weights_moved);
  CHECK(r.weights_equal);
  CHECK(r.final_return > -400.0);
}

// Global sampling's weighting on the device: a plan that gives learner 0 every one of the 2 x 128 draws (seeded as a
// lone learner's) and learner 1 none gives, after thousands of updates, the weights of a lone learner of batch 256,
// bit for bit (x 256 / 128, a sum with learner 1's zeros and / 2 are exact); learner 1 took the no-draw path every
// update and the weights are the same bits on both.
TEST_CASE("sac_gpu.global_sampling_weighting_matches_lone_learner") {
  const auto r = sac_gpu::global_against_lone(3000);
  std::printf("sac_gpu global sampling weighting: %zu updates (lone %zu), learner 1 without draws in %llu, weights %s, "
              "%s the lone learner's\n",
              r.updates, r.lone_updates, static_cast<unsigned long long>(r.empty_updates_second),
              r.weights_equal ? "equal" : "DIFFER", r.equals_lone ? "equal to" : "DIFFERENT from");
  CHECK(r.updates >= 2000);
  CHECK(r.updates == r.lone_updates);
  CHECK(r.empty_updates_second == r.updates);
  CHECK(r.device_sums == 2 * r.updates);
  CHECK(r.weights_moved);
  CHECK(r.weights_equal);
  CHECK(r.equals_lone);
}

// Split roles on GPU GMIs: an actor's transitions land in the learner's device table row for row; then 3 thread
// GMIs, GMI 0 learning from the 2 actors' transitions on its device table: every transition it holds came from
// the actors (it steps no environment), it made the gradient steps due, the actors none.
TEST_CASE("sac_gpu.split_roles_on_gpu") {
  const auto r = sac_gpu::split_on_gpu(3, 2048);
  std::printf("sac_gpu split roles: %zu of %zu rows found; learner %zu env steps, %zu updates, table %zu; actors "
              "%zu env steps\n",
              r.rows_found, r.rows_sent, r.learner_env_steps, r.learner_updates, r.learner_table_after,
              r.actor_env_steps);
  CHECK(r.rows_found == r.rows_sent);
  CHECK(r.learner_table == 36);
  CHECK(r.single_insert_updates == 0);
  CHECK(r.learner_env_steps >= 2048);
  CHECK(r.learner_table_after == r.learner_env_steps);
  CHECK(r.actor_env_steps >= r.learner_env_steps);  // the round in flight at the end is read but not inserted
  CHECK(r.actor_env_steps <= r.learner_env_steps + 2 * 8 * 8);
  CHECK(r.learner_updates >= r.learner_env_steps - 512 - 2 * 8 * 8);
  CHECK(r.actor_updates == 0);
  CHECK(r.weights_moved);
}

// One update captured as a CUDA graph and replayed: the same bits as launching its kernels, after thousands of
// updates (the replay draw and the noise keyed by the device's update count, the loss sums in a fixed order: no
// float atomics); every update after the first replays. A second launched run from the same seed: the same bits.
TEST_CASE("sac_gpu.graph_update_matches_launches") {
  const auto r = sac_gpu::graph_against_launches(3000, 500);
  std::printf("sac_gpu graph update: %zu updates (graph run %zu, %llu replayed); actor %s, critics %s, losses %s; "
              "launched twice %s; updates/s launched %.0f, graph %.0f\n",
              r.updates, r.updates_graph, static_cast<unsigned long long>(r.graph_updates),
              r.actor_equal ? "equal" : "DIFFER", r.critics_equal ? "equal" : "DIFFER",
              r.stats_equal ? "equal" : "DIFFER", r.launched_repeat_equal ? "equal" : "DIFFER",
              r.updates_per_s_launched, r.updates_per_s_graph);
  CHECK(r.updates >= 2000);
  CHECK(r.updates_graph == r.updates);
  CHECK(r.graph_updates == r.updates - 1);
  CHECK(r.graph_updates_of_launched == 0);
  CHECK(r.weights_moved);
  CHECK(r.actor_equal);
  CHECK(r.critics_equal);
  CHECK(r.stats_equal);
  CHECK(r.launched_repeat_equal);
}

// 3-step returns folded on the device (the ring and the fold kernel) hold what the one-step table of the same
// collection folds to, episodes cut at their time limit; 2 vector steps held back.
TEST_CASE("sac_gpu.nstep_table_holds_folded_transitions") {
  const auto r = sac_gpu::device_nstep_against_one_step();
  std::printf("sac_gpu n-step: %zu and %zu transitions stored, %zu compared (%zu cut), worst difference %.2e\n",
              r.inserted_one, r.inserted_three, r.compared, r.cut, r.worst);
  CHECK(r.inserted_one == 14);
  CHECK(r.inserted_three == 10);
  CHECK(r.env_steps_three == 14);
  CHECK(r.compared == 10);
  CHECK(r.cut > 0);
  CHECK(r.worst < 1e-5);
}

// Synchronous data-parallel PPO on one GPU: 4 CUDA trainers in 4 threads, each on its own stream, joined through
// their device gradient buffers, stay bit-identical replicas; the controls show the check can fail; a sync of
// world 1 (eager iterations) gives the plain trainer's (graph-replayed) numbers.
#include <doctest/doctest.h>

#include "sync_runs.hpp"

TEST_SUITE("gpu") {
  TEST_CASE("rl_gpu.ppo_sync.four_replicas_stay_identical" * doctest::timeout(300)) {
    const auto runs = run_gpu_group({});
    for (std::size_t it = 0; it < runs[0].size(); ++it) {
      CAPTURE(it);
      for (std::size_t r = 1; r < runs.size(); ++r) {
        CAPTURE(r);
        CHECK(runs[r][it].obs_head != runs[0][it].obs_head);  // each replica learns from its own environments
        CHECK(runs[r][it].params == runs[0][it].params);
        CHECK(runs[r][it].obs_stats == runs[0][it].obs_stats);
        CHECK(runs[r][it].value_stats == runs[0][it].value_stats);
        CHECK(runs[r][it].lr == runs[0][it].lr);
        CHECK(runs[r][it].approx_kl == runs[0][it].approx_kl);
      }
    }
    CHECK(runs[0].front().params != runs[0].back().params);
  }

  TEST_CASE("rl_gpu.ppo_sync.replicas_drift_without_the_gradient_sum" * doctest::timeout(300)) {
    gpu_group_options o;
    o.iterations = 1;
    o.mode = gpu_sync_mode::no_gradient_sum;
    const auto joined = run_gpu_group(o);
    CHECK(joined[1][0].params != joined[0][0].params);
    o.mode = gpu_sync_mode::none;
    const auto apart = run_gpu_group(o);
    CHECK(apart[1][0].params != apart[0][0].params);
  }

  TEST_CASE("rl_gpu.ppo_sync.world_of_one_is_the_plain_trainer" * doctest::timeout(300)) {
    gpu_group_options o;
    o.world = 1;
    o.same_seed = true;
    const auto synced = run_gpu_group(o);
    const auto plain = run_gpu_plain(o.envs, 7, o.iterations, true);
    for (std::size_t it = 0; it < plain.size(); ++it) {
      CAPTURE(it);
      CHECK(synced[0][it].params == plain[it].params);
      CHECK(synced[0][it].obs_stats == plain[it].obs_stats);
      CHECK(synced[0][it].value_stats == plain[it].value_stats);
      CHECK(synced[0][it].lr == plain[it].lr);
    }
  }

  // A replayable sum: the update is captured once and replayed (replayed() told the sums it holds each time); the
  // weights stay those of the plain trainer (which replays its whole iteration) and of the eager synced one.
  TEST_CASE("rl_gpu.ppo_sync.replayed_update_is_the_plain_trainer" * doctest::timeout(300)) {
    gpu_group_options o;
    o.world = 1;
    o.same_seed = true;
    o.iterations = 5;
    std::vector<std::size_t> replays;
    o.replays = &replays;
    o.mode = gpu_sync_mode::replayed_alone;
    const auto replayed = run_gpu_group(o);
    const auto plain = run_gpu_plain(o.envs, 7, o.iterations, true);
    o.mode = gpu_sync_mode::full;
    const auto eager = run_gpu_group(o);
    for (std::size_t it = 0; it < plain.size(); ++it) {
      CAPTURE(it);
      CHECK(replayed[0][it].params == plain[it].params);
      CHECK(replayed[0][it].params == eager[0][it].params);
      CHECK(replayed[0][it].obs_stats == plain[it].obs_stats);
      CHECK(replayed[0][it].value_stats == plain[it].value_stats);
    }
    // the first iteration runs eagerly; each later one replays 4 epochs x 4 minibatches (256 envs x 16 steps = 4096
    // samples, minibatch 1024)
    REQUIRE(replays.size() == static_cast<std::size_t>(o.iterations - 1));
    for (std::size_t calls : replays) CHECK(calls == 16);
    CHECK(replayed[0].back().params != replayed[0].front().params);
  }

  // Identical rollouts: the group's mean gradient is each one's gradient (advantage normalization off, since its
  // unbiased std over 2n samples differs from the one over n).
  TEST_CASE("rl_gpu.ppo_sync.two_equal_replicas_train_as_one" * doctest::timeout(300)) {
    gpu_group_options o;
    o.world = 2;
    o.same_seed = true;
    o.normalize_advantage = false;
    const auto pair = run_gpu_group(o);
    const auto plain = run_gpu_plain(o.envs, 7, o.iterations, false);
    for (std::size_t it = 0; it < plain.size(); ++it) {
      CAPTURE(it);
      CHECK(pair[0][it].params == plain[it].params);
      CHECK(pair[1][it].params == plain[it].params);
      CHECK(pair[0][it].lr == plain[it].lr);
    }
  }

  // gmi::run's 8 GMIs x 512 envs (group minibatch 8192) did not learn on an H100 (mean return 11.9 after 30 M
  // steps, bench/results/runs/2026-11-21-h100-sync-ppo-handshakes.jsonl) while the same group of host trainers
  // solves Cartpole in 45 iterations: this case tells whether the CUDA trainer's sync or gmi::run's wiring is at
  // fault (it has not run on a GPU yet).
  TEST_CASE("rl_gpu.ppo_sync.eight_replicas_solve_cartpole" * doctest::timeout(300)) {
    const double one = run_gpu_group_learning(1, 4096, 8192, 200);
    const double eight = run_gpu_group_learning(8, 512, 8192, 200);
    MESSAGE("best mean return within 200 iterations: 1 x 4096 envs " << one << ", 8 synced x 512 envs " << eight);
    CHECK(one >= 450);
    CHECK(eight >= 450);
  }
}

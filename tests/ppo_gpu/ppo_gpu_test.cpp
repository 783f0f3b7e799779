#include <doctest/doctest.h>

#include <vector>

#include "runs.hpp"

#include "rel_diff.hpp"

using gmi_test::rel_diff;

TEST_SUITE("gpu") {
  // One iteration from the same seed: the same environments, the same policy draws; host and GPU differ only by
  // float rounding (FMA contraction, expf/logf), so values, rewards and updated weights agree closely.
  TEST_CASE("ppo_gpu.one_iteration_matches_host" * doctest::timeout(120)) {
    const auto gpu = run_cartpole_ppo(true, 256, 5, 1, 1024, 2, false);
    const auto host = run_cartpole_ppo(false, 256, 5, 1, 1024, 2, false);
    REQUIRE(gpu.params.size() == host.params.size());
    CHECK(rel_diff(gpu.first_values, host.first_values) < 1e-4);
    CHECK(rel_diff(gpu.first_rewards, host.first_rewards) < 1e-4);
    CHECK(rel_diff(gpu.params, host.params) < 1e-4);
    CHECK(gpu.policy_loss == doctest::Approx(host.policy_loss).epsilon(1e-2).scale(1e-3));
    CHECK(gpu.value_loss == doctest::Approx(host.value_loss).epsilon(1e-3));
  }

  TEST_CASE("ppo_gpu.graph_replay_runs_many_iterations_reproducibly" * doctest::timeout(120)) {
    const auto a = run_cartpole_ppo(true, 512, 9, 12, 8192, 8, false);
    const auto b = run_cartpole_ppo(true, 512, 9, 12, 8192, 8, false);
    CHECK(a.params == b.params);  // fixed-order reductions: bit-identical runs
    CHECK(std::isfinite(a.value_loss));
  }

  TEST_CASE("ppo_gpu.resume_continues_the_same_curve" * doctest::timeout(120)) { CHECK(gpu_resume_matches_straight_run()); }

  // The linear schedule's kernel runs inside the replayed graph: every iteration's lr is the host rule's, down to
  // the floor, and a resumed trainer continues from the saved iteration count.
  TEST_CASE("ppo_gpu.linear_lr_schedule_in_the_graph" * doctest::timeout(120)) {
    const auto r = gpu_linear_lr_run(10);
    CHECK(r.lrs == r.want);
    CHECK(r.want.front() > r.want[5]);
    CHECK(r.want.back() == r.want[8]);
    CHECK(r.resumed_lrs == std::vector<float>(r.want.begin() + 5, r.want.end()));
  }

  TEST_CASE("ppo_gpu.solves_cartpole" * doctest::timeout(300)) {
    const auto r = run_cartpole_ppo(true, 512, 1, 400, 8192, 8, true);
    MESSAGE("GPU PPO: best mean return " << r.best_return << " after " << r.iterations << " iterations");
    CHECK(r.best_return >= 450);
  }
}

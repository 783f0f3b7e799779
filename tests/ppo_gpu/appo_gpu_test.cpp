#include <doctest/doctest.h>

#include "appo_runs.hpp"

#include "rel_diff.hpp"

using gmi_test::rel_diff;

TEST_SUITE("gpu") {
  // One update from the same seeds: the same environments and policy draws on host and GPU, so the rollouts and
  // the updated weights agree up to float rounding.
  TEST_CASE("appo_gpu.one_update_matches_host" * doctest::timeout(120)) {
    const auto gpu = run_cartpole_appo(true, 0, 1, false);
    const auto host = run_cartpole_appo(false, 0, 1, false);
    REQUIRE(gpu.params.size() == host.params.size());
    CHECK(rel_diff(gpu.first_rewards, host.first_rewards) < 1e-4);
    CHECK(rel_diff(gpu.params, host.params) < 1e-4);
  }

  // From the second update on the learner replays one captured graph: the same kernels in the same order, so
  // the weights after several updates are bit-identical to updates enqueued kernel by kernel.
  TEST_CASE("appo_gpu.replayed_updates_match_eager_updates" * doctest::timeout(120)) {
    const auto replayed = run_cartpole_appo(true, 1, 6, false, true);
    const auto eager = run_cartpole_appo(true, 1, 6, false, false);
    CHECK(replayed.replayed_updates == 5);
    CHECK(eager.replayed_updates == 0);
    REQUIRE(replayed.params.size() == eager.params.size());
    CHECK(replayed.params == eager.params);
  }

  TEST_CASE("appo_gpu.lagged_actors_solve_cartpole" * doctest::timeout(300)) {
    const auto r = run_cartpole_appo(true, 3, 300, true);
    MESSAGE("GPU APPO, lag 3: best mean return " << r.best_return << " after " << r.updates
                                                  << " updates, max mean |log ratio| " << r.max_abs_log_ratio);
    CHECK(r.max_abs_log_ratio > 1e-3);
    CHECK(r.best_return >= 450);
  }
}

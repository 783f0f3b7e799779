#include <doctest/doctest.h>

#include <string>

#include "reward_scaling_runs.hpp"
#include "rel_diff.hpp"

using gmi_test::rel_diff;

TEST_SUITE("gpu") {
  // Reward scaling on the GPU against host threads, both collection paths: after one iteration (std 1: the raw
  // rewards, clamped; no update, the weights the initial ones) and after three (rewards divided by the std of two
  // rollouts' R, two updates, the graph replayed) the rollout's rewards, every environment's R, the std's
  // statistics and the weights agree.
  TEST_CASE("ppo_gpu.reward_scaling.matches_host" * doctest::timeout(240)) {
    for (int iterations : {1, 3}) {
      const auto host = reward_scaling_iterations("", iterations);
      REQUIRE(host.stats.size() == 3);
      CHECK(host.stats[0] == double(iterations) * 256 * 16);
      for (const char* collection : {"threads", "batched"}) {
        CAPTURE(iterations);
        CAPTURE(collection);
        const auto gpu = reward_scaling_iterations(collection, iterations);
        CHECK(gpu.collection == collection);
        REQUIRE(gpu.rewards.size() == host.rewards.size());
        REQUIRE(gpu.running.size() == host.running.size());
        CHECK(rel_diff(gpu.rewards, host.rewards) < (iterations == 1 ? 1e-5 : 1e-3));
        CHECK(rel_diff(gpu.running, host.running) < (iterations == 1 ? 1e-5 : 1e-3));
        CHECK(gpu.stats[0] == host.stats[0]);
        CHECK(gpu.stats[1] == doctest::Approx(host.stats[1]).epsilon(1e-3));
        CHECK(gpu.stats[2] == doctest::Approx(host.stats[2]).epsilon(1e-3));
        CHECK(rel_diff(gpu.params, host.params) < (iterations == 1 ? 1e-4 : 1e-3));
      }
    }
  }
}

// The batched rollout (rl/batched_rollout.cuh) against the thread-per-env collection from the same seeds and
// weights: actions, log-probabilities, values, rewards (truncation bootstraps included), ends, advantages and
// observations agree within each precision's tolerance; the policy stream advances the same; the batched
// server's captured window equals its eager steps.
#include <doctest/doctest.h>

#include "batched_runs.hpp"

namespace {
void check(const batched_compare& r, double tol) {
  INFO("path " << r.path << " actions " << r.actions << " log_probs " << r.log_probs << " values " << r.values
               << " rewards " << r.rewards << " advantages " << r.advantages << " obs " << r.obs << " ends "
               << r.ends << " ends_differ " << r.ends_differ);
  CHECK(r.actions < tol);
  CHECK(r.log_probs < tol);
  CHECK(r.values < tol);
  CHECK(r.rewards < tol);
  CHECK(r.advantages < 10 * tol);
  CHECK(r.obs < tol);
  CHECK(r.ends_differ == 0);
  CHECK(r.blocks_differ == 0);
}
}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("rl_gpu.batched_rollout.linear_proxy_matches_thread_per_env" * doctest::timeout(120)) {
    // max_steps 5 in a 12-step rollout: every env truncates twice, so the bootstrap forward is exercised.
    const auto r = compare_batched_collection("ant", "fp32", 512, 12, 5);
    CHECK(r.path == "lt_fp32+gemm_substeps");
    CHECK(r.ends > 0);
    check(r, 1e-4);
  }
  TEST_CASE("rl_gpu.batched_rollout.linear_proxy_tf32_close" * doctest::timeout(120)) {
    const auto r = compare_batched_collection("ant", "tf32", 512, 8, 1000);
    CHECK(r.path == "lt_tf32+gemm_substeps");
    check(r, 3e-2);
  }
  TEST_CASE("rl_gpu.batched_rollout.thread_step_env_matches" * doctest::timeout(120)) {
    // Cartpole: the env step stays one thread per env; episodes end by falling within 64 steps.
    const auto r = compare_batched_collection("cartpole", "fp32", 256, 64, 500);
    CHECK(r.path == "lt_fp32+thread_per_env");
    CHECK(r.ends > 0);
    check(r, 1e-3);
  }
  TEST_CASE("rl_gpu.batched_server.graph_replay_equals_eager" * doctest::timeout(120)) {
    CHECK(batched_server_graph_vs_eager(1024, 10) == 0.0);
  }
}

#include <doctest/doctest.h>

#include <cmath>
#include <initializer_list>
#include <string>
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

  // Every way of forming the minibatch gradient gives the host's update, to float rounding: the warp kernel and
  // the tile kernel on Cartpole's narrow network, the tile kernel and one thread per sample on a 23-64-64 network
  // (weights in shared memory) and on the anchor's 60-256-128-64-8 Ant network (weights from global memory).
  TEST_CASE("ppo_gpu.gradient_paths_match_host" * doctest::timeout(120)) {
    // each path of `paths` against the host trainer, for one network's run function
    auto against_host = [](gradient_path_run (*run)(const std::string&), std::initializer_list<const char*> paths) {
      const auto host = run("");
      for (const char* path : paths) {
        const auto gpu = run(path);
        CAPTURE(path);
        REQUIRE(gpu.refusal.empty());
        CHECK(gpu.path == path);
        CHECK(rel_diff(gpu.params, host.params) < 1e-4);
        CHECK(gpu.value_loss == doctest::Approx(host.value_loss).epsilon(1e-3));
      }
    };
    against_host(cartpole_iteration, {"warps", "tiles", "threads"});
    against_host(wide_proxy_iteration, {"tiles", "threads"});
    // the tile kernel reading weights from global memory; gemm: cuBLASLt products in fp32 (the default there)
    against_host(isaac_ant_iteration, {"tiles", "threads", "gemm"});
    against_host(wide_proxy_iteration, {"gemm"});
    // gemm sums the log_std gradients and loss terms by a fixed tree and the bias gradients by products or fixed
    // column sums: the same bits on a second run
    CHECK(isaac_ant_iteration("gemm").params == isaac_ant_iteration("gemm").params);
    // the warp kernel is refused for the wide network with one line (runs.cu asserts its default is the tiles)
    const auto refused = wide_proxy_iteration("warps");
    CAPTURE(refused.refusal);
    CHECK(refused.refusal.find("--ppo-gradient: got \"warps\", need tiles, threads, gemm or nothing (the default, tiles) "
                               "for this network") != std::string::npos);
  }

  // The wide Ant network's training with the own layer kernels (network_config::kernels mma: forward and input
  // gradients as fused tensor-core products) against the cuBLASLt products, same precision, seed and data, three
  // iterations (the second and third replay the captured graph): the parameters stay within the precision's
  // rounding of each other, and the replays run at all. The rollouts themselves differ by that rounding too.
  TEST_CASE("ppo_gpu.mma_kernels_match_cublaslt" * doctest::timeout(120)) {
    for (const char* p : {"tf32", "bf16"}) {
      CAPTURE(p);
      const auto lt = isaac_ant_kernels_run(p, "cublaslt", 3);
      const auto mma = isaac_ant_kernels_run(p, "mma", 3);
      CHECK(lt.path == std::string("lt_") + p);
      CHECK(mma.path == std::string("mma_") + p);
      const double d = rel_diff(mma.params, lt.params), tol = std::string(p) == "tf32" ? 5e-3 : 2e-2;
      MESSAGE("PPO Ant " << p << ", 3 iterations: mma vs cublaslt parameters differ by " << d << " (relative, tolerance "
                         << tol << "); value loss " << mma.value_loss << " vs " << lt.value_loss);
      CHECK(d < tol);
      CHECK(std::isfinite(mma.value_loss));
      CHECK(mma.value_loss == doctest::Approx(lt.value_loss).epsilon(0.05));
      // the same bits when run again (fixed sums, no atomics in the products)
      CHECK(isaac_ant_kernels_run(p, "mma", 3).params == mma.params);
    }
  }

  TEST_CASE("ppo_gpu.solves_cartpole" * doctest::timeout(300)) {
    const auto r = run_cartpole_ppo(true, 512, 1, 400, 8192, 8, true);
    MESSAGE("GPU PPO: best mean return " << r.best_return << " after " << r.iterations << " iterations");
    CHECK(r.best_return >= 450);
  }
}

// The whole-network kernel (nn/wholenet.cuh, network_config::kernels wholenet) in the RL paths: serving (normalize,
// forward, sampling, the linear proxy's pre-step and U B_sub^T in one kernel) against the cuBLASLt layers at the same
// precision, and its captured window against the same steps run eagerly; PPO training on the Ant network
// (collection's forwards, and the minibatch's gather, forward and loss in one kernel) against cuBLASLt; the default
// kernels (rl/wide_rule.hpp) reaching serving and training.
#include <doctest/doctest.h>

#include <cmath>
#include <exception>
#include <string>

#include "rel_diff.hpp"
#include "runs.hpp"
#include "wholenet_runs.hpp"

using gmi_test::rel_diff;

TEST_SUITE("gpu") {
  // One step from the same seeds: the same noise draws, the means differ by the precision's rounding.
  TEST_CASE("ppo_gpu.wholenet_serving_matches_cublaslt" * doctest::timeout(120)) {
    for (const char* p : {"tf32", "bf16"}) {
      CAPTURE(p);
      for (const int envs : {1, 77, 4100}) {
        const auto lt = ppo_gpu::ant_serving_run(p, "cublaslt", envs, 0, false);
        const auto wn = ppo_gpu::ant_serving_run(p, "wholenet", envs, 0, false);
        CHECK(wn.path.rfind(std::string("whole_") + p, 0) == 0);
        const double da = rel_diff(wn.actions, lt.actions), dl = rel_diff(wn.log_probs, lt.log_probs);
        const double tol = std::string(p) == "tf32" ? 5e-3 : 5e-2;
        MESSAGE("serving Ant " << p << " " << envs << " envs, one step: wholenet vs cublaslt actions differ by " << da
                               << ", log-probs by " << dl << " (relative, tolerance " << tol << ")");
        CHECK(da < tol);
        CHECK(dl < tol);
        // wholenet's kernel also ran the linear proxy's pre-step (reward, the action's columns) and U B_sub^T: the
        // step's rewards and next observations as with the separate kernel and product, within the same rounding.
        const double dr = rel_diff(wn.rewards, lt.rewards), dobs = rel_diff(wn.obs, lt.obs);
        MESSAGE("  rewards differ by " << dr << ", next observations by " << dobs);
        CHECK(dr < tol);
        CHECK(dobs < tol);
      }
      // A captured window (weights packed once) gives the eager steps' bits.
      const auto eager = ppo_gpu::ant_serving_run(p, "wholenet", 300, 6, false);
      const auto graph = ppo_gpu::ant_serving_run(p, "wholenet", 300, 6, true);
      CHECK(graph.actions == eager.actions);
      CHECK(graph.log_probs == eager.log_probs);
      CHECK(graph.obs == eager.obs);
    }
  }

  TEST_CASE("ppo_gpu.wholenet_training_matches_cublaslt" * doctest::timeout(120)) {
    for (const char* p : {"tf32", "bf16"}) {
      CAPTURE(p);
      const auto lt = isaac_ant_kernels_run(p, "cublaslt", 3);
      const auto wn = isaac_ant_kernels_run(p, "wholenet", 3);
      CHECK(wn.path == std::string("whole_") + p);
      const double d = rel_diff(wn.params, lt.params), tol = std::string(p) == "tf32" ? 5e-3 : 2e-2;
      MESSAGE("PPO Ant " << p << ", 3 iterations: wholenet vs cublaslt parameters differ by " << d
                         << " (relative, tolerance " << tol << "); value loss " << wn.value_loss << " vs "
                         << lt.value_loss);
      CHECK(d < tol);
      CHECK(std::isfinite(wn.value_loss));
      CHECK(wn.value_loss == doctest::Approx(lt.value_loss).epsilon(0.05));
      CHECK(isaac_ant_kernels_run(p, "wholenet", 3).params == wn.params);
    }
  }

  // The backward's input-gradient chain as one kernel (network_config::backward wholenet) in PPO on the Ant
  // network, with the cuBLASLt and the whole-network forward: parameters after three iterations (graph replays
  // included) within the precision's tolerance of the cuBLASLt backward's, the same bits on a rerun; and fp32
  // refuses it in one line.
  TEST_CASE("ppo_gpu.wholenet_backward_matches_cublaslt" * doctest::timeout(120)) {
    for (const char* p : {"tf32", "bf16"})
      for (const char* k : {"cublaslt", "wholenet"}) {
        CAPTURE(p);
        CAPTURE(k);
        const auto lt = isaac_ant_kernels_run(p, k, 3, "cublaslt");
        const auto wb = isaac_ant_kernels_run(p, k, 3, "wholenet");
        CHECK(lt.backward_path == std::string("lt_") + p);
        CHECK(wb.backward_path == std::string("whole_") + p);
        const double d = rel_diff(wb.params, lt.params), tol = std::string(p) == "tf32" ? 5e-3 : 2e-2;
        MESSAGE("PPO Ant " << p << ", forward " << k << ", 3 iterations: wholenet vs cublaslt backward, parameters "
                           << "differ by " << d << " (relative, tolerance " << tol << "); value loss "
                           << wb.value_loss << " vs " << lt.value_loss);
        CHECK(d < tol);
        CHECK(std::isfinite(wb.value_loss));
        CHECK(wb.value_loss == doctest::Approx(lt.value_loss).epsilon(0.05));
        CHECK(isaac_ant_kernels_run(p, k, 3, "wholenet").params == wb.params);
      }
    std::string refusal;
    try {
      (void)isaac_ant_kernels_run("fp32", "cublaslt", 1, "wholenet");
    } catch (const std::exception& e) {
      refusal = e.what();
    }
    MESSAGE("fp32 with the backward wholenet: " << refusal);
    CHECK(refusal.find("network backward wholenet: precision") != std::string::npos);
  }

  // The default kernels ("auto", rl/wide_rule.hpp) reach the tiers: serving the Ant network takes wholenet at
  // both precisions (the same bits as asking for it), ShadowHand at TF32 over 16384 envs cuBLASLt; PPO on the Ant
  // network trains with wholenet at TF32 and cuBLASLt at bf16 (the same parameters as asking for each).
  TEST_CASE("ppo_gpu.wholenet_default_follows_rule" * doctest::timeout(120)) {
    for (const char* p : {"tf32", "bf16"}) {
      CAPTURE(p);
      const auto chosen = ppo_gpu::ant_serving_run(p, "auto", 4100, 2, false);
      const auto wn = ppo_gpu::ant_serving_run(p, "wholenet", 4100, 2, false);
      CHECK(chosen.path.rfind(std::string("whole_") + p, 0) == 0);
      CHECK(chosen.actions == wn.actions);
      const auto trained = isaac_ant_kernels_run(p, "auto", 2);
      const auto asked = isaac_ant_kernels_run(p, std::string(p) == "tf32" ? "wholenet" : "cublaslt", 2);
      CHECK(trained.params == asked.params);
    }
    CHECK(ppo_gpu::ant_serving_run("fp32", "auto", 77, 0, false).path.rfind("lt_fp32", 0) == 0);
    CHECK(ppo_gpu::shadow_hand_serving_path("tf32", "auto", 16384).rfind("lt_tf32", 0) == 0);
    CHECK(ppo_gpu::shadow_hand_serving_path("tf32", "auto", 4096).rfind("whole_tf32", 0) == 0);
    CHECK(ppo_gpu::shadow_hand_serving_path("bf16", "auto", 16384).rfind("whole_bf16", 0) == 0);
  }
}

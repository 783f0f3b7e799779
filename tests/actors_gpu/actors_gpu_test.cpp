// PPO with the environments on CPU actors and the policy and update on the GPU (actors/ppo_actors_gpu.cuh).
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <vector>

#include "gpu_runs.hpp"

namespace {
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / (den + 1e-30));
}
}  // namespace

TEST_SUITE("gpu") {
  // The same rollout and update as the host trainer on the actors (same streams): the environments step on the
  // host in both, so only the policy's float rounding differs (FMA contraction, expf/logf on the device).
  TEST_CASE("actors_gpu.ppo.matches_host_trainer_on_actors" * doctest::timeout(120)) {
    for (int cores : {1, 2}) {
      CAPTURE(cores);
      const auto r = cartpole_on_actors_both_ways(cores, 1);
      REQUIRE(r.gpu_params.size() == r.host_params.size());
      CHECK(r.gpu_episodes == r.host_episodes);
      CHECK(rel_diff(r.gpu_returns, r.host_returns) < 1e-4);
      CHECK(rel_diff(r.gpu_params, r.host_params) < 1e-4);
      CHECK(r.gpu_value_loss == doctest::Approx(r.host_value_loss).epsilon(1e-3));
      CHECK(r.gpu_params != std::vector<float>(r.gpu_params.size(), 0.0f));
    }
  }

  // With the trainer's stream held shut, the driver hands both groups' first step to the GPU and no actor sees
  // actions: the hand-off counters are the only waits, nothing synchronizes with the stream per step.
  TEST_CASE("actors_gpu.ppo.hands_off_without_waiting_on_the_stream" * doctest::timeout(120)) {
    const auto r = submit_without_waiting(2);
    CAPTURE(r.error);
    REQUIRE(r.pinned);
    CHECK(r.both_groups_submitted);
    CHECK_FALSE(r.actions_before_open);
    CHECK(r.stream_busy_while_held);
    CHECK(r.finished);
    CHECK(r.iterations == 2);
  }

  TEST_CASE("actors_gpu.ppo.learns_cartpole" * doctest::timeout(300)) {
    const auto r = cartpole_learns_on_actors(4, 400, 450);
    MESSAGE("GPU PPO on CPU actors: best mean return " << r.best_return << " after " << r.iterations
                                                       << " iterations, " << r.seconds << " s, "
                                                       << double(r.env_steps) / r.seconds << " env steps/s");
    CHECK(r.best_return >= 450);
  }

  TEST_CASE("actors_gpu.ppo.mujoco_ant_v4_trains" * doctest::timeout(120)) {
    const auto r = mujoco_ant_v4_on_actors(2, 3);
    if (!r.available) {
      MESSAGE("[gmi] SKIPPED: built without MuJoCo (libmujoco-dev)");
      return;
    }
    CAPTURE(r.error);
    REQUIRE(r.error.empty());
    CHECK(r.iterations == 3);
    CHECK(std::isfinite(r.value_loss));
    CHECK(r.value_loss > 0);
  }

  // MuJoCo state in checkpoints with the GPU trainer: 6 iterations straight equal 3, a save, a fresh engine resumed
  // from the file and 3 more (weights and every environment's MuJoCo state bit for bit); the trainer alone differs.
  TEST_CASE("actors_gpu.ppo.mujoco_ant_v4_resume_is_exact" * doctest::timeout(120)) {
    const auto r = mujoco_ant_v4_resume_on_gpu(2, 6);
    if (!r.available) {
      MESSAGE("[gmi] SKIPPED: built without MuJoCo (libmujoco-dev)");
      return;
    }
    CAPTURE(r.error);
    REQUIRE(r.error.empty());
    CHECK(r.episodes > 0);
    CHECK(r.weights_equal);
    CHECK(r.env_states_equal);
    CHECK(r.trainer_only_differs);
  }

  // --autotune's metric: both sides timed (positive, finite), the choice the faster side at threshold 1 and each
  // side when the threshold forces it.
  TEST_CASE("actors_gpu.placement.profiles_both_sides" * doctest::timeout(60)) {
    const auto r = cartpole_placement(4096);
    CAPTURE(r.error);
    REQUIRE(r.error.empty());
    CHECK(r.cpu_seconds_per_step > 0);
    CHECK(r.gpu_seconds_per_batch_step > 0);
    CHECK(r.cpu_cores >= 1);
    const double cpu = r.cpu_cores / r.cpu_seconds_per_step, gpu = 4096 / r.gpu_seconds_per_batch_step;
    MESSAGE("cartpole at 4096 envs: CPU actors " << cpu << " steps/s on " << r.cpu_cores << " cores, GPU " << gpu);
    CHECK(r.chosen == (gpu >= cpu ? "gpu" : "cpu"));
    CHECK(r.chosen_with_high_threshold == "cpu");
    CHECK(r.chosen_with_low_threshold == "gpu");
  }

  // Two GMIs on one GPU, each on its own actor cores, as one synchronous group through the pipeline's
  // communicator: both reach the step limit together with identical weights (exit code 0; 1 when they differ).
  TEST_CASE("actors_gpu.gmis.two_gmis_on_their_own_cores_stay_equal" * doctest::timeout(240)) {
    const auto r = cartpole_gmis_on_actors(2, 2, 10);
    CAPTURE(r.error);
    REQUIRE(r.error.empty());
    CHECK(r.gmis == 2);
    CHECK(r.reason == "step limit");
    CHECK(r.iterations == 10);
    CHECK(r.exit_code == 0);
  }
}

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

#include "discrete_runs.hpp"
#include "rel_diff.hpp"

using gmi_test::rel_diff;

namespace {
// The largest |a - b| over two equally long vectors, and where.
std::string worst(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (d > m) m = d, at = i;
  }
  return std::to_string(m) + " at " + std::to_string(at) + (a.size() == b.size() ? "" : " (sizes differ)");
}
}  // namespace

TEST_SUITE("gpu") {
  // Categorical PPO, GPU against host, on cartpole_discrete (2 actions), grid_walk (5) and pick2..pick5 (2..5): the
  // first rollout draws the same actions (the same streams, logits equal to float rounding) and holds the same
  // arrays, and after one and after three iterations the weights agree on every gradient path (warps, tiles,
  // threads). Three iterations allow a little more: a logit rounded differently can flip a draw that sits on a CDF
  // boundary.
  // One minibatch of the whole first rollout at the initial weights: the gradient rows agree.
  TEST_CASE("ppo_gpu.discrete.first_gradient_matches_host" * doctest::timeout(300)) {
    for (const char* task : {"pick2", "pick3", "pick5", "grid_walk", "pendulum", "point_reach", "quadcopter"}) {
      const auto host = discrete_iterations("", 1, task, true);
      for (const char* path : {"warps", "threads"}) {
        const std::string task_name = task, path_name = path;
        CAPTURE(task_name);
        CAPTURE(path_name);
        const auto gpu = discrete_iterations(path, 1, task, true);
        double gmax = 0;
        for (float g : host.grads) gmax = std::max(gmax, std::fabs(double(g)));
        std::string where;
        std::size_t n = 0;
        for (std::size_t k = 0; k < gpu.grads.size(); ++k) {
          const double d = std::fabs(double(gpu.grads[k]) - double(host.grads[k]));
          if (d > 1e-4 * gmax && n++ < 24)
            where += " " + std::to_string(k) + "(" + std::to_string(gpu.grads[k]) + " vs " +
                     std::to_string(host.grads[k]) + ")";
        }
        std::string stats;
        for (std::size_t k = 0; k < gpu.stats.size() && k < host.stats.size(); ++k)
          stats += " " + std::to_string(gpu.stats[k]) + "/" + std::to_string(host.stats[k]);
        MESSAGE(task_name << " " << path_name << ": max |g| " << gmax << ", " << n << " of " << gpu.grads.size()
                     << " gradients differ by more than 1e-4 of it:" << where << " | params "
                     << worst(gpu.params, host.params) << " | gpu vs its data recomputed on host "
                     << worst(gpu.grads, gpu.recomputed_grads) << " | host vs recomputed "
                     << worst(host.grads, host.recomputed_grads) << " | stats gpu/host" << stats);
        CHECK(n == 0);
      }
    }
  }

  TEST_CASE("ppo_gpu.discrete.matches_host" * doctest::timeout(600)) {
    for (const char* task : {"pick2", "pick3", "pick4", "pick5", "cartpole_discrete", "grid_walk"}) {
      for (int iterations : {1, 3}) {
        const auto host = discrete_iterations("", iterations, task);
        for (const char* path : {"warps", "tiles", "threads"}) {
          const std::string task_name = task, path_name = path;
          CAPTURE(task_name);
          CAPTURE(iterations);
          CAPTURE(path_name);
          const auto gpu = discrete_iterations(path, iterations, task);
          CHECK(gpu.path == path);
          REQUIRE(gpu.params.size() == host.params.size());
          CHECK(gpu.first_actions == host.first_actions);
          CHECK(rel_diff(gpu.first_log_probs, host.first_log_probs) < 1e-5);
          {  // which weights and rollout arrays depart
            std::string where;
            std::size_t n = 0;
            for (std::size_t k = 0; k < gpu.params.size(); ++k) {
              if (std::fabs(double(gpu.params[k]) - double(host.params[k])) > 1e-4 && n++ < 40) {
                where += " " + std::to_string(k);
              }
            }
            MESSAGE(std::string(task) << ", " << iterations << " it, " << std::string(path) << ": " << n << " of "
                         << gpu.params.size() << " weights differ by more than 1e-4:" << where
                         << " | obs " << worst(gpu.first_obs, host.first_obs) << " | values "
                         << worst(gpu.first_values, host.first_values) << " | rewards "
                         << worst(gpu.first_rewards, host.first_rewards) << " | ends "
                         << worst(gpu.first_ends, host.first_ends) << " | advantages "
                         << worst(gpu.first_advantages, host.first_advantages) << " | returns "
                         << worst(gpu.first_returns, host.first_returns) << " | losses gpu " << gpu.policy_loss
                         << " " << gpu.value_loss << " " << gpu.entropy << " host " << host.policy_loss << " "
                         << host.value_loss << " " << host.entropy);
          }
          CHECK(rel_diff(gpu.first_rewards, host.first_rewards) < 1e-6);
          CHECK(rel_diff(gpu.first_advantages, host.first_advantages) < 1e-4);
          CHECK(rel_diff(gpu.params, host.params) < (iterations == 1 ? 1e-4 : 1e-3));
          CHECK(gpu.value_loss == doctest::Approx(host.value_loss).epsilon(iterations == 1 ? 1e-3 : 1e-2));
          CHECK(gpu.entropy == doctest::Approx(host.entropy).epsilon(1e-3));
          CHECK(std::isfinite(gpu.policy_loss));
        }
      }
    }
  }
}

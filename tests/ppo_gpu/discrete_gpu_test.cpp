#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <string>

#include "discrete_runs.hpp"
#include "rel_diff.hpp"

using gmi_test::rel_diff;

TEST_SUITE("gpu") {
  // Categorical PPO on cartpole_discrete (2 actions) and grid_walk (5), GPU against host: the first rollout draws
  // the same actions (the same streams, logits equal to float rounding), and after one and after three iterations
  // the weights agree on every gradient path (warps, tiles, threads). Three iterations allow a little more: a logit
  // rounded differently can flip a draw that sits on a CDF boundary.
  TEST_CASE("ppo_gpu.discrete.matches_host" * doctest::timeout(480)) {
    for (int actions : {2, 5}) {
      for (int iterations : {1, 3}) {
        const auto host = discrete_iterations("", iterations, actions);
        for (const char* path : {"warps", "tiles", "threads"}) {
          CAPTURE(actions);
          CAPTURE(iterations);
          CAPTURE(path);
          const auto gpu = discrete_iterations(path, iterations, actions);
          CHECK(gpu.path == path);
          REQUIRE(gpu.params.size() == host.params.size());
          CHECK(gpu.first_actions == host.first_actions);
          CHECK(rel_diff(gpu.first_log_probs, host.first_log_probs) < 1e-5);
          {  // which weights depart (the lead's diagnosis of the 5-action fault: the head's last-logit row)
            std::string where;
            std::size_t n = 0;
            for (std::size_t k = 0; k < gpu.params.size(); ++k) {
              if (std::fabs(double(gpu.params[k]) - double(host.params[k])) > 1e-4 && n++ < 80) {
                where += " " + std::to_string(k);
              }
            }
            MESSAGE(actions << " actions, " << iterations << " it, " << std::string(path) << ": " << n << " of "
                            << gpu.params.size() << " weights differ by more than 1e-4:" << where);
          }
          CHECK(rel_diff(gpu.params, host.params) < (iterations == 1 ? 1e-4 : 1e-3));
          CHECK(gpu.value_loss == doctest::Approx(host.value_loss).epsilon(iterations == 1 ? 1e-3 : 1e-2));
          CHECK(gpu.entropy == doctest::Approx(host.entropy).epsilon(1e-3));
          CHECK(std::isfinite(gpu.policy_loss));
        }
      }
    }
  }
}

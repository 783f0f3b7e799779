// gmi::train / gmi::serve as functions: a program fills a config, runs it on host threads and reads the result.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "train_runs.hpp"

namespace {
bool has(const std::vector<std::string>& names, const std::string& prefix) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n.starts_with(prefix); });
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("pipeline.train.env_params_reach_the_environments" * doctest::timeout(120)) {
    // 10 steps of reward 7 an episode: every finished episode returns exactly 70; the default params give 10.
    const auto seven = gmi_test::train_constant_reward(7.0f, 10, 20'000, NAN);
    CHECK(seven.error.empty());
    CHECK(seven.reason == "step limit");
    CHECK(seven.exit_code == 0);
    CHECK(seven.env_steps >= 20'000);
    CHECK(seven.mean_return == doctest::Approx(70.0));
    CHECK(seven.eval_return == doctest::Approx(70.0));  // the deterministic evaluation's episodes get them too
    const auto one = gmi_test::train_constant_reward(1.0f, 10, 20'000, NAN);
    CHECK(one.mean_return == doctest::Approx(10.0));
    CHECK(one.eval_return == doctest::Approx(10.0));
  }

  TEST_CASE("pipeline.train.returns_curve_rates_and_weights" * doctest::timeout(120)) {
    const auto r = gmi_test::train_constant_reward(1.0f, 20, 30'000, NAN);
    REQUIRE_FALSE(r.curve.empty());
    CHECK(r.curve.back()[1] == doctest::Approx(20.0));
    for (std::size_t i = 1; i < r.curve.size(); ++i) CHECK(r.curve[i][0] > r.curve[i - 1][0]);
    CHECK(r.train_rate > 0);
    CHECK(r.env_rate > 0);
    CHECK(r.serve_rate > 0);
    CHECK(has(r.weight_names, "heads.weight"));
    CHECK(has(r.weight_names, "log_std"));
  }

  TEST_CASE("pipeline.train.stops_when_solved" * doctest::timeout(120)) {
    const auto r = gmi_test::train_constant_reward(2.0f, 10, 1e7, 15.0);  // every episode returns 20 >= 15
    CHECK(r.reason == "solved");
    CHECK(r.exit_code == 0);
    CHECK(r.env_steps < 1e6);
  }

  TEST_CASE("pipeline.train.same_seed_same_curve" * doctest::timeout(120)) {
    const auto a = gmi_test::train_cartpole(20'000, 3);
    const auto b = gmi_test::train_cartpole(20'000, 3);
    const auto c = gmi_test::train_cartpole(20'000, 4);
    REQUIRE_FALSE(a.curve.empty());
    CHECK(a.curve == b.curve);
    CHECK(a.mean_return == b.mean_return);
    CHECK(a.curve != c.curve);
  }

  TEST_CASE("pipeline.train.refuses_options_that_can_not_work") {
    CHECK(gmi_test::train_refused("population").error.find("host threads") != std::string::npos);
    CHECK(gmi_test::train_refused("optimum_gap").error.find("--target-optimum-gap for task") != std::string::npos);
    CHECK(gmi_test::train_refused("clip").error.find("ppo.clip") != std::string::npos);
  }

  TEST_CASE("pipeline.serve.measures_the_tiers" * doctest::timeout(120)) {
    const auto r = gmi_test::serve_cartpole();
    CHECK(r.reason == "served");
    CHECK(r.exit_code == 0);
    CHECK(r.env_rate > 0);
    CHECK(r.serve_rate > 0);
  }
}

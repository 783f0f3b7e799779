#include <doctest/doctest.h>

#include <string>
#include <utility>

#include <gmi/concepts/env.hpp>
#include <gmi/envs/registry.hpp>
#include <gmi/rl/env_batch.hpp>

namespace {
struct no_tag {
  static constexpr int obs_dim = 1, act_dim = 1;
  struct params { int max_steps = 1; };
  struct state { float x; };
  static void reset(state&, gmi::rng&, const params&) {}
  static gmi::transition step(state&, const float*, gmi::rng&, const params&) { return {0, false}; }
  static void observe(const state&, float*, const params&) {}
};
struct tagged : no_tag {
  using env_concept = gmi::env_tag;
};
struct no_time_limit : tagged {
  struct params {};
};
struct wrong_step : tagged {
  static float step(state&, const float*, gmi::rng&, const params&) { return 0; }
};
}  // namespace

static_assert(!gmi::env<int>);
static_assert(!gmi::env<no_tag>);
static_assert(gmi::env<tagged>);
static_assert(!gmi::env<no_time_limit>);
static_assert(!gmi::env<wrong_step>);
static_assert(gmi::check_env<gmi::envs::cartpole>());
static_assert(gmi::batch_env<gmi::rl::env_batch<gmi::envs::cartpole>>);
static_assert(gmi::check_batch_env<gmi::rl::env_batch<gmi::envs::shadow_hand_proxy>>());
static_assert(!gmi::batch_env<gmi::envs::cartpole>);
static_assert(std::is_same_v<gmi::rl::env_batch<gmi::envs::cartpole>::memory_space, gmi::host_memory>);

TEST_SUITE("cpu") {
  TEST_CASE("envs.registry.sizes_match_the_table") {
    struct sizes {
      std::string_view name;
      int obs, act;
    };
    const sizes table[] = {{"cartpole", 4, 1},          {"pendulum", 3, 1},        {"ball_balance", 24, 3},
                           {"quadcopter", 21, 12},      {"ingenuity", 13, 6},      {"ant_proxy", 60, 8},
                           {"anymal_proxy", 48, 12},    {"humanoid_proxy", 108, 21}, {"franka_cabinet_proxy", 23, 9},
                           {"shadow_hand_proxy", 211, 20}, {"point_reach", 6, 2},         {"sparse_reach", 4, 2},
                           {"long_track", 5, 1},        {"spring_chain", 8, 4},      {"cartpole_discrete", 4, 1},
                           {"ant_v4", 27, 8},              {"humanoid_v4", 45, 17},        {"anymal", 48, 12},
                           {"ant", 60, 8},        {"humanoid", 108, 21}};
    CHECK(gmi::envs::task_names.size() == std::size(table));
    for (const auto& t : table) {
      CAPTURE(t.name);
      const auto dims = gmi::envs::visit_task(t.name, []<class T>() { return std::pair{T::obs_dim, T::act_dim}; });
      CHECK(dims.first == t.obs);
      CHECK(dims.second == t.act);
    }
  }

  TEST_CASE("envs.registry.unknown_name_lists_the_known_ones") {
    try {
      gmi::envs::visit_task("cartpol", []<class T>() {});
      FAIL("no exception");
    } catch (const gmi::config_error& e) {
      const std::string msg = e.what();
      CHECK(msg.find("task: got \"cartpol\"") != std::string::npos);
      CHECK(msg.find("shadow_hand_proxy") != std::string::npos);
    }
  }

  TEST_CASE("envs.registry.old_name_says_what_it_is_called_now") {
    // The Isaac-Gym-style tasks took the names ant and humanoid; their old names get one line naming both new ones.
    const std::pair<const char*, const char*> renamed[] = {
        {"isaac_ant", "task 'isaac_ant' is now called 'ant' (the Gymnasium-style one is 'ant_v4')"},
        {"isaac_humanoid", "task 'isaac_humanoid' is now called 'humanoid' (the Gymnasium-style one is 'humanoid_v4')"}};
    for (const auto& [old_name, line] : renamed) {
      CAPTURE(old_name);
      CHECK_THROWS_WITH_AS(gmi::envs::visit_task(old_name, []<class T>() {}), line, gmi::config_error);
    }
    CHECK(gmi::envs::renamed_task("ant").empty());
    CHECK(gmi::envs::renamed_task("ant_v4").empty());
  }
}

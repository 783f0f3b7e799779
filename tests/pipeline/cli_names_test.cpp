// gmi::run's line for a bad PPO setting names the flag the user typed (--lr), not the config field
// (ppo.learning_rate) that rl::ppo_config::validate names for programs that fill a config themselves.
#include <doctest/doctest.h>

#include <limits>
#include <string>

#include <gmi/core/error.hpp>
#include <gmi/pipeline/cli.hpp>
#include <gmi/rl/ppo_config.hpp>

namespace {
std::string line_of(const gmi::rl::ppo_config& c) {
  try {
    c.validate();
  } catch (const gmi::config_error& e) {
    return gmi::detail::with_flag_name(e.what());
  }
  return "valid";
}
}  // namespace

TEST_CASE("pipeline.cli.bad_ppo_setting_names_the_flag") {
  gmi::rl::ppo_config c;
  c.learning_rate = -1;
  CHECK(line_of(c) == "--lr: got -1, need in (0, 1)");
  c = {};
  c.horizon = 0;
  CHECK(line_of(c).starts_with("--horizon: got 0"));
  c = {};
  c.max_grad_norm = std::numeric_limits<float>::quiet_NaN();
  CHECK(line_of(c).starts_with("--max-grad-norm: got nan"));
  CHECK(gmi::detail::with_flag_name("num_envs: got 0, need >= 1") == "num_envs: got 0, need >= 1");
  CHECK(gmi::detail::with_flag_name("ppo.value_clip: got 0, need > 0") == "--value-clip: got 0, need > 0");
  c = {};
  c.advantage_window = 0;
  CHECK(line_of(c).starts_with("--advantage-window: got 0, need 1..1000000 rollouts"));
  // A field without a flag keeps its config name.
  CHECK(gmi::detail::with_flag_name("ppo.value_clipx: got 0, need > 0") == "ppo.value_clipx: got 0, need > 0");
  CHECK(gmi::detail::with_flag_name("ppo.min_learning_rate: got 0, need > 0") == "ppo.min_learning_rate: got 0, need > 0");
}

#include <doctest/doctest.h>

#include <gmi/rl/ppo_config.hpp>

TEST_SUITE("cpu") {
  TEST_CASE("rl.ppo_config.defaults_are_valid_and_bad_values_named") {
    gmi::rl::ppo_config c;
    CHECK_NOTHROW(c.validate());
    c.horizon = 0;
    CHECK_THROWS_WITH_AS(c.validate(), "ppo.horizon: got 0, need 1..4096", gmi::config_error);
    c = {};
    c.clip = 1.5f;
    CHECK_THROWS_WITH_AS(c.validate(), "ppo.clip: got 1.5, need in (0, 1)", gmi::config_error);
    c = {};
    c.gamma = 0;
    CHECK_THROWS_AS(c.validate(), gmi::config_error);
    c = {};
    c.learning_rate = -1;
    CHECK_THROWS_AS(c.validate(), gmi::config_error);
    c = {};
    c.epochs = 0;
    CHECK_THROWS_AS(c.validate(), gmi::config_error);
  }

  TEST_CASE("rl.ppo_config.adaptive_kl_rule") {
    gmi::rl::ppo_config c;
    c.schedule = gmi::rl::lr_schedule::adaptive_kl;
    CHECK(gmi::rl::next_learning_rate(c, 3e-4f, 1.0f) == doctest::Approx(2e-4f));
    CHECK(gmi::rl::next_learning_rate(c, 3e-4f, 0.0f) == doctest::Approx(4.5e-4f));
    CHECK(gmi::rl::next_learning_rate(c, 3e-4f, c.kl_target) == 3e-4f);
    c.schedule = gmi::rl::lr_schedule::constant;
    CHECK(gmi::rl::next_learning_rate(c, 3e-4f, 1.0f) == 3e-4f);
  }
}

// core/env_var.hpp: settings from environment variables; a bad value is one config_error naming it.
#include <doctest/doctest.h>

#include <cstdlib>

#include <gmi/core/env_var.hpp>

TEST_SUITE("cpu") {
TEST_CASE("core.env_var.choice") {
  // Unset or empty is no choice, a name its value, anything else one config_error with every choice.
  enum class pick { a, b, c };
  const auto read = [] {
    return gmi::env_var::choice<pick>("GMI_TEST_CHOICE", {{"a", pick::a}, {"b", pick::b}, {"c", pick::c}});
  };
  ::unsetenv("GMI_TEST_CHOICE");
  CHECK_FALSE(read().has_value());
  ::setenv("GMI_TEST_CHOICE", "", 1);
  CHECK_FALSE(read().has_value());
  ::setenv("GMI_TEST_CHOICE", "b", 1);
  CHECK(read() == pick::b);
  ::setenv("GMI_TEST_CHOICE", "d", 1);
  CHECK_THROWS_WITH_AS(read(), doctest::Contains("GMI_TEST_CHOICE: got \"d\", need a, b or c"), gmi::config_error);
  ::unsetenv("GMI_TEST_CHOICE");
}

TEST_CASE("core.env_var.integer_and_text") {
  ::unsetenv("GMI_TEST_INT");
  CHECK_FALSE(gmi::env_var::integer("GMI_TEST_INT").has_value());
  CHECK(gmi::env_var::text("GMI_TEST_INT").empty());
  ::setenv("GMI_TEST_INT", "-12", 1);
  CHECK(gmi::env_var::integer("GMI_TEST_INT") == -12);
  CHECK(gmi::env_var::text("GMI_TEST_INT") == "-12");
  ::setenv("GMI_TEST_INT", "12x", 1);
  CHECK_THROWS_WITH_AS(gmi::env_var::integer("GMI_TEST_INT"), "GMI_TEST_INT: got \"12x\", need an integer",
                       gmi::config_error);
  ::setenv("GMI_TEST_INT", "99999999999", 1);
  CHECK_THROWS_AS(gmi::env_var::integer("GMI_TEST_INT"), gmi::config_error);
  ::unsetenv("GMI_TEST_INT");
}
}

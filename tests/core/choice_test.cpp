// core/choice.hpp: an enum's words both ways, and a word outside the table is one line listing the choices.
#include <doctest/doctest.h>

#include <string>

#include <gmi/core/choice.hpp>

namespace {
enum class pick { a, b, c };
constexpr gmi::choice_table<pick, 3> picks{{{"alpha", pick::a}, {"beta", pick::b}, {"gamma", pick::c}}};
}  // namespace

TEST_SUITE("cpu") {
TEST_CASE("core.choice.words_both_ways") {
  for (const auto& [name, value] : picks) {
    CHECK(gmi::parse_choice("--pick", name, picks) == value);
    CHECK(std::string(gmi::choice_name(value, picks)) == name);
  }
  CHECK(gmi::choice_list(picks) == "alpha, beta or gamma");
  CHECK(gmi::choice_names(picks) == std::vector<std::string>{"alpha", "beta", "gamma"});
  CHECK_THROWS_WITH_AS((void)gmi::parse_choice("--pick", "delta", picks), "--pick: got \"delta\", need alpha, beta or gamma",
                       gmi::config_error);
  CHECK_THROWS_AS((void)gmi::parse_choice("--pick", "", picks), gmi::config_error);
}
}

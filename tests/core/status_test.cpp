#include <doctest/doctest.h>

#include <gmi/core/status.hpp>

#include <string>

TEST_SUITE("cpu") {
  TEST_CASE("core.status.ok_and_failures") {
    CHECK(gmi::status::ok().is_ok());
    const auto s = gmi::status::unavailable("no NVIDIA driver");
    CHECK_FALSE(s.is_ok());
    CHECK(s.value() == gmi::status::code::unavailable);
    CHECK(s.message() == "no NVIDIA driver");
  }

  TEST_CASE("core.result.value_or_status") {
    gmi::result<int> good = 42;
    CHECK(good.has_value());
    CHECK(*good == 42);
    CHECK(good.error().is_ok());
    gmi::result<int> bad = gmi::status::unsupported("MIG disabled");
    CHECK_FALSE(bad.has_value());
    CHECK(bad.value_or(7) == 7);
    CHECK(bad.error().message() == "MIG disabled");
    CHECK_THROWS_WITH_AS((void)bad.value(), "MIG disabled", gmi::error);
  }
}

#include <doctest/doctest.h>

#include <gmi/core/version.hpp>

#include <string>

TEST_SUITE("cpu") {
  TEST_CASE("core.version.matches_cmake_project") {
    CHECK(std::string(gmi::version_string) == GMI_PROJECT_VERSION);
    CHECK(std::to_string(gmi::version_major) + "." + std::to_string(gmi::version_minor) + "." +
              std::to_string(gmi::version_patch) ==
          GMI_PROJECT_VERSION);
  }
}

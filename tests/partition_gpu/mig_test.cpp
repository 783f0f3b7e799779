// mig on a GPU machine with MIG disabled: can_implement says so, names the GPU, prints a plan, and nothing is
// changed (MIG mode is read before and after).
#include <doctest/doctest.h>

#include <gmi/cuda/nvml.hpp>
#include <gmi/partition/mig.hpp>

namespace gp = gmi::partition;

TEST_SUITE("gpu") {
  TEST_CASE("partition_gpu.mig.reports_disabled_with_a_plan") {
    auto mode = gmi::cuda::nvml::mig_mode_of(0);
    if (!mode || mode->current) {
      MESSAGE("SKIPPED: this check is for a GPU with MIG disabled: ",
              (mode ? "MIG is enabled" : mode.error().message()));
      return;
    }
    const auto st = gp::mig::can_implement(7);
    CHECK(st.value() == gmi::status::code::unavailable);
    CHECK(st.message().starts_with("MIG is disabled on GPU 0 ("));
    CHECK(st.message().find("an administrator must enable it and create instances: 7 x 1g.") != std::string::npos);
    CHECK(st.message().find("nvidia-smi mig -i 0 -cgi") != std::string::npos);
    MESSAGE(st.message());
    auto devices = gmi::cuda::nvml::mig_devices(0);
    REQUIRE(devices.has_value());
    CHECK(devices->empty());
    CHECK_THROWS_AS(gp::mig::session(gp::mig::config{}), gmi::error);
    auto after = gmi::cuda::nvml::mig_mode_of(0);
    REQUIRE(after.has_value());
    CHECK(after->current == mode->current);
    CHECK(after->pending == mode->pending);
  }
}

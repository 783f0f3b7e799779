// NVML without a GPU: the machine either has the library (then queries answer) or every query says
// "no NVIDIA driver"; the test checks whichever branch this machine is on.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cstring>
#include <string>

#include <gmi/cuda/nvml.hpp>

namespace nvml = gmi::cuda::nvml;

namespace {
bool says_no_driver(const gmi::status& st) {
  return st.value() == gmi::status::code::unavailable && st.message().starts_with("no NVIDIA driver");
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("cuda.nvml.no_driver_or_device_count") {
    void* probe = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    const auto n = nvml::device_count();
    if (!probe) {
      INFO("libnvidia-ml.so.1 is absent here: every query must say so");
      REQUIRE_FALSE(n.has_value());
      CHECK(says_no_driver(n.error()));
      CHECK(n.error().message().find("dlopen(libnvidia-ml.so.1)") != std::string::npos);
      CHECK_FALSE(nvml::library::instance().available());
      CHECK(says_no_driver(nvml::name(0).error()));
      CHECK(says_no_driver(nvml::uuid(0).error()));
      CHECK(says_no_driver(nvml::pci_bus_id(0).error()));
      CHECK(says_no_driver(nvml::memory(0).error()));
      CHECK(says_no_driver(nvml::utilization_rates(0).error()));
      CHECK(says_no_driver(nvml::mig_mode_of(0).error()));
      CHECK(says_no_driver(nvml::mig_devices(0).error()));
      CHECK(says_no_driver(nvml::nvlink_active(0).error()));
      CHECK(says_no_driver(nvml::driver_version().error()));
      CHECK_THROWS_AS((void)nvml::name(0).value(), gmi::error);
    } else {
      dlclose(probe);
      INFO("libnvidia-ml.so.1 loads here: ", n.error().message());
      if (n) {
        CHECK(*n >= 0);
      } else {
        CHECK(says_no_driver(n.error()));  // library present, driver not loaded (a container without a GPU)
        CHECK(n.error().message().find("nvmlInit_v2") != std::string::npos);
      }
    }
  }

  TEST_CASE("cuda.nvml.bad_index_is_invalid") {
    const auto n = nvml::device_count();
    if (!n) {
      CHECK(says_no_driver(nvml::name(-1).error()));
      return;
    }
    const auto below = nvml::name(-1);
    REQUIRE_FALSE(below.has_value());
    CHECK(below.error().value() == gmi::status::code::invalid);
    CHECK(below.error().message().starts_with("NVML device index: got -1, need "));
    const auto above = nvml::uuid(*n);
    REQUIRE_FALSE(above.has_value());
    CHECK(above.error().value() == gmi::status::code::invalid);
  }

  TEST_CASE("cuda.nvml.uuid_string_layout") {
    cudaUUID_t id{};
    const unsigned char bytes[16] = {0x5f, 0x8c, 0x1f, 0x72, 0x0e, 0x56, 0xf1, 0xa4,
                                     0x4c, 0x8c, 0x3e, 0x5e, 0x2c, 0x6c, 0x6a, 0x3b};
    std::memcpy(id.bytes, bytes, 16);
    CHECK(nvml::uuid_string(id) == "GPU-5f8c1f72-0e56-f1a4-4c8c-3e5e2c6c6a3b");
    CHECK(nvml::uuid_string(id, "MIG-") == "MIG-5f8c1f72-0e56-f1a4-4c8c-3e5e2c6c6a3b");
  }
}

// NVML on a GPU machine: it sees the same GPUs as CUDA, with names, GPU- UUIDs, memory, utilization, MIG mode
// (disabled on our machines: no MIG devices) and NVLink state.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include <gmi/cuda/device.hpp>
#include <gmi/cuda/nvml.hpp>

namespace nvml = gmi::cuda::nvml;

TEST_SUITE("gpu") {
  TEST_CASE("cuda.nvml.sees_the_cuda_devices") {
    const auto n = nvml::device_count();
    REQUIRE_MESSAGE(n.has_value(), n.error().message());
    const int cuda_n = gmi::cuda::device_count().value();
    if (std::getenv("CUDA_VISIBLE_DEVICES") == nullptr) {
      CHECK(*n == cuda_n);
    } else {
      CHECK(*n >= cuda_n);  // NVML ignores CUDA_VISIBLE_DEVICES
    }
    const auto version = nvml::driver_version();
    REQUIRE_MESSAGE(version.has_value(), version.error().message());
    MESSAGE("driver ", *version, ", ", *n, " GPU(s)");
    // Every visible CUDA device is found among NVML's by UUID.
    for (int ordinal = 0; ordinal < cuda_n; ++ordinal) {
      const auto index = nvml::index_of_cuda_device(ordinal);
      CHECK_MESSAGE(index.has_value(), index.error().message());
    }
  }

  TEST_CASE("cuda.nvml.describes_each_device") {
    const int n = nvml::device_count().value();
    for (int i = 0; i < n; ++i) {
      CAPTURE(i);
      const auto name = nvml::name(i);
      REQUIRE_MESSAGE(name.has_value(), name.error().message());
      CHECK_FALSE(name->empty());
      const bool known = name->find("H100") != std::string::npos || name->find("H200") != std::string::npos;
      if (!known) MESSAGE("not an H100/H200: ", *name);

      const auto id = nvml::uuid(i);
      REQUIRE_MESSAGE(id.has_value(), id.error().message());
      CHECK(id->starts_with("GPU-"));
      CHECK(id->size() == 40);  // GPU- + 8-4-4-4-12 hex digits

      const auto bus = nvml::pci_bus_id(i);
      REQUIRE_MESSAGE(bus.has_value(), bus.error().message());
      CHECK_FALSE(bus->empty());

      const auto mem = nvml::memory(i);
      REQUIRE_MESSAGE(mem.has_value(), mem.error().message());
      CHECK(mem->total > 0);
      CHECK(mem->used <= mem->total);
      CHECK(mem->free <= mem->total);

      const auto use = nvml::utilization_rates(i);
      REQUIRE_MESSAGE(use.has_value(), use.error().message());
      CHECK(use->gpu <= 100);
      CHECK(use->memory <= 100);

      const auto links = nvml::nvlink_active(i);
      REQUIRE_MESSAGE(links.has_value(), links.error().message());

      MESSAGE(*name, " ", *id, " at ", *bus, ": ", mem->total >> 20, " MiB, ", use->gpu, "% busy, ", links->size(),
              " NVLinks");
    }
  }

  TEST_CASE("cuda.nvml.mig_mode_and_devices") {
    const int n = nvml::device_count().value();
    for (int i = 0; i < n; ++i) {
      CAPTURE(i);
      const auto mode = nvml::mig_mode_of(i);
      const auto migs = nvml::mig_devices(i);
      REQUIRE_MESSAGE(migs.has_value(), migs.error().message());
      if (!mode) {
        CHECK(mode.error().value() == gmi::status::code::unsupported);
        CHECK(migs->empty());
        continue;
      }
      MESSAGE("GPU ", i, ": MIG current ", mode->current, ", pending ", mode->pending, ", ", migs->size(),
              " MIG devices");
      if (!mode->current) CHECK(migs->empty());
      for (const auto& m : *migs) {
        CHECK(m.uuid.starts_with("MIG-"));
        MESSAGE("  ", m.uuid, " GI ", m.gpu_instance_id, " CI ", m.compute_instance_id, " SMs ", m.sm_count);
      }
    }
  }
}

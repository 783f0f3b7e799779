// gmi::rng gives the same stream on host and device: integers and uniforms (uniform(lo, hi) too) bit for bit,
// normals within the math libraries' rounding.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include <gmi/core/rng.hpp>

#include "core_gpu/kernels.hpp"

TEST_SUITE("gpu") {
  TEST_CASE("core.rng.host_and_device_agree" * doctest::timeout(60)) {
    const int count = 1001;  // not a multiple of 4: partly used blocks too
    const std::pair<std::uint64_t, std::uint64_t> cases[] = {
        {0, 0}, {1, 0}, {0, 1}, {42, 7}, {0xDEADBEEFCAFEF00Dull, 0x123456789ull}, {~0ull, ~0ull}};
    for (const auto& [seed, stream] : cases) {
      CAPTURE(seed);
      CAPTURE(stream);
      const auto device = gmi_test::rng_draws_on_device(seed, stream, count);
      REQUIRE(device.u32.size() == static_cast<std::size_t>(count));

      gmi::rng a(seed, stream);
      int u32_mismatches = 0;
      for (int i = 0; i < count; ++i) u32_mismatches += a.next_u32() != device.u32[i];
      CHECK(u32_mismatches == 0);

      gmi::rng b(seed, stream);
      int uniform_mismatches = 0;
      for (int i = 0; i < count; ++i) uniform_mismatches += b.uniform() != device.uniform[i];
      CHECK(uniform_mismatches == 0);

      gmi::rng c(seed, stream);
      float worst = 0;
      for (int i = 0; i < count; ++i) worst = std::max(worst, std::fabs(c.normal() - device.normal[i]));
      CHECK(worst <= 1e-5f);

      gmi::rng d(seed, stream);
      int range_mismatches = 0, first = -1;
      float first_host = 0, first_device = 0;
      for (int i = 0; i < count; ++i) {
        const float h = d.uniform(-0.2f, 0.3f);
        if (h != device.uniform_range[i] && first < 0) {
          first = i;
          first_host = h;
          first_device = device.uniform_range[i];
        }
        range_mismatches += h != device.uniform_range[i];
      }
      char where[160];
      std::snprintf(where, sizeof where, "uniform(-0.2, 0.3): first mismatch at draw %d: host %.9g, device %.9g", first,
                    double(first_host), double(first_device));
      INFO(std::string(where));
      CHECK(range_mismatches == 0);
    }
  }
}

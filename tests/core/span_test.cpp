#include <doctest/doctest.h>

#include <gmi/core/span.hpp>

#include <type_traits>
#include <vector>

TEST_SUITE("cpu") {
  TEST_CASE("core.span.host_view") {
    std::vector<float> v{1, 2, 3, 4};
    gmi::host_span<float> s(v.data(), v.size());
    CHECK(s.size() == 4);
    CHECK(s.size_bytes() == 16);
    s[2] = 9;
    CHECK(v[2] == 9);
    auto tail = s.subspan(1, 3);
    CHECK(tail[0] == 2);
    gmi::host_span<const float> c = s;  // adds const
    CHECK(c.data() == v.data());
    float sum = 0;
    for (float x : c) sum += x;
    CHECK(sum == 16);
  }

  TEST_CASE("core.span.spaces_do_not_mix") {
    static_assert(!std::is_convertible_v<gmi::device_span<float>, gmi::host_span<float>>);
    static_assert(!std::is_convertible_v<gmi::host_span<float>, gmi::device_span<float>>);
    static_assert(!std::is_convertible_v<gmi::host_span<const float>, gmi::host_span<float>>);
    static_assert(std::is_trivially_copyable_v<gmi::device_span<float>>);
    CHECK(gmi::device_span<float>().empty());
  }
}

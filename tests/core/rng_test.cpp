#include <doctest/doctest.h>

#include <gmi/core/rng.hpp>

#include <cmath>
#include <set>
#include <vector>

namespace {
void check_block(gmi::u32x4 got, gmi::u32x4 want) {
  for (int i = 0; i < 4; ++i) CHECK(got.v[i] == want.v[i]);
}
}  // namespace

TEST_SUITE("cpu") {
  // Known-answer vectors of Random123 (kat_vectors, philox4x32 with 10 rounds).
  TEST_CASE("core.rng.philox_known_answers") {
    check_block(gmi::philox4x32_10({{0, 0, 0, 0}}, 0, 0), {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}});
    check_block(gmi::philox4x32_10({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu),
                {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}});
    check_block(gmi::philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u),
                {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}});
  }

  TEST_CASE("core.rng.streams_are_reproducible_and_distinct") {
    gmi::rng a(7, 3), b(7, 3), c(7, 4), d(8, 3);
    std::vector<std::uint32_t> va, vc, vd;
    for (int i = 0; i < 64; ++i) {
      const auto x = a.next_u32();
      CHECK(x == b.next_u32());
      va.push_back(x);
      vc.push_back(c.next_u32());
      vd.push_back(d.next_u32());
    }
    CHECK(va != vc);
    CHECK(va != vd);
  }

  TEST_CASE("core.rng.resume_from_block") {
    gmi::rng a(11, 5);
    for (int i = 0; i < 8; ++i) a.next_u32();  // two whole blocks
    gmi::rng resumed(11, 5, a.block());
    for (int i = 0; i < 16; ++i) CHECK(a.next_u32() == resumed.next_u32());
  }

  TEST_CASE("core.rng.resume_from_word_mid_block") {
    for (int used = 0; used < 9; ++used) {
      CAPTURE(used);
      gmi::rng a(11, 5, 3);
      for (int i = 0; i < used; ++i) a.next_u32();
      CHECK(a.word() == 12 + static_cast<std::uint64_t>(used));
      gmi::rng resumed = gmi::rng::from_word(11, 5, a.word());
      CHECK(resumed.word() == a.word());
      for (int i = 0; i < 9; ++i) CHECK(a.next_u32() == resumed.next_u32());
      CHECK(resumed.block() == a.block());
    }
  }

  TEST_CASE("core.rng.uniform_and_normal_moments") {
    gmi::rng r(123, 0);
    const int n = 200000;
    double su = 0, su2 = 0, sn = 0, sn2 = 0;
    float lo = 1, hi = 0;
    for (int i = 0; i < n; ++i) {
      const float u = r.uniform();
      lo = std::min(lo, u);
      hi = std::max(hi, u);
      su += u;
      su2 += u * u;
      const float z = r.normal();
      REQUIRE(std::isfinite(z));
      sn += z;
      sn2 += z * z;
    }
    CHECK(lo >= 0.0f);
    CHECK(hi < 1.0f);
    CHECK(su / n == doctest::Approx(0.5).epsilon(0.01));
    CHECK(su2 / n - (su / n) * (su / n) == doctest::Approx(1.0 / 12).epsilon(0.02));
    CHECK(std::abs(sn / n) < 0.01);
    CHECK(sn2 / n == doctest::Approx(1.0).epsilon(0.02));
  }

  TEST_CASE("core.rng.unit_conversion_edges") {
    CHECK(gmi::u32_to_unit(0) == 0.0f);
    CHECK(gmi::u32_to_unit(0xffffffffu) < 1.0f);
    CHECK(gmi::u32_to_unit_open(0) > 0.0f);
    CHECK(gmi::u32_to_unit_open(0xffffffffu) == 1.0f);
  }
}

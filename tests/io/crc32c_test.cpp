#include <doctest/doctest.h>

#include <cstdint>
#include <gmi/io/crc32c.hpp>
#include <string_view>
#include <vector>

namespace {
// Bit at a time, straight from the definition: the reference the table version must match.
std::uint32_t crc32c_bitwise(const unsigned char* p, std::size_t n) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
  }
  return ~crc;
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("checkpoint.crc32c.known_values") {
    constexpr std::string_view check = "123456789";
    CHECK(gmi::io::crc32c_of(check.data(), check.size()) == 0xE3069283u);  // the CRC-32C check value
    CHECK(gmi::io::crc32c_of(nullptr, 0) == 0u);
    // RFC 3720 (iSCSI) B.4: 32 bytes of zeros, and of 0xFF.
    const std::vector<unsigned char> zeros(32, 0x00), ones(32, 0xFF);
    CHECK(gmi::io::crc32c_of(zeros.data(), zeros.size()) == 0x8A9136AAu);
    CHECK(gmi::io::crc32c_of(ones.data(), ones.size()) == 0x62A8AB43u);
  }

  TEST_CASE("checkpoint.crc32c.pieces_match_one_pass_and_the_bitwise_definition") {
    std::vector<unsigned char> data(1000);
    std::uint32_t x = 12345;
    for (auto& b : data) {
      x = x * 1664525u + 1013904223u;
      b = static_cast<unsigned char>(x >> 24);
    }
    for (std::size_t n : {0u, 1u, 7u, 8u, 9u, 63u, 64u, 65u, 999u, 1000u}) {
      CAPTURE(n);
      const std::uint32_t whole = gmi::io::crc32c_of(data.data(), n);
      CHECK(whole == crc32c_bitwise(data.data(), n));
      for (std::size_t cut : {std::size_t{0}, n / 3, n / 2, n}) {
        gmi::io::crc32c crc;
        crc.update(data.data(), cut);
        crc.update(data.data() + cut, n - cut);
        CHECK(crc.value() == whole);
      }
    }
  }
}

#pragma once
// CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF; check value
// 0xE3069283 for "123456789"), the checksum that closes every gmi checkpoint file.
// Castagnoli rather than zlib's CRC-32: better error detection at these lengths, and x86/ARM have an
// instruction for it should the table version ever show up in a profile.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gmi::io {

static_assert(std::endian::native == std::endian::little,
              "gmi checkpoints store little-endian data and are read and written on little-endian hosts only");

// Slicing-by-8 tables: table[0] is the classic byte table, table[k] advances a byte k positions further.
using crc32c_tables = std::array<std::array<std::uint32_t, 256>, 8>;

consteval crc32c_tables make_crc32c_tables() {
  crc32c_tables table{};
  for (std::uint32_t byte = 0; byte < 256; ++byte) {
    std::uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    table[0][byte] = crc;
  }
  for (std::size_t byte = 0; byte < 256; ++byte) {
    for (std::size_t k = 1; k < 8; ++k) {
      const std::uint32_t prev = table[k - 1][byte];
      table[k][byte] = (prev >> 8) ^ table[0][prev & 0xFFu];
    }
  }
  return table;
}

inline constexpr crc32c_tables crc32c_table = make_crc32c_tables();

// A running CRC-32C: feed bytes in any number of pieces, read value() at the end.
class crc32c {
 public:
  void update(const void* data, std::size_t size) noexcept {
    const auto* p = static_cast<const unsigned char*>(data);
    std::uint32_t crc = state_;
    const auto& t = crc32c_table;
    while (size >= 8) {
      std::uint64_t word;
      std::memcpy(&word, p, 8);  // little-endian load: the first byte lands in the low bits, as the tables assume
      word ^= crc;
      crc = t[7][word & 0xFFu] ^ t[6][(word >> 8) & 0xFFu] ^ t[5][(word >> 16) & 0xFFu] ^ t[4][(word >> 24) & 0xFFu] ^
            t[3][(word >> 32) & 0xFFu] ^ t[2][(word >> 40) & 0xFFu] ^ t[1][(word >> 48) & 0xFFu] ^ t[0][word >> 56];
      p += 8;
      size -= 8;
    }
    while (size-- > 0) crc = t[0][(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
    state_ = crc;
  }

  [[nodiscard]] std::uint32_t value() const noexcept { return ~state_; }

 private:
  std::uint32_t state_ = 0xFFFFFFFFu;
};

[[nodiscard]] inline std::uint32_t crc32c_of(const void* data, std::size_t size) noexcept {
  crc32c crc;
  crc.update(data, size);
  return crc.value();
}

}  // namespace gmi::io

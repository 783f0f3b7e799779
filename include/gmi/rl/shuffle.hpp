#pragma once
// A seeded random permutation of [0, n) evaluated index by index (a 4-round Feistel network on the next power
// of two, with cycle walking), so minibatches are drawn without a sort and host and device agree exactly.

#include <cstdint>

#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>

namespace gmi::rl {

class feistel_permutation {
 public:
  GMI_HD feistel_permutation(std::uint32_t n, std::uint64_t seed, std::uint64_t round_id) : n_(n) {
    int bits = 1;
    while ((std::uint64_t{1} << bits) < n) ++bits;
    if (bits % 2) ++bits;  // equal halves
    half_bits_ = bits / 2;
    mask_ = (1u << half_bits_) - 1u;
    const u32x4 k = philox4x32_10({{static_cast<std::uint32_t>(round_id), static_cast<std::uint32_t>(round_id >> 32),
                                    0x5bd1e995u, 0x1b873593u}},
                                   static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
    for (int i = 0; i < 4; ++i) keys_[i] = k.v[i];
  }

  // The image of i (i < n); a bijection on [0, n).
  GMI_HD std::uint32_t operator()(std::uint32_t i) const {
    std::uint32_t x = i;
    do {
      x = encrypt(x);
    } while (x >= n_);
    return x;
  }

  GMI_HD std::uint32_t size() const { return n_; }

 private:
  GMI_HD std::uint32_t encrypt(std::uint32_t x) const {
    std::uint32_t left = x >> half_bits_, right = x & mask_;
    for (int r = 0; r < 4; ++r) {
      std::uint32_t f = (right * 0x9E3779B1u) ^ keys_[r];
      f ^= f >> 15;
      f *= 0x85EBCA77u;
      f ^= f >> 13;
      const std::uint32_t next = left ^ (f & mask_);
      left = right;
      right = next;
    }
    return (left << half_bits_) | right;
  }

  std::uint32_t n_;
  int half_bits_;
  std::uint32_t mask_;
  std::uint32_t keys_[4];
};

}  // namespace gmi::rl

#pragma once
// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11): the draw is a pure function of
// (seed, stream, counter), so every environment gets its own stream from one seed, and host threads and
// CUDA kernels produce the same integers bit for bit (uniform floats too, uniform(lo, hi) included; normals
// within float rounding of the math library, see docs/architecture.md).

#include <cmath>
#include <cstdint>

#include <gmi/core/hd.hpp>

namespace gmi {

struct u32x4 {
  std::uint32_t v[4];
};

namespace detail {
GMI_HD inline std::uint32_t mulhilo32(std::uint32_t a, std::uint32_t b, std::uint32_t& hi) {
#if GMI_IN_DEVICE_CODE
  hi = __umulhi(a, b);
  return a * b;
#else
  const std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  return static_cast<std::uint32_t>(p);
#endif
}
}  // namespace detail

// The Philox4x32 block function with 10 rounds: 4 words of counter, 2 words of key -> 4 random words.
GMI_HD inline u32x4 philox4x32_10(u32x4 ctr, std::uint32_t k0, std::uint32_t k1) {
  constexpr std::uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += w0;
      k1 += w1;
    }
    std::uint32_t hi0, hi1;
    const std::uint32_t lo0 = detail::mulhilo32(m0, ctr.v[0], hi0);
    const std::uint32_t lo1 = detail::mulhilo32(m1, ctr.v[2], hi1);
    ctr = u32x4{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
  }
  return ctr;
}

// Converts 32 random bits to a float in [0, 1) with 24 bits of resolution (exact on host and device).
GMI_HD inline float u32_to_unit(std::uint32_t x) { return static_cast<float>(x >> 8) * 0x1p-24f; }
// ... and to (0, 1], for logarithms.
GMI_HD inline float u32_to_unit_open(std::uint32_t x) { return static_cast<float>((x >> 8) + 1u) * 0x1p-24f; }

// A random stream: key = seed, counter = (block index, stream id). Streams with different ids never overlap.
// State is small (seed, stream, block index, one buffered block) so it can live in registers per thread;
// to persist it, store block() and rebuild with rng(seed, stream, block).
class rng {
 public:
  GMI_HD rng(std::uint64_t seed, std::uint64_t stream, std::uint64_t block = 0)
      : seed_(seed), stream_(stream), block_(block) {}

  // The next 4 words; the counter advances by one block.
  GMI_HD u32x4 next_block() {
    const u32x4 ctr{{static_cast<std::uint32_t>(block_), static_cast<std::uint32_t>(block_ >> 32),
                     static_cast<std::uint32_t>(stream_), static_cast<std::uint32_t>(stream_ >> 32)}};
    ++block_;
    return philox4x32_10(ctr, static_cast<std::uint32_t>(seed_), static_cast<std::uint32_t>(seed_ >> 32));
  }

  GMI_HD std::uint32_t next_u32() {
    if (used_ == 4) {
      buffer_ = next_block();
      used_ = 0;
    }
    // Selects instead of buffer_.v[used_]: a run-time index into a register array sends it to local memory.
    const std::uint32_t x = used_ == 0 ? buffer_.v[0] : used_ == 1 ? buffer_.v[1] : used_ == 2 ? buffer_.v[2] : buffer_.v[3];
    ++used_;
    return x;
  }

  GMI_HD float uniform() { return u32_to_unit(next_u32()); }
  // lo + (hi - lo) * u with the multiply and the add rounded separately on both sides: nvcc would otherwise
  // contract them into one FMA (rounded once), and the device draw would differ from the host's by an ulp.
  // (A host build with FMA contraction enabled, e.g. -march=native with -ffp-contract=fast, would differ too.)
  GMI_HD float uniform(float lo, float hi) {
#if GMI_IN_DEVICE_CODE
    return __fadd_rn(lo, __fmul_rn(hi - lo, uniform()));
#else
    return lo + (hi - lo) * uniform();
#endif
  }

  // Standard normal by Box-Muller from two words.
  GMI_HD float normal() {
    const float u1 = u32_to_unit_open(next_u32());
    const float u2 = u32_to_unit(next_u32());
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
  }

  // The position to resume from: blocks started so far (a partly used block counts as used).
  GMI_HD std::uint64_t block() const { return block_; }
  // The position in words (4 a block), partly used blocks exact: from_word resumes there, so a stream drawn in
  // several kernels gives the words one thread drawing them all would.
  GMI_HD std::uint64_t word() const { return block_ * 4 - static_cast<std::uint64_t>(4 - used_); }
  GMI_HD static rng from_word(std::uint64_t seed, std::uint64_t stream, std::uint64_t word) {
    rng r(seed, stream, word / 4);
    for (std::uint64_t k = 0; k < word % 4; ++k) (void)r.next_u32();
    return r;
  }
  GMI_HD std::uint64_t seed() const { return seed_; }
  GMI_HD std::uint64_t stream() const { return stream_; }

 private:
  std::uint64_t seed_;
  std::uint64_t stream_;
  std::uint64_t block_;
  u32x4 buffer_{};
  int used_ = 4;
};

}  // namespace gmi

#include <doctest/doctest.h>

#include <cstdint>

#include <gmi/nn/lt_align.hpp>

namespace {
const void* at(std::uintptr_t address) { return reinterpret_cast<const void*>(address); }
}  // namespace

// The alignment the cuBLASLt heuristic is told about a pointer: the largest power of two up to 256 dividing it.
TEST_CASE("nn.lt_align.pointer_alignment") {
  CHECK(gmi::nn::pointer_alignment(at(0x7f0000000000)) == 256);
  CHECK(gmi::nn::pointer_alignment(at(0x7f0000000000 + 4)) == 4);
  CHECK(gmi::nn::pointer_alignment(at(0x7f0000000000 + 8)) == 8);
  CHECK(gmi::nn::pointer_alignment(at(0x7f0000000000 + 48)) == 16);
  CHECK(gmi::nn::pointer_alignment(at(0x7f0000000000 + 512)) == 256);
  CHECK(gmi::nn::pointer_alignment(at(0x7f0000000000 + 1)) == 1);
}

// A fused bias epilogue takes a bias on 16 bytes only: a float bias at an odd float offset of an aligned buffer
// (a slice of a larger gradient buffer) goes to the caller's own kernel.
TEST_CASE("nn.lt_align.bias_epilogue_needs_16_bytes") {
  const std::uintptr_t base = 0x7f0000000000;  // a cudaMalloc'd buffer: 256-byte aligned
  CHECK(gmi::nn::lt_bias_alignment == 16);
  CHECK(gmi::nn::lt_bias_epilogue_fits(at(base)));
  CHECK(gmi::nn::lt_bias_epilogue_fits(at(base + 4 * 64)));
  CHECK(gmi::nn::lt_bias_epilogue_fits(at(base + 4 * 4)));
  CHECK_FALSE(gmi::nn::lt_bias_epilogue_fits(at(base + 4 * 1)));
  CHECK_FALSE(gmi::nn::lt_bias_epilogue_fits(at(base + 4 * 2)));
  CHECK_FALSE(gmi::nn::lt_bias_epilogue_fits(at(base + 4 * 75265)));
  CHECK(gmi::nn::lt_bias_epilogue_fits(nullptr));
}

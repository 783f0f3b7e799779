#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include <gmi/nn/detail/lt_layout.hpp>
#include <gmi/nn/layers.hpp>
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

// The bf16 input record kept from a forward for the backward (lt_mlp at bf16): layer l's [n][bf16_ld(width(l))]
// slot starts where layer l - 1's ends, every slot 16-byte aligned for any n, the last one ending at in16_size; the
// network's output layer has no slot (no weight gradient reads it).
TEST_CASE("nn.lt_layout.input_record_slots_tile_the_buffer") {
  using shadow = gmi::nn::layers<211, 512, 512, 512, 256, 21>;
  using lay = gmi::nn::detail::lt_layout_of<shadow>;
  CHECK(gmi::nn::detail::bf16_ld(211) == 216);
  CHECK(gmi::nn::detail::bf16_ld(512) == 512);
  CHECK(gmi::nn::detail::bf16_ld(1) == 8);
  CHECK(lay::in16_offset(0) == 0);
  CHECK(lay::in16_offset(1) == 216);
  CHECK(lay::in16_offset(4) == 216 + 3 * 512);
  CHECK(lay::in16_size == 216 + 3 * 512 + 256);
  for (const std::size_t n : {1u, 7u, 301u, 8192u})
    for (int l = 0; l < shadow::count; ++l) {
      CHECK((n * lay::in16_offset(l) * 2) % 16 == 0);  // bytes of bf16
      CHECK(n * lay::in16_offset(l) + n * gmi::nn::detail::bf16_ld(shadow::width(l)) <= n * lay::in16_size);
    }
  using ant = gmi::nn::layers<60, 256, 128, 64, 9>;
  CHECK(gmi::nn::detail::lt_layout_of<ant>::in16_size == 64 + 256 + 128 + 64);
}

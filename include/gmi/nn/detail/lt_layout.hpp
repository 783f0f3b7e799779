#pragma once
// Layouts of lt_mlp's bf16 buffers (nn/lt_mlp.cuh): the weights, the own kernels' transposed weights and the
// bf16 record of every layer's input that a forward with an activation record keeps for the backward's weight
// gradients. Host constexpr, so the layouts are tested without a GPU.

#include <cstddef>

namespace gmi::nn::detail {

// Leading dimension of a bf16 copy: a multiple of 8 elements (16 bytes), what the tensor-core kernels need.
inline constexpr int bf16_ld(int width) { return (width + 7) / 8 * 8; }

template <class L>
struct lt_layout_of {
  // Offset of layer l's bf16 weights, [out][bf16_ld(in)], each layer starting on 256 bytes.
  static constexpr std::size_t w16_offset(int l) {
    std::size_t off = 0;
    for (int k = 0; k < l; ++k) off += (static_cast<std::size_t>(L::width(k + 1)) * bf16_ld(L::width(k)) + 127) / 128 * 128;
    return off;
  }
  static constexpr std::size_t w16_size = w16_offset(L::count);
  // Offset of layer l's transposed weights, [in][bf16_ld(out)] (the own kernels' backward), 128-element aligned.
  static constexpr std::size_t wt_offset(int l) {
    std::size_t off = 0;
    for (int k = 0; k < l; ++k) off += (static_cast<std::size_t>(L::width(k)) * bf16_ld(L::width(k + 1)) + 127) / 128 * 128;
    return off;
  }
  static constexpr std::size_t wt_size = wt_offset(L::count);
  static constexpr int max_ld16 = bf16_ld(L::max_width);
  // The bf16 input record of a batch of n rows: layer l's inputs at n * in16_offset(l), [n][bf16_ld(width(l))]
  // (16-byte aligned for every n, as bf16_ld is a multiple of 8); in16_size elements a row in all.
  static constexpr std::size_t in16_offset(int l) {
    std::size_t off = 0;
    for (int k = 0; k < l; ++k) off += static_cast<std::size_t>(bf16_ld(L::width(k)));
    return off;
  }
  static constexpr std::size_t in16_size = in16_offset(L::count);
};

}  // namespace gmi::nn::detail

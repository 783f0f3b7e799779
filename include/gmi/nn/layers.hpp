#pragma once
// Compile-time layer sizes of a fully connected network and where each layer's weights and biases sit in one
// flat parameter array: row-major W[out][in] then b[out], layer after layer (the unit an allreduce reduces).

#include <gmi/core/hd.hpp>

namespace gmi::nn {

// layers<In, Hidden..., Out>: sizes of the activations, input first. count = number of linear layers.
// A single size (layers<64>) is allowed as a list of hidden widths that other templates extend.
template <int... Sizes>
struct layers {
  static_assert(sizeof...(Sizes) >= 1, "gmi::nn::layers: give at least one size");
  static_assert(((Sizes >= 1) && ...), "gmi::nn::layers: every size must be >= 1");

  static constexpr int depth = static_cast<int>(sizeof...(Sizes));  // number of activation vectors
  static constexpr int count = depth - 1;                           // number of linear layers

  // Width of activation vector i (0: the input, count: the output).
  GMI_HD static constexpr int width(int i) {
    constexpr int s[] = {Sizes...};
    return s[i];
  }
  // Layer l maps width(l) -> width(l + 1).
  GMI_HD static constexpr int layer_in(int l) { return width(l); }
  GMI_HD static constexpr int layer_out(int l) { return width(l + 1); }
  GMI_HD static constexpr int layer_params(int l) { return width(l) * width(l + 1) + width(l + 1); }

  // Offsets inside the flat parameter array.
  GMI_HD static constexpr int weight_offset(int l) {
    int off = 0;
    for (int k = 0; k < l; ++k) off += layer_params(k);
    return off;
  }
  GMI_HD static constexpr int bias_offset(int l) { return weight_offset(l) + width(l) * width(l + 1); }

  // Offsets of each layer's output inside one sample's activation record (outputs of layers 0..count-1).
  GMI_HD static constexpr int activation_offset(int l) {
    int off = 0;
    for (int k = 0; k < l; ++k) off += width(k + 1);
    return off;
  }

  static constexpr int in = width(0);
  static constexpr int out = width(count);
  static constexpr int param_count = weight_offset(count);
  static constexpr int activation_size = activation_offset(count);
  static constexpr int max_width = [] {
    int m = 0;
    for (int i = 0; i < depth; ++i) m = width(i) > m ? width(i) : m;
    return m;
  }();
  // Multiply-adds of one sample's forward pass (the backward pass is about twice that).
  static constexpr long long forward_macs = [] {
    long long m = 0;
    for (int l = 0; l < count; ++l) m += static_cast<long long>(width(l)) * width(l + 1);
    return m;
  }();

  template <int... More>
  using append = layers<Sizes..., More...>;
  template <int... Front>
  using prepend = layers<Front..., Sizes...>;
};

template <class T>
inline constexpr bool is_layers = false;
template <int... S>
inline constexpr bool is_layers<layers<S...>> = true;

static_assert(layers<4, 32, 32, 1>::param_count == 4 * 32 + 32 + 32 * 32 + 32 + 32 + 1);
static_assert(layers<4, 32, 32, 1>::bias_offset(1) == 4 * 32 + 32 + 32 * 32);
static_assert(layers<4, 32, 32, 1>::activation_size == 65);
static_assert(layers<32, 32>::prepend<4>::append<2>::max_width == 32);

}  // namespace gmi::nn

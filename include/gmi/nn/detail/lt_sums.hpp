#pragma once
// The order of lt_mlp's column sums (the bias gradients where no product epilogue forms them): rows in chunks of
// lt_sum_chunk, each chunk's column summed by lt_sum_lanes strided lanes and the lanes then in order, the chunks
// in order after that. The kernels (nn/detail/lt_column_sums.cuh) and their host twins below share the per-lane
// loops, so the order is tested without a GPU. lt_dz_lane also forms the backward's dz = g * Act'(y) on the way:
// the dz pass and the bias gradient's first stage are one pass over the layer (no separate read of dz).

#include <algorithm>
#include <cstddef>
#include <vector>

#include <gmi/core/hd.hpp>

namespace gmi::nn::detail {

// Rows per chunk (one block of 32 x lt_sum_lanes threads a chunk of 32 columns) and lanes per column.
inline constexpr std::size_t lt_sum_chunk = 256;
inline constexpr int lt_sum_lanes = 8;
inline std::size_t lt_sum_chunks(std::size_t rows) {
  return std::max<std::size_t>(1, (rows + lt_sum_chunk - 1) / lt_sum_chunk);
}

// a + b rounded once (device: never contracted with the product before it into an FMA, so a sum over dz values
// formed on the way equals the sum over the stored ones).
GMI_HD inline float lt_add(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// Lane `lane` of column c in chunk `chunk` of a [rows][w] matrix m: the sum of m[r][c] over its rows.
GMI_HD inline float lt_column_lane(const float* m, std::size_t rows, int w, int c, std::size_t chunk, int lane) {
  const std::size_t begin = chunk * lt_sum_chunk, end = rows < begin + lt_sum_chunk ? rows : begin + lt_sum_chunk;
  float s = 0.0f;
  for (std::size_t r = begin + static_cast<std::size_t>(lane); r < end; r += lt_sum_lanes)
    s = lt_add(s, m[r * static_cast<std::size_t>(w) + c]);
  return s;
}

// The same lane forming dz[r][c] = g[r][c] * Act'(y[r][c]) first: store(r, c, dz) for each of its rows, and the
// sum of those dz values (the same bits as lt_column_lane over the stored fp32 dz).
template <class Act, class Store>
GMI_HD inline float lt_dz_lane(const float* g, const float* y, std::size_t rows, int w, int c, std::size_t chunk,
                               int lane, const Store& store) {
  const std::size_t begin = chunk * lt_sum_chunk, end = rows < begin + lt_sum_chunk ? rows : begin + lt_sum_chunk;
  float s = 0.0f;
  for (std::size_t r = begin + static_cast<std::size_t>(lane); r < end; r += lt_sum_lanes) {
    const std::size_t k = r * static_cast<std::size_t>(w) + c;
    const float v = g[k] * Act::grad_from_output(y[k]);
    store(r, c, v);
    s = lt_add(s, v);
  }
  return s;
}

// A chunk's column total from its lanes' sums, in lane order.
GMI_HD inline float lt_lanes_total(const float* lanes, int stride) {
  float t = 0.0f;
  for (int k = 0; k < lt_sum_lanes; ++k) t = lt_add(t, lanes[k * stride]);
  return t;
}

// Host twins. partial[chunk][c] of m, in the kernels' order.
inline std::vector<float> lt_column_partials_host(const float* m, std::size_t rows, int w) {
  const std::size_t chunks = lt_sum_chunks(rows);
  std::vector<float> partial(chunks * static_cast<std::size_t>(w));
  float lanes[lt_sum_lanes];
  for (std::size_t g = 0; g < chunks; ++g)
    for (int c = 0; c < w; ++c) {
      for (int k = 0; k < lt_sum_lanes; ++k) lanes[k] = lt_column_lane(m, rows, w, c, g, k);
      partial[g * static_cast<std::size_t>(w) + c] = lt_lanes_total(lanes, 1);
    }
  return partial;
}
// dz (rows x w) = g * Act'(y) and its partial[chunk][c], as the fused kernel forms them.
template <class Act>
inline std::vector<float> lt_dz_partials_host(const float* g, const float* y, std::size_t rows, int w, float* dz) {
  const std::size_t chunks = lt_sum_chunks(rows);
  std::vector<float> partial(chunks * static_cast<std::size_t>(w));
  float lanes[lt_sum_lanes];
  const auto store = [&](std::size_t r, int c, float v) { dz[r * static_cast<std::size_t>(w) + c] = v; };
  for (std::size_t ch = 0; ch < chunks; ++ch)
    for (int c = 0; c < w; ++c) {
      for (int k = 0; k < lt_sum_lanes; ++k) lanes[k] = lt_dz_lane<Act>(g, y, rows, w, c, ch, k, store);
      partial[ch * static_cast<std::size_t>(w) + c] = lt_lanes_total(lanes, 1);
    }
  return partial;
}
// out[c] = the chunks' partials of column c in chunk order (stage two).
inline std::vector<float> lt_column_finish_host(const std::vector<float>& partial, std::size_t chunks, int w) {
  std::vector<float> out(static_cast<std::size_t>(w), 0.0f);
  for (int c = 0; c < w; ++c)
    for (std::size_t g = 0; g < chunks; ++g) out[c] = lt_add(out[c], partial[g * static_cast<std::size_t>(w) + c]);
  return out;
}

}  // namespace gmi::nn::detail

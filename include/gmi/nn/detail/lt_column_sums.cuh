#pragma once
// lt_mlp's column sums on the GPU, in the order of nn/detail/lt_sums.hpp (whose host twins test it): the bias
// gradient where no product epilogue forms it, in two stages (chunks of rows per block, then the chunks in order),
// and the backward's dz pass that forms stage one on the way (lt_dz_partials: dz = g * Act'(y) into fp32 and / or
// bf16, and the partial column sums of dz, in one pass: no second read of dz, no fp32 dz where no product reads
// it). The same sums on every run, and the same bits whether stage one ran fused or on the stored fp32 dz.

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

#include <gmi/core/hd.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/nn/detail/lt_sums.hpp>

namespace gmi::nn::detail {

// Row r and column c of flat index k of a [rows][w] matrix of `total` elements: a 32-bit division where total
// allows (every minibatch here), not a 64-bit one, which costs these memory-bound passes about as much as their
// traffic.
__device__ inline void lt_row_col(std::size_t k, int w, std::size_t total, std::size_t& r, int& c) {
  if (total <= 0xffffffffull) {
    const unsigned q = static_cast<unsigned>(k) / static_cast<unsigned>(w);
    r = q;
    c = static_cast<int>(static_cast<unsigned>(k) - q * static_cast<unsigned>(w));
  } else {
    r = k / static_cast<std::size_t>(w);
    c = static_cast<int>(k - r * static_cast<std::size_t>(w));
  }
}

// The dz pass alone (network_config::fuse_dz_sums false): dz = g * Act'(y) into dz32 (may alias g) and, where
// given, its bf16 copy (row stride ld16).
template <class Act>
__global__ static void lt_dz_kernel(const float* g, const float* __restrict__ y, std::size_t rows, int w, float* dz32,
                                    __nv_bfloat16* __restrict__ dz16, int ld16) {
  const std::size_t total = rows * static_cast<std::size_t>(w);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += stride) {
    const float v = g[k] * Act::grad_from_output(y[k]);
    dz32[k] = v;
    if (dz16) {
      std::size_t r;
      int c;
      lt_row_col(k, w, total, r, c);
      dz16[r * ld16 + c] = __float2bfloat16_rn(v);
    }
  }
}

// Stage one: partial[chunk][c] = the sum of m[r][c] over the chunk's rows. Blocks of 32 x lt_sum_lanes threads,
// one column per x, one chunk per blockIdx.y, so a minibatch fills the GPU.
__global__ static void lt_column_partial_kernel(const float* __restrict__ m, std::size_t rows, int w,
                                                float* __restrict__ partial) {
  __shared__ float part[lt_sum_lanes][33];
  const int c = static_cast<int>(blockIdx.x) * 32 + static_cast<int>(threadIdx.x);
  part[threadIdx.y][threadIdx.x] =
      c < w ? lt_column_lane(m, rows, w, c, blockIdx.y, static_cast<int>(threadIdx.y)) : 0.0f;
  __syncthreads();
  if (threadIdx.y == 0 && c < w)
    partial[static_cast<std::size_t>(blockIdx.y) * w + c] = lt_lanes_total(&part[0][threadIdx.x], 33);
}

// Where a dz pass stores: fp32 (may alias its g) and bf16 (row stride ld16); either may be nullptr.
struct lt_dz_store {
  float* dz32;
  __nv_bfloat16* dz16;
  int w, ld16;
  GMI_HD void operator()(std::size_t r, int c, float v) const {
    if (dz32) dz32[r * static_cast<std::size_t>(w) + c] = v;
    if (dz16) dz16[r * static_cast<std::size_t>(ld16) + c] = __float2bfloat16_rn(v);
  }
};

// dz = g * Act'(y) stored by `store`, and stage one of its column sums into partial, in one pass.
template <class Act>
__global__ static void lt_dz_partial_kernel(const float* g, const float* __restrict__ y, std::size_t rows, int w,
                                            lt_dz_store store, float* __restrict__ partial) {
  __shared__ float part[lt_sum_lanes][33];
  const int c = static_cast<int>(blockIdx.x) * 32 + static_cast<int>(threadIdx.x);
  part[threadIdx.y][threadIdx.x] =
      c < w ? lt_dz_lane<Act>(g, y, rows, w, c, blockIdx.y, static_cast<int>(threadIdx.y), store) : 0.0f;
  __syncthreads();
  if (threadIdx.y == 0 && c < w)
    partial[static_cast<std::size_t>(blockIdx.y) * w + c] = lt_lanes_total(&part[0][threadIdx.x], 33);
}

// Stage two: out[c] = the chunks' partial sums of column c, in chunk order.
__global__ static void lt_column_finish_kernel(const float* __restrict__ partial, std::size_t chunks, int w,
                                               float* __restrict__ out) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= w) return;
  float t = 0.0f;
  for (std::size_t g = 0; g < chunks; ++g) t = lt_add(t, partial[g * w + c]);
  out[c] = t;
}

inline dim3 lt_sum_grid(std::size_t rows, int w) {
  return dim3(static_cast<unsigned>((w + 31) / 32), static_cast<unsigned>(lt_sum_chunks(rows)));
}

// Stage one alone (the split weight gradient's lt_chunk_sum_kernel does stage two in its own launch).
inline void lt_column_partial(const float* m, std::size_t rows, int w, float* partial, cudaStream_t s) {
  lt_column_partial_kernel<<<lt_sum_grid(rows, w), dim3(32, lt_sum_lanes), 0, s>>>(m, rows, w, partial);
  GMI_CUDA_TRY(cudaGetLastError());
}
// Stage two alone: out (w floats) from partial (lt_sum_chunks(rows) x w).
inline void lt_column_finish(const float* partial, std::size_t rows, int w, float* out, cudaStream_t s) {
  lt_column_finish_kernel<<<static_cast<unsigned>((w + 127) / 128), 128, 0, s>>>(partial, lt_sum_chunks(rows), w, out);
  GMI_CUDA_TRY(cudaGetLastError());
}
// out[c] = sum over rows of m[r][c] ([rows][w] row-major) in two launches; partial: lt_sum_chunks(rows) * w floats.
inline void lt_column_sum(const float* m, std::size_t rows, int w, float* partial, float* out, cudaStream_t s) {
  lt_column_partial(m, rows, w, partial, s);
  lt_column_finish(partial, rows, w, out, s);
}
inline unsigned lt_blocks(std::size_t total, int block) {
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>((total + block - 1) / block, 8192)));
}
template <class Act>
inline void lt_dz(const float* g, const float* y, std::size_t rows, int w, float* dz32, __nv_bfloat16* dz16, int ld16,
                  cudaStream_t s) {
  const std::size_t total = rows * static_cast<std::size_t>(w);
  lt_dz_kernel<Act><<<lt_blocks(total, 256), 256, 0, s>>>(g, y, rows, w, dz32, dz16, ld16);
  GMI_CUDA_TRY(cudaGetLastError());
}
// dz = g * Act'(y) ([rows][w]) into dz32 (may alias g; nullptr: not stored) and dz16 (row stride ld16; nullptr:
// not stored), and partial (lt_sum_chunks(rows) x w) = stage one of dz's column sums, in one launch.
template <class Act>
inline void lt_dz_partials(const float* g, const float* y, std::size_t rows, int w, float* dz32, __nv_bfloat16* dz16,
                           int ld16, float* partial, cudaStream_t s) {
  lt_dz_partial_kernel<Act><<<lt_sum_grid(rows, w), dim3(32, lt_sum_lanes), 0, s>>>(
      g, y, rows, w, lt_dz_store{dz32, dz16, w, ld16}, partial);
  GMI_CUDA_TRY(cudaGetLastError());
}

}  // namespace gmi::nn::detail

#pragma once
// Kernels of a global sample over device shards (device_shard_set::sample_global): the shards' totals read from
// their sum-trees' roots into prefix sums (one thread, shard order), the draws (one thread each, the code of
// global_draw.hpp), the importance weights (one block: the batch's smallest probability, then each weight), and
// the windows gathered from each draw's shard (one block each).

#include <cuda_runtime.h>

#include <cstdint>

#include <gmi/replay/detail/global_draw.hpp>
#include <gmi/replay/detail/kernels.cuh>

namespace gmi::replay::detail {

inline constexpr int global_weight_block = 1024;

// totals[k] = shard k's root; prefix[0 .. count] their prefix sums.
__global__ static void global_roots_kernel(const table_ref* shards, int count, bool prioritized, double* totals,
                                           double* prefix) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  for (int k = 0; k < count; ++k) totals[k] = (prioritized ? shards[k].prio_tree : shards[k].size_tree)[1];
  global_prefix(totals, count, prefix);
}

// Draw b: shard, key and global probability; counts[shard] += 1 (the placement's access counts).
__global__ static void global_draw_kernel(const table_ref* shards, int count, bool prioritized, const double* prefix,
                                          std::uint64_t seed, const std::uint64_t* seed_offset, std::int64_t n,
                                          std::int32_t* shard, std::int32_t* keys, double* prob,
                                          unsigned long long* counts) {
  const std::int64_t b = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (b >= n) return;
  const std::uint64_t s = seed_offset ? seed + *seed_offset : seed;
  const global_pick p = global_draw(shards, count, prioritized, prefix, s, static_cast<std::uint64_t>(b));
  shard[b] = p.shard;
  keys[b] = p.key;
  prob[b] = p.probability;
  if (counts && p.shard >= 0) atomicAdd(counts + p.shard, 1ull);
}

// The smallest of every thread's m in a block of global_weight_block threads (every thread gets it); low: that many
// doubles of shared memory.
__device__ inline double block_min(double m, double* low) {
  low[threadIdx.x] = m;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (static_cast<int>(threadIdx.x) < w && low[threadIdx.x + w] < low[threadIdx.x])
      low[threadIdx.x] = low[threadIdx.x + w];
    __syncthreads();
  }
  return low[0];
}

// weight[b] = (p_min / prob[b])^beta, p_min the smallest positive probability of the batch (1 if none): one block
// of global_weight_block threads. The minimum is exact in any order, so the host's loop gives the same p_min.
__global__ static void global_weights_kernel(const double* prob, std::int64_t n, double beta, float* weight) {
  __shared__ double low[global_weight_block];
  double m = 1.0;
  for (std::int64_t b = threadIdx.x; b < n; b += blockDim.x)
    if (prob[b] > 0.0 && prob[b] < m) m = prob[b];
  const double p_min = block_min(m, low);
  for (std::int64_t b = threadIdx.x; b < n; b += blockDim.x) weight[b] = importance_weight(prob[b], p_min, beta);
}

// Window b from shard shard[b] (one block each; slots: length ints of dynamic shared memory). A draw that found
// no shard (every total 0) gets an all-padding window: zeros, mask 0.
__global__ static void global_gather_kernel(const table_ref* shards, const std::int32_t* shard, gather_args g) {
  extern __shared__ std::int32_t slots[];
  const std::int64_t b = blockIdx.x;
  if (shard[b] < 0) {
    const table_ref& t = shards[0];
    for (std::int32_t i = threadIdx.x; i < g.length; i += blockDim.x) g.mask[b * g.length + i] = 0.0f;
    for (int c = 0; c < t.num_cols; ++c) {
      const std::int64_t words = static_cast<std::int64_t>(g.length) * t.cols[c].width;
      for (std::int64_t j = threadIdx.x; j < words; j += blockDim.x) g.dst[c][b * words + j] = 0u;
    }
    return;
  }
  gather_window(shards[shard[b]], g, b, slots);
}

}  // namespace gmi::replay::detail

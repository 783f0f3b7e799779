#pragma once
// The device table's kernels: insert (one block per env of a rollout), sum-tree upkeep, draws, the key pass of
// ordered samplers, and window gathers that read host-resident slots zero-copy through mapped pointers.

#include <cuda_runtime.h>

#include <cstdint>

#include <gmi/core/hd.hpp>
#include <gmi/replay/detail/algorithms.hpp>

namespace gmi::replay::detail {

struct insert_args {
  const std::uint32_t* src[16];  // [horizon, envs, width_c]
  const float* priorities;       // [horizon, envs] or null
  float default_priority;
  double exponent;
  std::int32_t horizon, envs;
  std::int32_t contiguous_base;  // >= 0: slot of item i is base + i; else slots[i]
  const std::int32_t* slots;
  const std::int32_t* link_from;  // [envs]
  std::int64_t* w_traj;
  std::int32_t* w_step;
  std::int64_t* w_episodes;
  std::int64_t traj_base;
  std::uint64_t seq_base;
};

GMI_DEVICE inline std::int32_t insert_slot(const insert_args& a, std::int64_t i) {
  return a.contiguous_base >= 0 ? a.contiguous_base + static_cast<std::int32_t>(i) : a.slots[i];
}

GMI_DEVICE inline bool done_bits(std::uint32_t bits, bool is_f32) {
  return is_f32 ? (bits & 0x7FFFFFFFu) != 0u : bits != 0u;
}

// One block per env: thread 0 walks the env's steps for trajectory ids and links, all threads copy words.
__global__ static void insert_kernel(table_ref t, insert_args a, bool done_f32) {
  const std::int64_t e = blockIdx.x;
  const std::int64_t base = e * a.horizon;
  if (threadIdx.x == 0) {
    const auto slot_of = [&](std::int32_t k) { return insert_slot(a, base + k); };
    const auto done_of = [&](std::int32_t k) {
      return t.done_col >= 0 && done_bits(a.src[t.done_col][static_cast<std::int64_t>(k) * a.envs + e], done_f32);
    };
    insert_env_meta(t, a.w_traj[e], a.w_step[e], a.w_episodes[e], a.traj_base, a.envs, e, a.link_from[e], a.horizon,
                    a.seq_base, slot_of, done_of);
  }
  for (std::int32_t k = threadIdx.x; k < a.horizon; k += blockDim.x) {
    const std::int32_t slot = insert_slot(a, base + k);
    const float p = a.priorities ? a.priorities[static_cast<std::int64_t>(k) * a.envs + e] : a.default_priority;
    t.prio_tree[t.leaves + slot] = a.exponent == 1.0 ? static_cast<double>(p) : pow(static_cast<double>(p), a.exponent);
    t.size_tree[t.leaves + slot] = 1.0;
  }
  for (int c = 0; c < t.num_cols; ++c) {
    const std::uint32_t w = t.cols[c].width;
    const std::int64_t words = static_cast<std::int64_t>(a.horizon) * w;
    for (std::int64_t j = threadIdx.x; j < words; j += blockDim.x) {
      const std::int64_t k = j / w, i = j - k * w;
      t.row(c, insert_slot(a, base + k))[i] = a.src[c][(k * a.envs + e) * w + i];
    }
  }
}

// Ancestors `level` steps above the given leaves (level 1 = parents), for a batch of changed slots.
__global__ static void tree_level_kernel(table_ref t, const std::int32_t* slots, std::int32_t contiguous_base,
                                         std::int64_t n, int level) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const std::int64_t slot = contiguous_base >= 0 ? contiguous_base + i : slots[i];
  const std::int64_t node = (t.leaves + slot) >> level;
  tree_refresh(t.prio_tree, node);
  tree_refresh(t.size_tree, node);
}

// Every node of one level [first, first + count).
__global__ static void tree_rebuild_kernel(table_ref t, std::int64_t first, std::int64_t count) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  tree_refresh(t.prio_tree, first + i);
  tree_refresh(t.size_tree, first + i);
}

// Removed slots: empty metadata and zero leaves.
__global__ static void clear_kernel(table_ref t, const std::int32_t* slots, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const std::int32_t s = slots[i];
  t.traj[s] = -1;
  t.seq[s] = 0;
  t.next[s] = -1;
  t.prio_tree[t.leaves + s] = 0.0;
  t.size_tree[t.leaves + s] = 0.0;
}

// Priority updates: present slots only (an item removed since it was sampled keeps its empty leaf).
__global__ static void set_priority_kernel(table_ref t, const std::int32_t* keys, const float* prios, std::int64_t n,
                                           double exponent) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const std::int32_t s = keys[i];
  if (s < 0 || s >= t.capacity || t.seq[s] == 0) return;
  const double p = prios[i] > 0.0f ? static_cast<double>(prios[i]) : 0.0;
  t.prio_tree[t.leaves + s] = exponent == 1.0 ? p : pow(p, exponent);
}

__global__ static void tree_level_keys_kernel(table_ref t, const std::int32_t* keys, std::int64_t n, int level) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const std::int32_t s = keys[i];
  if (s < 0 || s >= t.capacity) return;
  tree_refresh(t.prio_tree, (t.leaves + s) >> level);
}

// seed_offset (device memory, or null): added to seed when the kernel runs, so a captured graph draws anew each replay.
__global__ static void draw_kernel(table_ref t, bool prioritized, std::uint64_t seed, const std::uint64_t* seed_offset,
                                   std::int64_t n, std::int32_t* keys, double* prob) {
  const std::int64_t b = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (b >= n) return;
  const double* tree = prioritized ? t.prio_tree : t.size_tree;
  const std::uint64_t s = seed_offset ? seed + *seed_offset : seed;
  const std::int32_t k = tree_draw(tree, t.leaves, unit_draw(s, static_cast<std::uint64_t>(b)));
  keys[b] = k;
  prob[b] = tree_probability(tree, t.leaves, k);
}

__global__ static void order_key_kernel(table_ref t, int kind, int score_col, std::uint64_t* keys,
                                        std::int32_t* slots) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= t.capacity) return;
  keys[i] = order_key(t, kind, score_col, static_cast<std::int32_t>(i));
  slots[i] = static_cast<std::int32_t>(i);
}

__global__ static void fill_kernel(double* p, std::int64_t n, double v) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) p[i] = v;
}

struct gather_args {
  std::uint32_t* dst[16];  // [batch, length, width_c]
  float* mask;             // [batch, length]
  const std::int32_t* keys;
  std::int32_t length;
};

// Window b of a batch, by the whole block (slots: length ints of shared memory): each thread checks a step in
// the slot after the previous (the common case), thread 0 follows links from the first miss, then the block
// copies the window's words with zeros for padding.
__device__ inline void gather_window(const table_ref& t, const gather_args& g, std::int64_t b, std::int32_t* slots) {
  __shared__ std::int32_t first_miss;
  const std::int32_t start = g.keys[b];
  if (threadIdx.x == 0) first_miss = g.length;
  __syncthreads();
  for (std::int32_t i = threadIdx.x; i < g.length; i += blockDim.x) {
    const std::int32_t s = i == 0 ? start : window_slot_contiguous(t, start, i);
    slots[i] = s;
    if (s < 0) atomicMin(&first_miss, i);
  }
  __syncthreads();
  if (threadIdx.x == 0 && first_miss < g.length)
    window_follow(t, start, first_miss - 1, slots[first_miss - 1], g.length, slots);
  __syncthreads();
  for (std::int32_t i = threadIdx.x; i < g.length; i += blockDim.x)
    g.mask[b * g.length + i] = slots[i] >= 0 ? 1.0f : 0.0f;
  for (int c = 0; c < t.num_cols; ++c) {
    const std::uint32_t w = t.cols[c].width;
    const std::int64_t words = static_cast<std::int64_t>(g.length) * w;
    std::uint32_t* out = g.dst[c] + b * words;
    for (std::int64_t j = threadIdx.x; j < words; j += blockDim.x) {
      const std::int64_t k = j / w;
      const std::int32_t s = slots[k];
      out[j] = s >= 0 ? t.row(c, s)[j - k * w] : 0u;
    }
  }
}

// One block per window of one table.
__global__ static void gather_kernel(table_ref t, gather_args g) {
  extern __shared__ std::int32_t slots[];
  gather_window(t, g, blockIdx.x, slots);
}

inline unsigned blocks_for(std::int64_t n, unsigned threads = 256) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace gmi::replay::detail

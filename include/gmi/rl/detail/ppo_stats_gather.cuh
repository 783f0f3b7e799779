#pragma once
// A synced PPO iteration's rollout statistics gathered inside one kernel through the group's row exchange (the
// one its minibatch steps use): every member's records [count | mean | M2] of advantages, observations and
// returns, merged in rank order, with no trip through the host; so a synced iteration replays as one graph.

#include <cstddef>
#include <cstdint>

#include <gmi/comm/row_exchange.cuh>
#include <gmi/rl/detail/stats_words.hpp>

namespace gmi::rl::detail {

struct ppo_stats_gather_args {
  comm::row_exchange exchange;
  const double* local = nullptr;      // this member's records (values doubles)
  float* own = nullptr;               // this member's exchanged row (its gradient buffer)
  float* sums = nullptr;              // scratch of gather_words(world, values) floats
  double* merged = nullptr;           // values doubles: each record merged over the group in rank order
  float* advantage_stats = nullptr;   // null: advantages are not normalized; else mean, 1 / (std + 1e-8)
  int values = 0;                     // doubles a member contributes
  int part_at[3] = {}, part_dim[3] = {};  // the records: where each starts and its dim
};

// One block. Each member writes its values as words into its own slot of its row (zeros elsewhere); the group's
// sum of the rows is then every member's values, bit for bit. If an exchange wait gives up, the kernel stops
// there (the host finds the stall word set).
__global__ static void ppo_stats_gather_kernel(ppo_stats_gather_args a) {
  __shared__ std::uint32_t scratch[2];
  const comm::row_exchange& x = a.exchange;
  const int world = x.members();
  const int slot = words_per_double * a.values;
  const int words = world * slot;
  const int rank = x.gpu * x.size + x.rank;
  std::uint32_t g = 0;
  if (!comm::exchange_begin(x, g, scratch)) return;
  for (int q = static_cast<int>(threadIdx.x); q < words; q += static_cast<int>(blockDim.x)) a.own[q] = 0.0f;
  __syncthreads();  // every zero is written before any record word: another thread may zero the word a record takes
  for (int i = static_cast<int>(threadIdx.x); i < a.values; i += static_cast<int>(blockDim.x))
    double_to_words(a.local[i], a.own + rank * slot + i * words_per_double);
  if (!comm::exchange_post(x, g, scratch)) return;
  for (int q = static_cast<int>(threadIdx.x); q < words; q += static_cast<int>(blockDim.x))
    a.sums[q] = comm::exchange_gpu_sum(x, g, q);
  if (x.gpus > 1) {
    if (!comm::exchange_across(x, g, static_cast<std::size_t>(words))) return;
    for (int q = static_cast<int>(threadIdx.x); q < words; q += static_cast<int>(blockDim.x))
      a.sums[q] = comm::exchange_total(x, g, q, a.sums[q]);
  }
  comm::exchange_release(x, g);  // its barrier: every thread's sums are written
  if (threadIdx.x >= 3) return;
  const int part = static_cast<int>(threadIdx.x);  // one thread per record
  const float* sums = a.sums;
  const int values = a.values, at = a.part_at[part];
  auto value = [=](int r, int i) { return words_to_double(sums + (r * values + at + i) * words_per_double); };
  merge_in_order_rn(world, a.part_dim[part], value, a.merged + at);
  if (part == 0 && a.advantage_stats) advantage_scale_rn(a.merged + at, a.advantage_stats);
}

}  // namespace gmi::rl::detail

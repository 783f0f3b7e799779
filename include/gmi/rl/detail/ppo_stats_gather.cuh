#pragma once
// A synced PPO iteration's rollout statistics gathered inside one kernel through the group's row exchange (the
// one its minibatch steps use): every member's records [count | mean | M2] of advantages, observations and
// returns, merged in rank order (spread over the block's threads), with no trip through the host; so a synced
// iteration replays as one graph.

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

// The kernel's block (its loops stride over whatever it is launched with; ppo_device_ops launches this many).
inline constexpr int ppo_stats_gather_block = 1024;
// Members a row exchange can have: every GMI of up to max_gpus GPUs.
inline constexpr int ppo_stats_gather_max_world = comm::row_exchange::max_members * comm::row_exchange::max_gpus;

// One block. Each member writes its values as words into its own slot of its row (zeros elsewhere); the group's
// sum of the rows is then every member's values, bit for bit. Every member then merges the records in rank order
// (merge_in_order_rn's bits) spread over the block: three threads add up each record's counts, a thread per
// (record, member) works out its merge weights, and a thread per feature merges that feature over the members,
// so a group of 32 is not 32 x features dependent divisions in one thread. If an exchange wait gives up, the
// kernel stops there (the host finds the stall word set).
__global__ static void __launch_bounds__(ppo_stats_gather_block) ppo_stats_gather_kernel(ppo_stats_gather_args a) {
  __shared__ std::uint32_t scratch[2];
  __shared__ double running[3][ppo_stats_gather_max_world + 1];
  __shared__ merge_weights weights[3][ppo_stats_gather_max_world];
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
  // (record p's place and dim picked without indexing the parameter arrays, which would copy them to the stack)
  const auto part_at = [&](int p) { return p == 0 ? a.part_at[0] : p == 1 ? a.part_at[1] : a.part_at[2]; };
  const auto part_dim = [&](int p) { return p == 0 ? a.part_dim[0] : p == 1 ? a.part_dim[1] : a.part_dim[2]; };
  const auto record = [sums = a.sums, values = a.values](int at) {
    return [=](int r, int i) { return words_to_double(sums + (r * values + at + i) * words_per_double); };
  };
  const int t = static_cast<int>(threadIdx.x);
  if (t < 3) merge_counts_rn(world, record(part_at(t)), running[t]);
  __syncthreads();
  for (int k = t; k < 3 * world; k += static_cast<int>(blockDim.x)) {
    const int part = k / world, r = k % world;
    if (r > 0) weights[part][r] = merge_weights_rn(running[part][r], record(part_at(part))(r, 0));
  }
  __syncthreads();
  const int features = a.part_dim[0] + a.part_dim[1] + a.part_dim[2];
  for (int k = t; k < features; k += static_cast<int>(blockDim.x)) {
    int part = 0, f = k;
    while (f >= part_dim(part)) {
      f -= part_dim(part);
      ++part;
    }
    const int dim = part_dim(part);
    double* out = a.merged + part_at(part);
    double mean = 0, m2 = 0;
    merge_feature_in_order_rn(world, dim, f, record(part_at(part)), [&](int r) { return weights[part][r]; }, mean, m2);
    out[1 + f] = mean;
    out[1 + dim + f] = m2;
    if (f == 0) out[0] = running[part][world];
  }
  // thread 0 merged the advantages' only feature (k = 0) and wrote their record itself
  if (t == 0 && a.advantage_stats) advantage_scale_rn(a.merged + a.part_at[0], a.advantage_stats);
}

}  // namespace gmi::rl::detail

#pragma once
// The rest of a PPO minibatch step once the gradient's partial rows exist: their sum, the group's mean through a
// row exchange (synced GMIs of one GPU), Adam in one block, the adaptive-KL rule: ppo_step_kernel, one launch
// after the gradient kernel.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <gmi/cuda/row_exchange.cuh>
#include <gmi/nn/adam.cuh>
#include <gmi/rl/ppo_steps.hpp>

namespace gmi::rl::detail {

// lr_schedule::adaptive_kl after a step, from the step's logged KL (rl_games' rule).
__device__ inline void ppo_adapt_lr(const float* terms, float* lr, float kl_target, float min_lr, float max_lr) {
  const float kl = terms[term_kl];
  float next = *lr;
  if (kl > 2.0f * kl_target) next = fmaxf(next / 1.5f, min_lr);
  else if (kl < 0.5f * kl_target) next = fminf(next * 1.5f, max_lr);
  *lr = next;
}

__global__ static void ppo_adapt_lr_kernel(const float* terms, float* lr, float kl_target, float min_lr, float max_lr) {
  ppo_adapt_lr(terms, lr, kl_target, min_lr, max_lr);
}

// What one minibatch step needs after the gradient kernel (ppo_step_kernel).
struct ppo_step_args {
  const float* parts = nullptr;  // rows whose sum in order is this GMI's gradient row
  std::size_t part_count = 0;
  int row = 0, param_count = 0;
  float* own = nullptr;       // this GMI's gradient row (its gradient buffer, the row it exchanges)
  float* mean = nullptr;      // the row Adam takes: own, or with an exchange the group's mean
  float* term_log = nullptr;  // this step's loss terms (the group's means with an exchange)
  float* params = nullptr;
  nn::adam_block_step adam;
  cuda::row_exchange exchange;  // size 0: none
  bool adapt_lr = false;        // lr_schedule::adaptive_kl: the lr after this step from the logged KL
  float* lr = nullptr;
  float kl_target = 0, min_lr = 0, max_lr = 0;
};

// For every column q < row, by the threads of one block: out(q, rows 0 + ... + rows count-1 at q), added in row
// order (from 0.0f, as ppo_sum_rows_kernel; or FromFirst from row 0, as the allreduce's sum, count >= 1) and read
// past L1 (the peers' rows come from other GMIs). `rows` is a base (row r at rows + r * row) or an array of row
// pointers. A thread takes four columns at a time, so that their loads overlap.
template <bool FromFirst = false, class Rows, class Out>
__device__ inline void sum_rows_in_order(Rows rows, std::size_t count, int row, Out out) {
  constexpr int batch = 4;
  const int step = static_cast<int>(blockDim.x);
  for (int q0 = static_cast<int>(threadIdx.x); q0 < row; q0 += batch * step) {
    auto row_at = [&](std::size_t r) -> const float* {
      if constexpr (std::is_pointer_v<std::remove_pointer_t<Rows>>) return rows[r];
      else return rows + r * static_cast<std::size_t>(row);
    };
    float s[batch];
#pragma unroll
    for (int k = 0; k < batch; ++k) s[k] = FromFirst && q0 + k * step < row ? __ldcg(row_at(0) + q0 + k * step) : 0.0f;
    for (std::size_t r = FromFirst ? 1 : 0; r < count; ++r) {
      const float* at = row_at(r);
#pragma unroll
      for (int k = 0; k < batch; ++k)
        if (q0 + k * step < row) s[k] += __ldcg(at + q0 + k * step);
    }
#pragma unroll
    for (int k = 0; k < batch; ++k)
      if (q0 + k * step < row) out(q0 + k * step, s[k]);
  }
}

// One minibatch step after the gradient kernel, in one block (one launch): this GMI's row from its parts (the
// order of ppo_sum_rows_kernel); with an exchange (without one it is a plain step), the group's rows summed in
// rank order and divided by the group's size (the order of the hierarchical allreduce's one-GPU sum and
// ppo_average_rows_kernel); Adam; the adaptive-KL rule (ppo_adapt_lr_kernel's). The same bits as those kernels
// one after another. If an exchange wait gives up, the step stops there (the host finds the stall word set).
__global__ static void __launch_bounds__(nn::detail::adam_fused_block) ppo_step_kernel(ppo_step_args a) {
  __shared__ double shared[nn::detail::adam_fused_block];
  __shared__ std::uint32_t scratch[2];
  const bool exchanged = a.exchange.size > 0;
  std::uint32_t g = 0;
  if (exchanged && !cuda::exchange_begin(a.exchange, g, scratch)) return;
  sum_rows_in_order(a.parts, a.part_count, a.row, [&](int q, float s) {
    a.own[q] = s;
    if (!exchanged && q >= a.param_count) a.term_log[q - a.param_count] = s;
  });
  if (exchanged) {
    if (!cuda::exchange_post(a.exchange, g, scratch)) return;
    const float world = static_cast<float>(a.exchange.size);
    sum_rows_in_order<true>(a.exchange.rows, a.exchange.size, a.row, [&](int q, float s) {
      const float m = s / world;
      a.mean[q] = m;
      if (q >= a.param_count) a.term_log[q - a.param_count] = m;
    });
    cuda::exchange_release(a.exchange, g);
  }
  __syncthreads();
  a.adam(a.params, a.mean, shared);
  if (a.adapt_lr) {
    __syncthreads();  // every thread has read lr for this step
    if (threadIdx.x == 0) ppo_adapt_lr(a.term_log, a.lr, a.kl_target, a.min_lr, a.max_lr);
  }
}

}  // namespace gmi::rl::detail

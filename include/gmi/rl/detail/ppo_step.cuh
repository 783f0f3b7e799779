#pragma once
// The rest of a PPO minibatch step once the gradient's partial rows exist: their sum, the group's mean through a
// row exchange (synced GMIs of one GPU), Adam in one block, the adaptive-KL rule: ppo_step_kernel, one launch
// after the gradient kernel.

#include <cstddef>
#include <cstdint>

#include <gmi/comm/row_exchange.cuh>
#include <gmi/nn/adam.cuh>
#include <gmi/rl/ppo_config.hpp>
#include <gmi/rl/ppo_steps.hpp>

namespace gmi::rl::detail {

// lr_schedule::adaptive_kl and kl_capped after a step, from the step's logged KL (rl_games' rule).
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

// lr_schedule::linear: the lr of the update that follows `done` updates (ppo_config.hpp's rule).
__global__ static void ppo_linear_lr_kernel(const std::uint64_t* done, float* lr, float lr0, float lr_min, double span) {
  *lr = linear_learning_rate(lr0, lr_min, static_cast<double>(*done), span);
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
  comm::row_exchange exchange;  // size 0: none
  bool adapt_lr = false;        // lr_schedule::adaptive_kl: the lr after this step from the logged KL
  float* lr = nullptr;
  float kl_target = 0, min_lr = 0, max_lr = 0;
};

// One minibatch step after the gradient kernel, in one block (one launch; Adam's parameters and moments are
// loaded before the exchange's waits): this GMI's row from its parts (the
// order of ppo_sum_rows_kernel); with an exchange (without one it is a plain step), the group's rows summed in
// rank order and divided by the group's size (the order of the hierarchical allreduce's one-GPU sum and
// ppo_average_rows_kernel; with a level across GPUs, the GPUs' sums added in GPU order before the division, and
// a GPU's only GMI pushing its row across as it sums it);
// Adam; the adaptive-KL rule (ppo_adapt_lr_kernel's). The same bits as those kernels
// one after another. If an exchange wait gives up, the step stops there (the host finds the stall word set).
__global__ static void __launch_bounds__(nn::adam_fused_block) ppo_step_kernel(ppo_step_args a) {
  __shared__ double shared[nn::adam_fused_block];
  __shared__ std::uint32_t scratch[2];
  const bool exchanged = a.exchange.size > 0;
  nn::adam_block_step::held held;  // Adam's parameters and moments: loaded before any wait
  a.adam.prefetch(a.params, held);
  std::uint32_t g = 0;
  if (exchanged && !comm::exchange_begin(a.exchange, g, scratch)) return;
  // One GMI on its GPU (then there is a level across GPUs): its row is its GPU's sum, pushed across as it forms.
  const bool alone = exchanged && a.exchange.size == 1;
  for (int q = static_cast<int>(threadIdx.x); q < a.row; q += static_cast<int>(blockDim.x)) {
    float s = 0.0f;
#pragma unroll 16
    for (std::size_t w = 0; w < a.part_count; ++w) s += a.parts[w * a.row + q];  // loads overlap, adds in order
    a.own[q] = s;
    if (!exchanged && q >= a.param_count) a.term_log[q - a.param_count] = s;
    if (alone) {
      comm::exchange_push(a.exchange, g, static_cast<std::size_t>(q), s);
      a.mean[q] = s;  // this GPU's sum, until every GPU's is there
    }
  }
  if (exchanged) {
    if (!comm::exchange_post(a.exchange, g, scratch)) return;
    const float world = static_cast<float>(a.exchange.members());
    const bool across = a.exchange.gpus > 1;
    for (int q = static_cast<int>(threadIdx.x); q < a.row && !alone; q += static_cast<int>(blockDim.x)) {
      const float s = comm::exchange_gpu_sum(a.exchange, g, q);
      if (across) {
        a.mean[q] = s;  // this GPU's sum, until every GPU's is there
        continue;
      }
      const float m = s / world;
      a.mean[q] = m;
      if (q >= a.param_count) a.term_log[q - a.param_count] = m;
    }
    if (across) {
      // two entries a poll: four spill Adam's values held in registers (64 a thread at 1024 threads)
      if (!comm::exchange_across<2>(a.exchange, g, static_cast<std::size_t>(a.row))) return;
      for (int q = static_cast<int>(threadIdx.x); q < a.row; q += static_cast<int>(blockDim.x)) {
        const float m = comm::exchange_total(a.exchange, g, q, a.mean[q]) / world;
        a.mean[q] = m;
        if (q >= a.param_count) a.term_log[q - a.param_count] = m;
      }
    }
    comm::exchange_release(a.exchange, g);
  }
  __syncthreads();
  a.adam(a.params, a.mean, shared, held);
  if (a.adapt_lr) {
    __syncthreads();  // every thread has read lr for this step
    if (threadIdx.x == 0) ppo_adapt_lr(a.term_log, a.lr, a.kl_target, a.min_lr, a.max_lr);
  }
}

}  // namespace gmi::rl::detail

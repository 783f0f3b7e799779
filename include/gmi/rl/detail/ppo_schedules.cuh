#pragma once
// The GPU trainer's schedules and log-std bounds (rl/ppo.cuh): before an update, the linear lr and entropy
// weight of that update from the device's iteration counter (capturable: a replayed graph reads the counter); after
// each Adam step, the Gaussian's log-std parameters clamped into [log_std_min, log_std_max].

#include <cuda_runtime_api.h>

#include <cstdint>

#include <gmi/cuda/check.hpp>
#include <gmi/rl/detail/ppo_step.cuh>
#include <gmi/rl/ppo_config.hpp>

namespace gmi::rl::detail {

// entropy_schedule::linear: the entropy weight of the update that follows `done` updates (ppo_config.hpp's rule).
__global__ static void ppo_entropy_coef_kernel(const std::uint64_t* done, float* coef, float c0, float c_min, double span) {
  *coef = linear_entropy_coef(c0, c_min, static_cast<double>(*done), span);
}

__global__ static void ppo_bound_log_std_kernel(float* log_std, int n, float lo, float hi) {
  if (threadIdx.x == 0 && blockIdx.x == 0) bound_log_std(log_std, n, lo, hi);
}

// Before an update's steps: its lr (lr_schedule::linear) and entropy weight (entropy_schedule::linear) from
// `done`, the updates before it; spans in updates (ppo_trainer::decay_span).
inline void enqueue_ppo_schedules(const ppo_config& c, const std::uint64_t* done, float* lr, double lr_span,
                                  float* entropy_coef, double entropy_span, cudaStream_t s) {
  if (c.schedule == lr_schedule::linear) {
    ppo_linear_lr_kernel<<<1, 1, 0, s>>>(done, lr, c.learning_rate, c.min_learning_rate, lr_span);
    GMI_CUDA_TRY(cudaGetLastError());
  }
  if (c.entropy_decay == entropy_schedule::linear) {
    ppo_entropy_coef_kernel<<<1, 1, 0, s>>>(done, entropy_coef, c.entropy_coef, c.min_entropy_coef, entropy_span);
    GMI_CUDA_TRY(cudaGetLastError());
  }
}

// After an Adam step: the n log-std parameters at log_std into the config's bounds (nothing when both are infinite
// or there is no log-std).
inline void enqueue_bound_log_std(const ppo_config& c, float* log_std, int n, cudaStream_t s) {
  if (n == 0 || !bounds_log_std(c)) return;
  ppo_bound_log_std_kernel<<<1, 32, 0, s>>>(log_std, n, c.log_std_min, c.log_std_max);
  GMI_CUDA_TRY(cudaGetLastError());
}

}  // namespace gmi::rl::detail

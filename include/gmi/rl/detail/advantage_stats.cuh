#pragma once
// The PPO trainer's advantage statistics on the device (moved out of rl/ppo.cuh): the rollout's mean and M2 in one
// block, in double, by a fixed tree; its mean and 1 / (std + 1e-8), or its record for a synced group's gather; and
// with ppo_config::advantage_window > 1 the window's (rl/advantage_window.hpp), merged by one thread.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include <gmi/cuda/check.hpp>
#include <gmi/rl/advantage_window.hpp>
#include <gmi/rl/detail/stats_words.hpp>

namespace gmi::rl::detail {

// mean and M2 (sum of squared deviations) of n advantages, in one block of up to 1024 threads, in double, by a
// fixed tree; every thread returns them.
__device__ inline void block_advantage_moments(const float* adv, std::uint32_t n, double& mean_out, double& m2_out) {
  __shared__ double sums[1024];
  double s = 0;
  for (std::uint32_t k = threadIdx.x; k < n; k += blockDim.x) s += adv[k];
  sums[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) sums[threadIdx.x] += sums[threadIdx.x + w];
    __syncthreads();
  }
  const double mean = sums[0] / n;
  __syncthreads();
  double q = 0;
  for (std::uint32_t k = threadIdx.x; k < n; k += blockDim.x) q += (adv[k] - mean) * (adv[k] - mean);
  sums[threadIdx.x] = q;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) sums[threadIdx.x] += sums[threadIdx.x + w];
    __syncthreads();
  }
  mean_out = mean;
  m2_out = sums[0];
}

// mean and 1 / (std + 1e-8) (unbiased std, as torch's) of n advantages, in one block, in double.
__global__ static void ppo_advantage_stats_kernel(const float* adv, std::uint32_t n, float* stats) {
  double mean, m2;
  block_advantage_moments(adv, n, mean, m2);
  if (threadIdx.x == 0) {
    const double std = n > 1 ? sqrt(m2 / (n - 1)) : 0.0;
    stats[0] = static_cast<float>(mean);
    stats[1] = static_cast<float>(1.0 / (std + 1e-8));
  }
}

// Synced runs: the record [n | mean | M2] of this trainer's advantages, for the group's all-gather.
__global__ static void ppo_advantage_moments_kernel(const float* adv, std::uint32_t n, double* record) {
  double mean, m2;
  block_advantage_moments(adv, n, mean, m2);
  if (threadIdx.x == 0) {
    record[0] = static_cast<double>(n);
    record[1] = mean;
    record[2] = m2;
  }
}

// advantage_window > 1: held[0..2] is this rollout's record (ppo_advantage_moments_kernel's), held[3..5] the
// window's; the scale comes from the window's after the merge, as the host trainer's (advantage_window_scale).
__global__ static void ppo_advantage_window_kernel(double* held, int rollouts, double rollout, float* stats) {
  advantage_window_scale(held + 3, held, rollouts, rollout, stats);
}

// The unsynced trainer's advantage statistics of a rollout of `total` samples into stats (mean, 1 / (std + 1e-8)).
inline void enqueue_advantage_stats(const float* adv, std::size_t total, int rollouts, double* held, float* stats,
                                    cudaStream_t stream) {
  const auto n = static_cast<std::uint32_t>(total);
  if (rollouts <= 1) {
    ppo_advantage_stats_kernel<<<1, 1024, 0, stream>>>(adv, n, stats);
  } else {
    ppo_advantage_moments_kernel<<<1, 1024, 0, stream>>>(adv, n, held);
    ppo_advantage_window_kernel<<<1, 1, 0, stream>>>(held, rollouts, static_cast<double>(total), stats);
  }
  GMI_CUDA_TRY(cudaGetLastError());
}

}  // namespace gmi::rl::detail

#pragma once
// policy_server on exec::cuda: the serving kernel of ppo.cuh (one thread per environment, weights in shared memory
// where they fit), launched for the server's environments. Include in a .cu file.

#include <cuda_runtime_api.h>

#include <gmi/cuda/check.hpp>
#include <gmi/rl/env_batch.cuh>
#include <gmi/rl/policy_server.hpp>
#include <gmi/rl/ppo.cuh>

namespace gmi::rl::detail {

template <class E, class Net>
void launch_serve(const ppo_rollout_view<E, Net>& v, const float* params, int steps, cudaStream_t stream) {
  using ops = ppo_device_ops<E, Net>;
  const std::size_t n = static_cast<std::size_t>(v.num_envs);
  const unsigned block = ops::env_block(n);
  ppo_serve_kernel<E, Net><<<static_cast<unsigned>((n + block - 1) / block), block, ops::shared_bytes(), stream>>>(
      v, params, steps);
  GMI_CUDA_TRY(cudaGetLastError());
}

}  // namespace gmi::rl::detail

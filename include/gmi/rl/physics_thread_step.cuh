#pragma once
// The physics tasks' env step with a thread per environment and the hottest pipeline arrays in a slice of shared
// memory per thread (physics/thread_shared.hpp), the rest in the thread's local scratch as before. Per
// environment it is env_batch_view::step_one with the task's step as split_step_in over bind_shared's arrays: the
// same arithmetic as the plain thread kernel (rl/env_batch.cuh), other storage. env_batch's launcher takes it when
// physics::request_thread_shared_reals asked for a slice. Needs nvcc.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

#include <gmi/core/cuda_try.hpp>
#include <gmi/envs/split_step.hpp>
#include <gmi/physics/thread_shared.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/physics_env_step.cuh>

namespace gmi::rl {

namespace detail {

// Threads a block; the launch bound keeps at most 128 registers a thread, as the plain kernel's (256, 2).
constexpr int physics_shared_block = 128;

template <class E>
__global__ static void __launch_bounds__(physics_shared_block, 4)
    physics_thread_shared_kernel(env_batch_view<E> v, const float* __restrict__ actions, physics_step_out out,
                                 int slice) {
  using sim = typename E::sim;
  extern __shared__ float physics_thread_slices[];
  float* hot = physics_thread_slices + static_cast<std::size_t>(threadIdx.x) * slice;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < v.num_envs; i += stride) {
    const float* a = actions + i * E::act_dim;
    gmi::rng r(v.seed, i, v.rng_blocks[i]);
    typename E::state s = v.load(i);
    bool valid = true;
    for (int k = 0; k < E::act_dim; ++k) valid = valid && is_finite(a[k]);
    gmi::transition tr{0.0f, true};
    if (valid) {
      float scratch[sim::scratch_reals];
      const gmi::physics::data<float> d = gmi::physics::bind_shared<float>(sim::model_type::sizes(), scratch, hot, slice);
      tr = gmi::envs::split_step_in<E>(s, a, v.params, scratch, d);
    }
    const step_result res =
        v.finish_one(i, s, r, valid, tr, out.obs + i * E::obs_dim, out.final_obs ? out.final_obs + i * E::obs_dim : nullptr);
    out.rewards[i] = res.reward;
    out.terminated[i] = res.terminated ? 1 : 0;
    out.truncated[i] = res.truncated ? 1 : 0;
  }
}

// The slice a thread gets for E under a request of `reals` floats: odd, no longer than what bind_shared fills.
template <class E>
int physics_thread_slice(int reals) {
  const int used = gmi::physics::thread_shared_used(E::sim::sizes_v, gmi::physics::thread_shared_slice(reals));
  return used > 0 ? (used | 1) : 0;
}

template <class E>
void physics_thread_shared_step(const env_batch_view<E>& v, const float* actions, physics_step_out out, int slice,
                                cudaStream_t s) {
  const std::size_t bytes = static_cast<std::size_t>(slice) * physics_shared_block * sizeof(float);
  if (bytes > 48 * 1024)
    GMI_CUDA_TRY(cudaFuncSetAttribute(physics_thread_shared_kernel<E>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(bytes)));
  const std::size_t blocks =
      std::min<std::size_t>((v.num_envs + physics_shared_block - 1) / physics_shared_block, 1u << 20);
  physics_thread_shared_kernel<E><<<static_cast<unsigned>(blocks), physics_shared_block, bytes, s>>>(v, actions, out, slice);
  GMI_CUDA_TRY(cudaGetLastError());
}

// The plain thread kernel K's preferred carveout on the current device: 0 (the largest L1) when
// physics::request_thread_max_l1 asked for it, else the driver's default; set when it changes.
template <class K>
void physics_thread_carveout(K kernel) {
  static int set[64];  // per device: 0 unset (the default), 1 max L1, 2 default again
  static bool ever = false;
  const bool l1 = gmi::physics::requested_thread_max_l1();
  if (!l1 && !ever) return;  // never asked in this process: the plain kernel as it always ran
  ever = true;
  int dev = 0;
  GMI_CUDA_TRY(cudaGetDevice(&dev));
  if (dev < 0 || dev >= 64) return;
  const int want = l1 ? 1 : (set[dev] == 0 ? 0 : 2);
  if (want == set[dev]) return;
  GMI_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    l1 ? 0 : static_cast<int>(cudaSharedmemCarveoutDefault)));
  set[dev] = want;
}

}  // namespace detail

// The shared slice (floats a thread) env_batch's thread path gives E now: 0 for the plain kernel.
template <class E>
int physics_thread_shared_reals() {
  return detail::physics_thread_slice<E>(gmi::physics::requested_thread_shared_reals());
}

}  // namespace gmi::rl

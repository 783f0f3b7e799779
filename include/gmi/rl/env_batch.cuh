#pragma once
// The CUDA path of gmi::rl::env_batch: environments stepped by a grid-stride kernel on the caller's stream,
// one thread per environment; the physics tasks' steps take a warp per environment where physics/step_path.hpp's
// rule (or params.step_path, or physics::request_step_path) says so (rl/physics_env_step.cuh), and a kernel per
// stage when asked for (step_path::staged, rl/physics_staged_step.cuh). Include this
// (from a .cu file) to use env_batch<E, gmi::exec::cuda>.

#include <algorithm>
#include <cstddef>

#include <gmi/exec/cuda.cuh>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/physics_env_step.cuh>
#include <gmi/rl/physics_staged_step.cuh>
#include <gmi/rl/physics_thread_step.cuh>

namespace gmi::rl {

namespace detail {

// A physics task's thread-per-environment step: its stages keep their arrays in local memory and are bound by
// how many warps hide that memory's latency, so registers are capped to keep GMI_PHYSICS_THREAD_MIN_BLOCKS blocks
// of 256 on an SM (2 by default: at most 128 registers; 3 and 4 cap them at 80 and 64, trading spills for warps;
// bench/physics/device_fast2.sh measures a second build beside the default, and the bench lines carry the value).
#ifndef GMI_PHYSICS_THREAD_MIN_BLOCKS
#define GMI_PHYSICS_THREAD_MIN_BLOCKS 2
#endif
constexpr int physics_thread_block = 256;

template <class F>
__global__ static void __launch_bounds__(physics_thread_block, GMI_PHYSICS_THREAD_MIN_BLOCKS)
    physics_thread_step_kernel(std::size_t n, F f) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}

template <>
struct launcher<exec::cuda> {
  // The stream given to reset/step/request_stats wins over policy.stream, so one driver can follow its GMI's
  // stream; policy.block_size is kept.
  template <class F>
  static void run(const exec::cuda& p, CUstream_st* stream, std::size_t n, F f) {
    exec::for_each(exec::cuda{stream ? stream : p.stream, p.block_size}, n, f);
  }
  // The env step: a physics task's may take a warp per environment.
  template <class E>
  static void run(const exec::cuda& p, CUstream_st* stream, std::size_t n, step_all_fn<E> f) {
    CUstream_st* s = stream ? stream : p.stream;
    if constexpr (physics_task<E>) {
      const gmi::physics::step_path path = physics_step_choice<E>(f.v.params, n, p.sm_count).path;
      if (path == gmi::physics::step_path::warp) {
        warp_env_step<E>(f.v, f.actions, {f.rewards, f.terminated, f.truncated, f.obs, f.final_obs}, s);
        return;
      }
      if (path == gmi::physics::step_path::staged) {
        staged_env_step<E>(f.v, f.actions, {f.rewards, f.terminated, f.truncated, f.obs, f.final_obs}, s);
        return;
      }
      if (const int slice = physics_thread_shared_reals<E>(); slice > 0) {
        physics_thread_shared_step<E>(f.v, f.actions, {f.rewards, f.terminated, f.truncated, f.obs, f.final_obs}, slice,
                                      s);
        return;
      }
      physics_thread_carveout(physics_thread_step_kernel<step_all_fn<E>>);
      const std::size_t blocks = std::min<std::size_t>((n + physics_thread_block - 1) / physics_thread_block, 1u << 20);
      physics_thread_step_kernel<<<static_cast<unsigned>(blocks), physics_thread_block, 0, s>>>(n, f);
      GMI_CUDA_TRY(cudaGetLastError());
    } else {
      exec::for_each(exec::cuda{s, p.block_size}, n, f);
    }
  }
};

}  // namespace detail

// Blocks of the thread-per-environment physics step an SM must hold (GMI_PHYSICS_THREAD_MIN_BLOCKS), for result lines.
inline constexpr int physics_thread_min_blocks = GMI_PHYSICS_THREAD_MIN_BLOCKS;

// The path env_batch b's env step takes on the GPU ("warp_per_env", "thread_per_env" or "staged_per_env"), for
// result lines.
template <class E>
const char* env_step_path_name(const env_batch<E, exec::cuda>& b) {
  return env_step_path_name<E>(b.params(), static_cast<std::size_t>(b.num_envs()), b.policy().sm_count);
}

}  // namespace gmi::rl

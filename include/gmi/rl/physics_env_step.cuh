#pragma once
// The env step of a physics task (envs::ant, humanoid, anymal: built-in models, the step split into control,
// physics and finish) over a whole env batch with a warp per environment: a block copies the model's words into
// shared memory, each warp gives its environment's pipeline arrays a slice of it, lane 0 runs the task's control
// and finish and env_batch_view::finish_one (statistics, auto-reset, observation), and the physics substeps run
// over the lanes (physics/batch_warp.cuh's warp_step). Which path runs (this or a thread per environment) is
// physics/step_path.hpp's rule on the task's size and the environment count against the device, or an override;
// env_batch (rl/env_batch.cuh) and batched_dynamics (rl/batched_dynamics.cuh) ask physics_step_choice. Needs nvcc.

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include <gmi/core/cuda_try.hpp>
#include <gmi/core/error.hpp>
#include <gmi/exec/cuda.cuh>
#include <gmi/physics/batch_warp.cuh>
#include <gmi/physics/step_path.hpp>
#include <gmi/rl/env_batch.hpp>

namespace gmi::rl {

// A task whose step splits as the physics tasks' does (envs/ant.hpp): E::control, then E::physics_substeps(p)
// steps of E::sim's built-in model, then E::finish; params carry a step_path and the model view.
template <class E>
concept physics_task =
    requires { typename E::sim::model_type; } &&
    requires(typename E::state& s, const float* a, const typename E::params& p, float* f,
             const gmi::physics::data<float>& d) {
      { E::carry_dim } -> std::convertible_to<int>;
      { E::physics_substeps(p) } -> std::convertible_to<int>;
      E::control(s, a, p, f, f, f);
      { E::finish(s, a, f, d, p, f) } -> std::same_as<gmi::transition>;
      { p.step_path } -> std::convertible_to<gmi::physics::step_path>;
      s.qpos[0];
      s.qvel[0];
    };

// Where one batch step writes (as env_batch::step's arguments; final_obs may be null).
struct physics_step_out {
  float* rewards;
  std::uint8_t* terminated;
  std::uint8_t* truncated;
  float* obs;
  float* final_obs;
};

namespace detail {

template <class E>
__global__ static void warp_env_step_kernel(env_batch_view<E> v, const float* __restrict__ actions,
                                            physics_step_out out) {
  using sim = typename E::sim;
  using M = typename sim::model_type;
  namespace ph = gmi::physics;
  extern __shared__ float4 warp_env_shared[];
  float* words = reinterpret_cast<float*>(warp_env_shared);
  constexpr int table_words = static_cast<int>(sizeof(M::words) / 4);
  // The table starts at the view's first int array; copied as 32-bit integers to keep every bit.
  const unsigned* from = reinterpret_cast<const unsigned*>(v.params.model.body_parent);
  unsigned* to = reinterpret_cast<unsigned*>(words);
  for (int k = threadIdx.x; k < table_words; k += blockDim.x) to[k] = from[k];
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * (blockDim.x >> 5) + warp;
  if (i >= v.num_envs) return;  // the whole warp
  typename E::params p = v.params;
  // The task's own options (its solver iterations and tolerance) over the shared copy of the words.
  ph::model_options o;
  o.timestep = p.model.timestep;
  for (int k = 0; k < 3; ++k) o.gravity[k] = p.model.gravity[k];
  o.iterations = p.model.iterations;
  o.tolerance = p.model.tolerance;
  p.model = ph::view_of_words(M::sizes(), o, words);
  float* scratch =
      words + ph::detail::warp_table_words<M> + static_cast<std::size_t>(warp) * ph::detail::warp_scratch_reals<M>;
  const ph::data<float> d = sim::bind(scratch);
  const float* a = actions + i * E::act_dim;
  typename E::state s;
  float ctrl[sim::nu > 0 ? sim::nu : 1], carry[E::carry_dim > 0 ? E::carry_dim : 1];
  int valid = 0;
  if (lane == 0) {
    s = v.load(i);
    bool ok = true;
    for (int k = 0; k < E::act_dim; ++k) ok = ok && is_finite(a[k]);
    valid = ok ? 1 : 0;
    if (ok) {
      E::control(s, a, p, ctrl, carry, scratch);
      for (int k = 0; k < sim::nq; ++k) d.qpos[k] = s.qpos[k];
      for (int k = 0; k < sim::nv; ++k) {
        d.qvel[k] = s.qvel[k];
        d.qfrc_applied[k] = 0.0f;
      }
      for (int k = 0; k < sim::nu; ++k) d.ctrl[k] = ctrl[k];
      d.time[0] = 0.0f;
      d.prev_nefc[0] = 0.0f;
    }
  }
  valid = __shfl_sync(ph::detail::full_warp, valid, 0);
  __syncwarp();
  if (valid) {
    const int substeps = E::physics_substeps(p);
    for (int k = 0; k < substeps; ++k) ph::detail::warp_step(p.model, d, lane);
  }
  if (lane == 0) {
    gmi::rng r(v.seed, i, v.rng_blocks[i]);
    gmi::transition tr{0.0f, true};
    if (valid) {
      for (int k = 0; k < sim::nq; ++k) s.qpos[k] = d.qpos[k];
      for (int k = 0; k < sim::nv; ++k) s.qvel[k] = d.qvel[k];
      tr = E::finish(s, a, carry, d, p, scratch);
    }
    const step_result res = v.finish_one(i, s, r, valid != 0, tr, out.obs + i * E::obs_dim,
                                         out.final_obs ? out.final_obs + i * E::obs_dim : nullptr);
    out.rewards[i] = res.reward;
    out.terminated[i] = res.terminated ? 1 : 0;
    out.truncated[i] = res.truncated ? 1 : 0;
  }
}

// What the rule needs from the device, looked up once per task and device.
struct physics_device_facts {
  std::size_t shared_optin = 0;
  int sm_count = 0;
};

template <class E>
physics_device_facts physics_facts() {
  static std::mutex lock;
  static physics_device_facts cache[64];
  static bool known[64] = {};
  int dev = 0;
  GMI_CUDA_TRY(cudaGetDevice(&dev));
  gmi::require(dev >= 0 && dev < 64, "physics env step: CUDA device index", dev, "< 64");
  std::lock_guard<std::mutex> g(lock);
  if (!known[dev]) {
    physics_device_facts f;
    int optin = 0, sms = 0;
    GMI_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    GMI_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    f.shared_optin = static_cast<std::size_t>(optin);
    f.sm_count = sms;
    cache[dev] = f;
    known[dev] = true;
  }
  return cache[dev];
}

template <class E>
constexpr std::size_t warp_env_table_bytes() {
  return gmi::physics::warp_batch<typename E::sim::model_type>::table_bytes();
}
template <class E>
constexpr std::size_t warp_env_scratch_bytes() {
  return gmi::physics::warp_batch<typename E::sim::model_type>::scratch_bytes_per_env();
}
}  // namespace detail

// The rule's inputs for n environments of E on the current device (sm_count > 0: the SMs this work may use).
template <physics_task E>
gmi::physics::step_path_inputs physics_step_inputs(std::size_t n, int sm_count = 0) {
  const detail::physics_device_facts f = detail::physics_facts<E>();
  const int sms = sm_count > 0 && sm_count < f.sm_count ? sm_count : f.sm_count;
  gmi::physics::step_path_inputs in;
  in.scratch_bytes_per_env = detail::warp_env_scratch_bytes<E>();
  in.table_bytes = detail::warp_env_table_bytes<E>();
  in.shared_bytes_per_block = f.shared_optin;
  in.num_envs = n;
  in.sm_count = static_cast<std::size_t>(sms);
  return in;
}

// The path n environments of E take with params p on the current device (the process-wide request first).
template <physics_task E>
gmi::physics::step_path_choice physics_step_choice(const typename E::params& p, std::size_t n, int sm_count = 0) {
  return gmi::physics::choose_step_path(p.step_path, gmi::physics::requested_step_path(),
                                        physics_step_inputs<E>(n, sm_count));
}

// Whether n environments of any env E step with a warp each (only physics tasks can).
template <class E>
bool env_steps_in_warps(const typename E::params& p, std::size_t n, int sm_count = 0) {
  if constexpr (physics_task<E>)
    return physics_step_choice<E>(p, n, sm_count).path == gmi::physics::step_path::warp;
  else
    return false;
}

// "warp_per_env" or "thread_per_env" for any env (only physics tasks can take the warp).
template <class E>
const char* env_step_path_name(const typename E::params& p, std::size_t n, int sm_count = 0) {
  if constexpr (physics_task<E>)
    return gmi::physics::step_path_name(physics_step_choice<E>(p, n, sm_count).path);
  else
    return gmi::physics::step_path_name(gmi::physics::step_path::threads);
}

// Warps per block of the warp path: the most that fit the shared memory, at most 8.
template <physics_task E>
int warp_env_warps_per_block() {
  const detail::physics_device_facts f = detail::physics_facts<E>();
  const std::size_t table = detail::warp_env_table_bytes<E>(), per = detail::warp_env_scratch_bytes<E>();
  gmi::require(f.shared_optin >= table + per, "physics warp-per-env step: shared memory per block", f.shared_optin,
               ">= " + std::to_string(table + per) + " bytes (the model and one environment)");
  const std::size_t fit = (f.shared_optin - table) / per;
  return static_cast<int>(fit < 8 ? fit : 8);
}

// One env step of every environment of v with a warp each, on stream s (enqueued, not waited for). Internal
// linkage, as its kernel: the once-per-device attribute flag below belongs to this translation unit's kernel.
template <physics_task E>
static void warp_env_step(const env_batch_view<E>& v, const float* actions, const physics_step_out& out, cudaStream_t s) {
  if (v.num_envs == 0) return;
  const int warps = warp_env_warps_per_block<E>();
  const std::size_t shared = detail::warp_env_table_bytes<E>() + warps * detail::warp_env_scratch_bytes<E>();
  {
    // Once per device (the size is fixed per task and device), so later calls may run under graph capture.
    static std::mutex lock;
    static bool set[64] = {};
    int dev = 0;
    GMI_CUDA_TRY(cudaGetDevice(&dev));
    std::lock_guard<std::mutex> g(lock);
    if (dev < 0 || dev >= 64 || !set[dev]) {
      GMI_CUDA_TRY(cudaFuncSetAttribute(detail::warp_env_step_kernel<E>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(shared)));
      if (dev >= 0 && dev < 64) set[dev] = true;
    }
  }
  const std::size_t blocks = (v.num_envs + warps - 1) / warps;
  detail::warp_env_step_kernel<E><<<static_cast<unsigned>(blocks), 32 * warps, shared, s>>>(v, actions, out);
  GMI_CUDA_TRY(cudaGetLastError());
}

}  // namespace gmi::rl

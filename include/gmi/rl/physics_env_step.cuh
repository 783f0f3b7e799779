#pragma once
// The env step of a physics task (envs::ant_v4, humanoid_v4, anymal: built-in models, the step split into control,
// physics and finish) over a whole env batch with a tile of 8, 16 or 32 lanes per environment (physics::tile_layout,
// physics::request_tile_layout): a block copies the model's words into shared memory, each tile gives its
// environment's pipeline arrays a slice of it (the constraint rows optionally a global slot), the tile's lane 0 runs
// the task's control and finish and env_batch_view::finish_one (statistics, auto-reset, observation), and the
// physics substeps run over the tile's lanes (physics/batch_warp_stages.cuh's tile_step); the grid holds the resident
// blocks and each tile steps environments in turn. Which path runs (this or a thread per environment) is
// physics/step_path.hpp's rule on the task's size and the environment count against the resident count, or an override;
// env_batch (rl/env_batch.cuh) and batched_dynamics (rl/batched_dynamics.cuh) ask physics_step_choice. Needs nvcc.

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <gmi/core/cuda_try.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/exec/cuda.cuh>
#include <gmi/physics/batch_warp.cuh>
#include <gmi/physics/step_path.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/physics_staged.hpp>  // physics_step_out

namespace gmi::rl {

// A task whose step splits as the physics tasks' does (envs/ant_v4.hpp): E::control, then E::physics_substeps(p)
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

namespace detail {

// Environments blockIdx.x * epb + tile, then a grid's worth further on, a tile of `lanes` lanes each (tiles past
// epb in the block's last warp stay idle); slots: a spilled-rows slot per tile of the grid, or null.
template <class E>
__global__ static void GMI_PHYSICS_TILE_BOUNDS warp_env_step_kernel(env_batch_view<E> v,
                                                                    const float* __restrict__ actions,
                                                                    physics_step_out out, int lanes, int epb,
                                                                    float* slots) {
  using sim = typename E::sim;
  using M = typename sim::model_type;
  namespace ph = gmi::physics;
  extern __shared__ float4 warp_env_shared[];
  float* words = reinterpret_cast<float*>(warp_env_shared);
  // The table starts at the view's first int array.
  ph::detail::copy_table<M>(words, reinterpret_cast<const float*>(v.params.model.body_parent));
  const ph::detail::tile t = ph::detail::this_tile(lanes);
  const int mine = static_cast<int>(threadIdx.x) / lanes;
  if (mine >= epb) return;  // the whole tile
  typename E::params p = v.params;
  // The task's own options (its solver iterations and tolerance) over the shared copy of the words.
  ph::model_options o;
  o.timestep = p.model.timestep;
  for (int k = 0; k < 3; ++k) o.gravity[k] = p.model.gravity[k];
  o.iterations = p.model.iterations;
  o.tolerance = p.model.tolerance;
  p.model = ph::view_of_words(M::sizes(), o, words);
  const std::size_t global_tile = static_cast<std::size_t>(blockIdx.x) * epb + mine;
  float* scratch =
      words + ph::detail::warp_table_words<M> + static_cast<std::size_t>(mine) * ph::detail::tile_shared_reals<M>(slots != nullptr);
  float* slot = slots ? slots + global_tile * ph::detail::spill_slot_reals<M> : nullptr;
  const ph::data<float> d = ph::detail::bind_tile_data<M>(scratch, slot);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * epb;
  for (std::size_t i = global_tile; i < v.num_envs; i += stride) {
    const float* a = actions + i * E::act_dim;
    typename E::state s;
    float ctrl[sim::nu > 0 ? sim::nu : 1], carry[E::carry_dim > 0 ? E::carry_dim : 1];
    int valid = 0;
    if (t.lane == 0) {
      s = v.load(i);
      bool ok = true;
      for (int k = 0; k < E::act_dim; ++k) ok = ok && is_finite(a[k]);
      valid = ok ? 1 : 0;
      if (ok) {
        E::control(s, a, p, ctrl, carry, scratch);
        sim::start(d, s.qpos, s.qvel, ctrl);
      }
    }
    valid = t.shfl(valid, 0);
    t.sync();
    if (valid) {
      const int substeps = E::physics_substeps(p);
      for (int k = 0; k < substeps; ++k) ph::detail::tile_step<sim::colliders>(p.model, d, t);
    }
    if (t.lane == 0) {
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
    t.sync();  // lane 0's finish has read the arrays before the next environment's control writes them
  }
}

// The warp path's launch for E on one device and layout, planned once (occupancy calculator) with the spilled rows'
// slots (one per resident tile) allocated then.
struct physics_warp_launch {
  gmi::physics::tile_plan plan;
  std::size_t shared_optin = 0;
  int sm_count = 0;
  gmi::cuda::device_buffer<float> slots;
};

template <class E>
std::size_t warp_env_table_bytes() {
  return gmi::physics::warp_batch<typename E::sim::model_type>::table_bytes();
}
template <class E>
std::size_t warp_env_scratch_bytes(gmi::physics::tile_layout layout) {
  return gmi::physics::warp_batch<typename E::sim::model_type>::scratch_bytes_per_env(layout);
}

// The plan for the current device and `layout`, made on first use (not under stream capture: it may allocate).
// Internal linkage, as the kernel it plans for and sets the shared-memory attribute of: one plan per translation unit.
template <class E>
static const physics_warp_launch& warp_env_launch(gmi::physics::tile_layout layout) {
  using M = typename E::sim::model_type;
  static std::mutex lock;
  // Kept to the process's end (never freed: no cudaFree after the runtime's own teardown).
  static physics_warp_launch* cache[64][3][2] = {};
  int dev = 0;
  GMI_CUDA_TRY(cudaGetDevice(&dev));
  gmi::require(dev >= 0 && dev < 64, "physics env step: CUDA device index", dev, "< 64");
  gmi::require(gmi::physics::valid_tile_lanes(layout.lanes), "physics env step: lanes per environment", layout.lanes,
               "8, 16 or 32");
  const int w = layout.lanes == 8 ? 0 : layout.lanes == 16 ? 1 : 2;
  std::lock_guard<std::mutex> g(lock);
  physics_warp_launch*& c = cache[dev][w][layout.spill_rows ? 1 : 0];
  if (!c) {
    auto l = std::make_unique<physics_warp_launch>();
    int optin = 0, sms = 0;
    GMI_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    GMI_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    l->shared_optin = static_cast<std::size_t>(optin);
    l->sm_count = sms;
    if (l->shared_optin >= warp_env_table_bytes<E>() + warp_env_scratch_bytes<E>(layout)) {
      l->plan = gmi::physics::detail::plan_tiles(warp_env_step_kernel<E>, layout, warp_env_table_bytes<E>(),
                                                 warp_env_scratch_bytes<E>(layout));
      if (layout.spill_rows)
        l->slots = gmi::cuda::device_buffer<float>(static_cast<std::size_t>(l->plan.blocks_per_sm) * sms *
                                                   l->plan.envs_per_block *
                                                   gmi::physics::detail::spill_slot_reals<M>);
    }
    c = l.release();
  }
  return *c;
}
}  // namespace detail

// The rule's inputs for n environments of E on the current device (sm_count > 0: the SMs this work may use), for
// the warp path's layout under the process-wide request (physics::request_tile_layout).
template <physics_task E>
gmi::physics::step_path_inputs physics_step_inputs(std::size_t n, int sm_count = 0) {
  const gmi::physics::tile_layout layout = gmi::physics::tile_layout_for(E::sim::sizes_v);
  const detail::physics_warp_launch& f = detail::warp_env_launch<E>(layout);
  const int sms = sm_count > 0 && sm_count < f.sm_count ? sm_count : f.sm_count;
  gmi::physics::step_path_inputs in;
  in.scratch_bytes_per_env = detail::warp_env_scratch_bytes<E>(layout);
  in.table_bytes = detail::warp_env_table_bytes<E>();
  in.shared_bytes_per_block = f.shared_optin;
  in.num_envs = n;
  in.sm_count = static_cast<std::size_t>(sms);
  in.resident_envs_per_sm = static_cast<std::size_t>(f.plan.resident_envs_per_sm);
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

// "warp_per_env", "thread_per_env" or "staged_per_env" for any env (only physics tasks can take the warp or the
// stages).
template <class E>
const char* env_step_path_name(const typename E::params& p, std::size_t n, int sm_count = 0) {
  if constexpr (physics_task<E>)
    return gmi::physics::step_path_name(physics_step_choice<E>(p, n, sm_count).path);
  else
    return gmi::physics::step_path_name(gmi::physics::step_path::threads);
}

// The warp path's launch for E under the process-wide layout request (lanes, environments per block, residency).
template <physics_task E>
static gmi::physics::tile_plan warp_env_plan() {
  const gmi::physics::tile_layout layout = gmi::physics::tile_layout_for(E::sim::sizes_v);
  const detail::physics_warp_launch& f = detail::warp_env_launch<E>(layout);
  const std::size_t need = detail::warp_env_table_bytes<E>() + detail::warp_env_scratch_bytes<E>(layout);
  gmi::require(f.shared_optin >= need, "physics warp-per-env step: shared memory per block", f.shared_optin,
               ">= " + std::to_string(need) + " bytes (the model and one environment)");
  return f.plan;
}

// One env step of every environment of v with a tile of lanes each, on stream s (enqueued, not waited for).
// Internal linkage, as its kernel: the once-per-device plan above belongs to this translation unit's kernel.
template <physics_task E>
static void warp_env_step(const env_batch_view<E>& v, const float* actions, const physics_step_out& out, cudaStream_t s) {
  if (v.num_envs == 0) return;
  const gmi::physics::tile_layout layout = gmi::physics::tile_layout_for(E::sim::sizes_v);
  const detail::physics_warp_launch& f = detail::warp_env_launch<E>(layout);
  const gmi::physics::tile_plan plan = warp_env_plan<E>();
  const int blocks = gmi::physics::detail::tile_grid(plan, v.num_envs, f.sm_count);
  float* slots = layout.spill_rows ? f.slots.data() : nullptr;
  detail::warp_env_step_kernel<E><<<static_cast<unsigned>(blocks), plan.threads, plan.shared_bytes, s>>>(
      v, actions, out, plan.layout.lanes, plan.envs_per_block, slots);
  GMI_CUDA_TRY(cudaGetLastError());
}

}  // namespace gmi::rl

#pragma once
// The staged env step of a physics task (envs::ant_v4, humanoid_v4, anymal), per environment and host-callable: the step
// as a sequence of passes over all environments, each pass one kernel with a thread per environment on the device
// (rl/physics_staged_step.cuh), the pipeline's arrays between passes in global memory, element-major (data.hpp:
// element k of environment e at k * n + e, so a warp's loads coalesce), sized once per batch. Passes: begin (load the
// state, check the action, the task's control, the physics inputs), then for each of the task's substeps the five
// stages of physics::step_stage (positions; collision; forces and rows; solve; integration), then end (the task's
// finish and env_batch_view::finish_one: statistics, auto-reset, observation). No pass keeps the step's arrays on
// its stack, only begin and end a task scratch for what control and finish compute (the humanoid_v4's centre of mass).
// staged_env_step_host runs the passes in the same order on the host: the CPU twin that tests check against the
// one-call step (envs::split_step).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/stage_shared.hpp>
#include <gmi/physics/step.hpp>
#include <gmi/rl/env_batch.hpp>

namespace gmi::rl {

// Where one batch step writes (as env_batch::step's arguments; final_obs may be null).
struct physics_step_out {
  float* rewards;
  std::uint8_t* terminated;
  std::uint8_t* truncated;
  float* obs;
  float* final_obs;
};

// The staged step's arrays for n environments of task E: the pipeline's (physics::make_layout, element-major),
// the task's carry (carry_dim x n) and whether each environment's action was applied (n).
template <class E>
struct staged_arrays {
  float* data;
  float* carry;
  std::uint8_t* valid;
  std::size_t n;

  [[nodiscard]] static constexpr std::size_t data_reals(std::size_t n) {
    return physics::make_layout(E::sim::sizes_v).reals_per_env * n;
  }
  [[nodiscard]] static constexpr std::size_t carry_reals(std::size_t n) {
    return static_cast<std::size_t>(E::carry_dim > 0 ? E::carry_dim : 1) * n;
  }
  [[nodiscard]] GMI_HD physics::data<float> env(std::size_t i) const {
    constexpr physics::data_layout l = physics::make_layout(E::sim::sizes_v);
    return physics::data_of(l, data, static_cast<int>(n), static_cast<int>(i));
  }
};

// Pass begin for environment i: the state into the pipeline's qpos and qvel, the task's controls into ctrl, its
// carry; an action with a non-finite component is not applied (valid 0), as env_batch_view::step_one.
template <class E>
GMI_HD void staged_begin(const env_batch_view<E>& v, const float* actions, const staged_arrays<E>& a, std::size_t i) {
  using sim = typename E::sim;
  const float* act = actions + i * E::act_dim;
  bool ok = true;
  for (int k = 0; k < E::act_dim; ++k) ok = ok && detail::is_finite(act[k]);
  a.valid[i] = ok ? 1 : 0;
  if (!ok) return;
  const typename E::state s = v.load(i);
  float ctrl[sim::nu > 0 ? sim::nu : 1], carry[E::carry_dim > 0 ? E::carry_dim : 1];
  float scratch[sim::scratch_reals];
  E::control(s, act, v.params, ctrl, carry, scratch);
  for (int k = 0; k < E::carry_dim; ++k) a.carry[static_cast<std::size_t>(k) * a.n + i] = carry[k];
  sim::start(a.env(i), s.qpos, s.qvel, ctrl);
}

// Stage k (physics::step_stage) of one substep for environment i, skipped where the action was not applied.
template <class E>
GMI_HD void staged_stage(int k, const typename E::params& p, const staged_arrays<E>& a, std::size_t i) {
  if (a.valid[i]) physics::step_stage<E::sim::colliders>(k, p.model, a.env(i));
}

// The same with stage k's hot arrays in a slice (physics/stage_shared.hpp: lane `lane` of `lanes`, up to `reals`
// floats a lane; shared memory on the device): copied in, the stage, copied out.
template <class E>
GMI_HD void staged_stage_in(int k, const typename E::params& p, const staged_arrays<E>& a, std::size_t i, float* slice,
                            int lane, int lanes, int reals) {
  if (!a.valid[i]) return;
  constexpr physics::model_sizes sizes = E::sim::sizes_v;  // a copy: the static member has no device address
  const physics::data<float> g = a.env(i);
  const physics::data<float> d = physics::stage_bind(k, sizes, g, slice, lane, lanes, reals);
  physics::step_stage<E::sim::colliders>(k, p.model, d);
  physics::stage_unbind(k, sizes, g, d, reals);
}

// Pass end for environment i: the new qpos and qvel into the state, the task's finish, then finish_one.
template <class E>
GMI_HD void staged_end(const env_batch_view<E>& v, const float* actions, const staged_arrays<E>& a,
                       const physics_step_out& out, std::size_t i) {
  using sim = typename E::sim;
  const float* act = actions + i * E::act_dim;
  typename E::state s = v.load(i);
  gmi::rng r(v.seed, i, v.rng_blocks[i]);
  const bool valid = a.valid[i] != 0;
  gmi::transition tr{0.0f, true};
  if (valid) {
    const physics::data<float> d = a.env(i);
    for (int k = 0; k < sim::nq; ++k) s.qpos[k] = d.qpos[k];
    for (int k = 0; k < sim::nv; ++k) s.qvel[k] = d.qvel[k];
    float carry[E::carry_dim > 0 ? E::carry_dim : 1];
    for (int k = 0; k < E::carry_dim; ++k) carry[k] = a.carry[static_cast<std::size_t>(k) * a.n + i];
    float scratch[sim::scratch_reals];
    tr = E::finish(s, act, carry, d, v.params, scratch);
  }
  const step_result res = v.finish_one(i, s, r, valid, tr, out.obs + i * E::obs_dim,
                                       out.final_obs ? out.final_obs + i * E::obs_dim : nullptr);
  out.rewards[i] = res.reward;
  out.terminated[i] = res.terminated ? 1 : 0;
  out.truncated[i] = res.truncated ? 1 : 0;
}

// The host twin: one env step of every environment of v, pass by pass over all environments, in arrays of its own;
// with slice_reals > 0 each stage's hot arrays in a slice of that many floats (filled with NaN before each
// environment's stage, so a value read before it is written shows), as the device's shared slices.
template <class E>
void staged_env_step_host(const env_batch_view<E>& v, const float* actions, const physics_step_out& out,
                          int slice_reals = 0) {
  const std::size_t n = v.num_envs;
  std::vector<float> data(staged_arrays<E>::data_reals(n)), carry(staged_arrays<E>::carry_reals(n));
  std::vector<std::uint8_t> valid(n);
  const staged_arrays<E> a{data.data(), carry.data(), valid.data(), n};
  std::vector<float> slice(static_cast<std::size_t>(slice_reals > 0 ? slice_reals : 0));
  for (std::size_t i = 0; i < n; ++i) staged_begin<E>(v, actions, a, i);
  const int substeps = E::physics_substeps(v.params);
  for (int s = 0; s < substeps; ++s)
    for (int k = 0; k < physics::step_stages; ++k)
      for (std::size_t i = 0; i < n; ++i) {
        if (slice.empty()) {
          staged_stage<E>(k, v.params, a, i);
          continue;
        }
        for (float& x : slice) x = std::numeric_limits<float>::quiet_NaN();
        staged_stage_in<E>(k, v.params, a, i, slice.data(), 0, 1, slice_reals);
      }
  for (std::size_t i = 0; i < n; ++i) staged_end<E>(v, actions, a, out, i);
}

}  // namespace gmi::rl

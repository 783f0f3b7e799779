#pragma once
// The Anymal task on MuJoCo, defined as gmi::physics's gmi::envs::anymal (include/gmi/envs/anymal.hpp) on the same
// model file (include/gmi/physics/builtin/anymal.xml): a base velocity command drawn at every reset, PD targets
// around the standing pose from the action, 4 MuJoCo steps of 5 ms per env step, the 48-dim observation, the
// reward terms (tracking minus penalties, scaled by the control step) and the end when the base touches the floor.
// gmi::envs::anymal's own reset, control, reward terms and observation run on MuJoCo's state in float; the torques
// are MuJoCo's actuator forces and the base contact MuJoCo's contacts of the last physics step. The command and
// the last action live beside mjData (task_state_size floats per environment, kept and saved by mujoco::sim).

#if __has_include(<mujoco/mujoco.h>)
#include <mujoco/mujoco.h>

#include <algorithm>

#include <gmi/actors/mujoco_task_parts.hpp>
#include <gmi/concepts/env.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/envs/anymal.hpp>

namespace gmi::actors::mujoco {

class anymal {
 public:
  using definition = gmi::envs::anymal;
  static constexpr int nq = definition::sim::nq, nv = definition::sim::nv, nj = definition::nj;
  static constexpr int obs_size = definition::obs_dim, act_size = definition::act_dim;
  static constexpr int task_state_size = 3 + nj;  // the command, then the last action
  // gmi::envs::anymal's params; its solver, step_path and model fields are gmi::physics's and unused here.
  using params = definition::params;

  // Refuses a model that is not the anymal (sizes 19, 18, 12 and the base box as geom 1, "base_geom"), in one line.
  anymal(const mjModel* m, params p) : m_(m), p_(p) {
    parts::require_sizes(m, "Anymal", nq, nv, act_size);
    base_ = parts::require_named(m, "Anymal", mjOBJ_GEOM, "geom", "base_geom");
    require(base_ == definition::base_geom, "Anymal model's geom \"base_geom\" id", base_,
            std::to_string(definition::base_geom) + " (gmi::envs::anymal's base geom)");
    require(p.decimation >= 1, "anymal decimation", p.decimation, ">= 1");
    p_.model.timestep = float(m->opt.timestep);  // what definition::dt reads of the model
  }

  [[nodiscard]] int obs_dim() const noexcept { return obs_size; }
  [[nodiscard]] int act_dim() const noexcept { return act_size; }
  [[nodiscard]] int max_steps() const noexcept { return p_.max_steps; }
  [[nodiscard]] const params& config() const noexcept { return p_; }

  void reset(mjData* d, float* task_state, gmi::rng& r) const {
    definition::state s;
    definition::reset(s, r, p_);
    parts::start_from(m_, d, s);
    std::copy_n(s.command, 3, task_state);
    std::copy_n(s.last_action, nj, task_state + 3);
  }

  [[nodiscard]] gmi::transition step(mjData* d, float* task_state, const float* action) const {
    definition::state s = state_of(d, task_state);
    float ctrl[nj], qvel_before[nv];
    definition::control(s, action, p_, ctrl, qvel_before, nullptr);
    for (int j = 0; j < nj; ++j) d->ctrl[j] = double(ctrl[j]);
    parts::substeps(m_, d, p_.decimation);
    s = state_of(d, task_state);
    float torque[nj];
    for (int j = 0; j < nj; ++j) torque[j] = float(d->actuator_force[j]);
    bool base_contact = false;
    for (int c = 0; c < d->ncon; ++c) base_contact = base_contact || d->contact[c].geom1 == base_ || d->contact[c].geom2 == base_;
    const bool finite = definition::sim::finite(s.qpos, nq) && definition::sim::finite(s.qvel, nv);
    const float reward = finite ? definition::terms(s, qvel_before, action, torque, p_).sum() : 0.0f;
    std::copy_n(action, nj, task_state + 3);
    return {reward, base_contact || !finite};
  }

  void observe(const mjData* d, const float* task_state, float* obs) const {
    definition::observe(state_of(d, task_state), obs, p_);
  }

  [[nodiscard]] definition::state state_of(const mjData* d, const float* task_state) const noexcept {
    definition::state s;
    parts::to_float(m_, d, s);
    std::copy_n(task_state, 3, s.command);
    std::copy_n(task_state + 3, nj, s.last_action);
    return s;
  }

 private:
  const mjModel* m_;
  params p_;
  int base_ = -1;
};

}  // namespace gmi::actors::mujoco
#endif

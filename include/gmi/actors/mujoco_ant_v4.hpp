#pragma once
// The Ant task on MuJoCo, defined as gmi::physics's gmi::envs::ant_v4 (include/gmi/envs/ant_v4.hpp) on the same model
// file (include/gmi/physics/builtin/ant_v4.xml; any model of its sizes with a body "torso"): its params, reset (qpos0
// + U(-0.1, 0.1) and qvel 0.1 N(0, 1) drawn in the same order from the env's gmi::rng, root quaternion
// normalized), observation qpos[2:] and qvel (27), termination (torso height outside [0.2, 1] or a state that is
// not finite) and reward forward velocity of the root (qpos[0], the torso) + 1 - 0.5 |clamp(a, -1, 1)|^2, with
// frame_skip (5) MuJoCo steps per env step. gmi::envs::ant_v4's own control, finish and observation run on MuJoCo's
// state in float. (Before, this was Gymnasium's Ant-v4: the torso's xpos, one substep behind, and no
// renormalized quaternion at reset.)

#if __has_include(<mujoco/mujoco.h>)
#include <mujoco/mujoco.h>

#include <array>

#include <gmi/actors/mujoco_task_parts.hpp>
#include <gmi/concepts/env.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/envs/ant_v4.hpp>

namespace gmi::actors::mujoco {

class ant_v4 {
 public:
  using definition = gmi::envs::ant_v4;
  static constexpr int nq = definition::sim::nq, nv = definition::sim::nv;
  static constexpr int obs_size = definition::obs_dim, act_size = definition::act_dim;
  // gmi::envs::ant_v4's params; its solver, step_path and model fields are gmi::physics's and unused here.
  using params = definition::params;

  // Refuses a model that is not an ant_v4 (sizes 15, 14, 8 and a body named "torso"), in one line.
  ant_v4(const mjModel* m, params p) : m_(m), p_(p) {
    parts::require_sizes(m, "Ant", nq, nv, act_size);
    (void)parts::require_named(m, "Ant", mjOBJ_BODY, "body", "torso");
    require(p.frame_skip >= 1, "ant_v4 frame_skip", p.frame_skip, ">= 1");
    for (int i = 0; i < nq; ++i) qpos0_[std::size_t(i)] = float(m->qpos0[i]);
    p_.model.qpos0 = qpos0_.data();  // what definition::reset and dt read of the model
    p_.model.timestep = float(m->opt.timestep);
  }
  ant_v4(const ant_v4&) = delete;  // p_.model points into this object
  ant_v4& operator=(const ant_v4&) = delete;

  [[nodiscard]] int obs_dim() const noexcept { return obs_size; }
  [[nodiscard]] int act_dim() const noexcept { return act_size; }
  [[nodiscard]] int max_steps() const noexcept { return p_.max_steps; }
  [[nodiscard]] const params& config() const noexcept { return p_; }
  [[nodiscard]] float dt() const noexcept { return definition::dt(p_); }

  void reset(mjData* d, gmi::rng& r) const {
    definition::state s;
    definition::reset(s, r, p_);
    parts::start_from(m_, d, s);
  }

  [[nodiscard]] gmi::transition step(mjData* d, const float* action) const {
    float ctrl[act_size], carry[definition::carry_dim];
    definition::control(state_of(d), action, p_, ctrl, carry, nullptr);
    for (int u = 0; u < act_size; ++u) d->ctrl[u] = double(ctrl[u]);
    parts::substeps(m_, d, p_.frame_skip);
    definition::state after = state_of(d);
    return definition::finish(after, action, carry, gmi::physics::data<float>{}, p_, nullptr);
  }

  void observe(const mjData* d, float* obs) const { definition::observe(state_of(d), obs, p_); }

  [[nodiscard]] bool is_healthy(const mjData* d) const noexcept { return definition::healthy(state_of(d), p_); }

  [[nodiscard]] definition::state state_of(const mjData* d) const noexcept {
    definition::state s;
    parts::to_float(m_, d, s);
    return s;
  }

 private:
  const mjModel* m_;
  params p_;
  std::array<float, nq> qpos0_{};
};

}  // namespace gmi::actors::mujoco
#endif

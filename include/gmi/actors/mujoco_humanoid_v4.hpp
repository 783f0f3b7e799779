#pragma once
// The Humanoid task on MuJoCo, defined as gmi::physics's gmi::envs::humanoid_v4 (include/gmi/envs/humanoid_v4.hpp) on
// the same model file (include/gmi/physics/builtin/humanoid_v4.xml): its params, reset (qpos0 and qvel +
// U(-0.01, 0.01) drawn in the same order from the env's gmi::rng, root quaternion normalized), observation qpos[2:]
// and qvel (45), termination (torso height outside (1, 2) or a state that is not finite) and reward
// 1.25 x forward velocity of the centre of mass + 5 - 0.1 |clamp(a, -0.4, 0.4)|^2, with frame_skip (5) MuJoCo
// steps per env step. The centre of mass is taken at the current qpos (mj_kinematics), as gmi::physics does, not
// one substep behind as Gymnasium's xipos after mj_step. Everything but the physics and the centre of mass is
// gmi::envs::humanoid_v4's own code, evaluated on MuJoCo's state in float.

#if __has_include(<mujoco/mujoco.h>)
#include <mujoco/mujoco.h>

#include <algorithm>
#include <array>

#include <gmi/actors/mujoco_task_parts.hpp>
#include <gmi/concepts/env.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/envs/humanoid_v4.hpp>

namespace gmi::actors::mujoco {

class humanoid_v4 {
 public:
  using definition = gmi::envs::humanoid_v4;
  static constexpr int nq = definition::sim::nq, nv = definition::sim::nv;
  static constexpr int obs_size = definition::obs_dim, act_size = definition::act_dim;
  // gmi::envs::humanoid_v4's params; its solver, step_path and model fields are gmi::physics's and unused here.
  using params = definition::params;

  // Refuses a model that is not the humanoid_v4 (sizes 24, 23, 17 and a body named "torso"), in one line.
  humanoid_v4(const mjModel* m, params p) : m_(m), p_(p) {
    parts::require_sizes(m, "Humanoid", nq, nv, act_size);
    (void)parts::require_named(m, "Humanoid", mjOBJ_BODY, "body", "torso");
    require(p.frame_skip >= 1, "humanoid_v4 frame_skip", p.frame_skip, ">= 1");
    for (int i = 0; i < nq; ++i) qpos0_[std::size_t(i)] = float(m->qpos0[i]);
    p_.model.qpos0 = qpos0_.data();  // what definition::reset and dt read of the model
    p_.model.timestep = float(m->opt.timestep);
  }
  humanoid_v4(const humanoid_v4&) = delete;  // p_.model points into this object
  humanoid_v4& operator=(const humanoid_v4&) = delete;

  [[nodiscard]] int obs_dim() const noexcept { return obs_size; }
  [[nodiscard]] int act_dim() const noexcept { return act_size; }
  [[nodiscard]] int max_steps() const noexcept { return p_.max_steps; }
  [[nodiscard]] const params& config() const noexcept { return p_; }

  void reset(mjData* d, gmi::rng& r) const {
    definition::state s;
    definition::reset(s, r, p_);
    parts::start_from(m_, d, s);
  }

  [[nodiscard]] gmi::transition step(mjData* d, const float* action) const {
    const float x_before = com_x(d);
    float ctrl_cost = 0.0f;
    for (int u = 0; u < act_size; ++u) {
      const float c = std::clamp(action[u], -0.4f, 0.4f);
      d->ctrl[u] = double(c);
      ctrl_cost += c * c;
    }
    parts::substeps(m_, d, p_.frame_skip);
    const float forward = (com_x(d) - x_before) / definition::dt(p_);
    return {p_.forward_reward_weight * forward + p_.healthy_reward - p_.ctrl_cost_weight * ctrl_cost,
            !definition::healthy(state_of(d), p_)};
  }

  void observe(const mjData* d, float* obs) const { definition::observe(state_of(d), obs, p_); }

  [[nodiscard]] definition::state state_of(const mjData* d) const noexcept {
    definition::state s;
    parts::to_float(m_, d, s);
    return s;
  }

  // x of the whole body's centre of mass at d's qpos (mj_kinematics brings the poses up to qpos; the next
  // mj_step computes them again, so the trajectory does not change).
  [[nodiscard]] float com_x(mjData* d) const {
    mj_kinematics(m_, d);
    double mx = 0, mass = 0;
    for (int b = 1; b < m_->nbody; ++b) {
      mx += m_->body_mass[b] * d->xipos[3 * b];
      mass += m_->body_mass[b];
    }
    return float(mx / mass);
  }

 private:
  const mjModel* m_;
  params p_;
  std::array<float, nq> qpos0_{};
};

}  // namespace gmi::actors::mujoco
#endif

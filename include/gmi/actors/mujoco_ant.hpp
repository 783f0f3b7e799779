#pragma once
// The Ant task on MuJoCo, after Gymnasium's Ant-v4 (its defaults; contact forces left out of the observation):
// observation qpos[2:] (13) and qvel (14); reward forward velocity of the torso + healthy reward - 0.5 |a|^2;
// terminated when the state is not finite or the torso height leaves [0.2, 1.0]; 5 MuJoCo steps per env step;
// reset qpos0 + U(-0.1, 0.1), qvel 0.1 N(0, 1). Kept in this one header so gmi::physics's Ant can match it.

#if __has_include(<mujoco/mujoco.h>)
#include <mujoco/mujoco.h>

#include <cmath>
#include <string>

#include <gmi/actors/mujoco_task_parts.hpp>
#include <gmi/concepts/env.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/rng.hpp>

namespace gmi::actors::mujoco {

class ant {
 public:
  static constexpr int obs_size = 27, act_size = 8;
  struct params {
    int frame_skip = 5;
    double forward_reward_weight = 1.0;
    double ctrl_cost_weight = 0.5;
    double healthy_reward = 1.0;
    double healthy_z_min = 0.2, healthy_z_max = 1.0;
    double reset_noise_scale = 0.1;
    int max_steps = 1000;
  };

  // Refuses a model that is not an ant (free torso and 8 hinge actuators), in one line.
  ant(const mjModel* m, params p) : m_(m), p_(p) {
    parts::require_sizes(m, "Ant", 15, 14, 8);
    torso_ = parts::require_named(m, "Ant", mjOBJ_BODY, "body", "torso");
    require(p.frame_skip >= 1, "ant frame_skip", p.frame_skip, ">= 1");
  }

  [[nodiscard]] int obs_dim() const noexcept { return obs_size; }
  [[nodiscard]] int act_dim() const noexcept { return act_size; }
  [[nodiscard]] int max_steps() const noexcept { return p_.max_steps; }
  [[nodiscard]] const params& config() const noexcept { return p_; }
  [[nodiscard]] double dt() const noexcept { return m_->opt.timestep * p_.frame_skip; }

  void reset(mjData* d, gmi::rng& r) const {
    parts::reset_data(m_, d);  // mj_resetData's state without clearing the whole buffer
    const double s = p_.reset_noise_scale;
    for (int i = 0; i < m_->nq; ++i) d->qpos[i] = m_->qpos0[i] + double(r.uniform(float(-s), float(s)));
    for (int i = 0; i < m_->nv; ++i) d->qvel[i] = s * double(r.normal());
    mj_forward(m_, d);
  }

  [[nodiscard]] gmi::transition step(mjData* d, const float* action) const {
    const double x_before = d->xpos[3 * torso_];
    double ctrl_cost = 0;
    for (int u = 0; u < act_size; ++u) {
      d->ctrl[u] = double(action[u]);  // MuJoCo clamps to ctrlrange (ctrllimited)
      ctrl_cost += double(action[u]) * double(action[u]);
    }
    parts::substeps(m_, d, p_.frame_skip);
    const double forward = (d->xpos[3 * torso_] - x_before) / dt();
    const bool healthy = is_healthy(d);
    const double reward = p_.forward_reward_weight * forward + p_.healthy_reward - p_.ctrl_cost_weight * ctrl_cost;
    return {float(reward), !healthy};
  }

  void observe(const mjData* d, float* obs) const {
    for (int i = 2; i < m_->nq; ++i) *obs++ = float(d->qpos[i]);
    for (int i = 0; i < m_->nv; ++i) *obs++ = float(d->qvel[i]);
  }

  [[nodiscard]] bool is_healthy(const mjData* d) const noexcept {
    return parts::state_finite(m_, d) && d->qpos[2] >= p_.healthy_z_min && d->qpos[2] <= p_.healthy_z_max;
  }

 private:
  const mjModel* m_;
  params p_;
  int torso_ = -1;
};

}  // namespace gmi::actors::mujoco
#endif

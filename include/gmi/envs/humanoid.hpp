#pragma once
// Isaac Gym's Humanoid (IsaacGymEnvs' Humanoid task) simulated by gmi::physics on
// include/gmi/physics/builtin/humanoid.xml: one env step is one control step of 1/60 s in 2 physics steps of
// 1/120 s; the action (21, clipped to [-1, 1]) times the power scale is each motor's control (gears 22.5 to 135);
// the 108-dim observation is Isaac Gym's layout (torso height, torso-frame linear and scaled angular velocity, yaw,
// roll and angle to the target, up and heading projections, joint positions scaled to [-1, 1] by their limits,
// scaled joint velocities, the scaled joint forces the motors apply, each foot's scaled contact force and torque,
// the last actions) and the reward is Isaac Gym's (progress toward a target 1000 m away on +x as a potential
// difference, alive bonus, up and heading rewards, action cost, energy and joints-at-limit costs weighted by each
// motor's share of the largest gear); the episode ends with the death cost when the torso is below the termination
// height. Equations and what differs from Isaac Gym's task: docs/envs.md ("humanoid").

#include <vector>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/envs/isaac_gym_common.hpp>
#include <gmi/envs/split_step.hpp>
#include <gmi/physics/builtin/humanoid_model.hpp>
#include <gmi/physics/builtin_task.hpp>
#include <gmi/physics/step_path.hpp>

namespace gmi::envs {

struct humanoid {
  using env_concept = gmi::env_tag;
  using sim = gmi::physics::builtin_sim<gmi::physics::builtin::humanoid_model>;
  static constexpr const char* name = "humanoid";
  static constexpr int nj = sim::nu;  // hinge joints, in tree order (qpos 7 + j, qvel 6 + j), motor j drives joint j
  static constexpr int nfeet = 2;
  static constexpr int obs_dim = isaac_gym::torso_obs + 4 * nj + 6 * nfeet, act_dim = nj;
  // The foot bodies (right_foot, left_foot: the bodies below the ankles), in the order of the observation's
  // force-torque blocks (Isaac Gym creates the right foot's sensor first).
  static constexpr int right_foot_body = 6, left_foot_body = 9;
  // Where the observation's parts start (the first 12 as isaac_gym's).
  static constexpr int obs_dof_pos = isaac_gym::torso_obs, obs_dof_vel = obs_dof_pos + nj,
                       obs_dof_force = obs_dof_vel + nj, obs_foot = obs_dof_force + nj,
                       obs_action = obs_foot + 6 * nfeet;

  struct params {
    int substeps = 2;  // physics steps of the model's 1/120 s per env step (Isaac Gym: dt 1/60, 2 substeps)
    float power_scale = 1.0f;
    float heading_weight = 0.5f, up_weight = 0.1f, alive_reward = 2.0f;
    float actions_cost = 0.01f, energy_cost = 0.05f, joints_at_limit_cost = 0.25f;
    float death_cost = -1.0f, termination_height = 0.8f;
    float dof_vel_scale = 0.1f, angular_velocity_scale = 0.25f, contact_force_scale = 0.01f;
    float target_x = 1000.0f, target_y = 0.0f;
    // Reset noise: joints U(-0.2, 0.2) rad about the start pose, joint velocities U(-0.1, 0.1) rad/s.
    float reset_dof_noise = 0.2f, reset_vel_noise = 0.1f;
    // Reset joints are clamped this far inside their range (rad), as ant's (docs/envs.md).
    float reset_limit_margin = 1e-3f;
    int max_steps = 1000;
    // Constraint solve: Gauss-Seidel sweeps at most, and the stop, as the other physics tasks (envs/ant_v4.hpp).
    int solver_iterations = 100;
    float solver_tolerance = 1e-6f;
    gmi::physics::step_path step_path = gmi::physics::step_path::automatic;
    gmi::physics::model_view<float> model{};  // points into the driver's table (bind_table)
  };

  struct state {
    float qpos[sim::nq];
    float qvel[sim::nv];
    float foot_ft[6 * nfeet];  // per foot: contact force then torque (world frame), unscaled; see finish
    float last_action[nj];     // the clipped actions of the last step
  };

  static std::vector<float> make_table(const params&) { return sim::table(); }
  static void bind_table(params& p, const float* t) {
    p.model = sim::view(t);
    p.model.iterations = p.solver_iterations;
    p.model.tolerance = p.solver_tolerance;
  }

  GMI_HD static float dt(const params& p) { return p.model.timestep * float(p.substeps); }
  GMI_HD static float lower(int j, const params& p) { return p.model.jnt_range[2 * (1 + j)]; }
  GMI_HD static float upper(int j, const params& p) { return p.model.jnt_range[2 * (1 + j) + 1]; }
  GMI_HD static float scaled_pos(const state& s, int j, const params& p) {
    const float lo = lower(j, p), hi = upper(j, p);
    return (2.0f * s.qpos[7 + j] - hi - lo) / (hi - lo);
  }
  // Motor j's effort (its gear: the joint force of action 1 at power scale 1), and the largest.
  GMI_HD static float effort(int j, const params& p) { return p.model.actuator_gear[j]; }
  GMI_HD static float max_effort(const params& p) {
    float m = 0.0f;
    for (int j = 0; j < nj; ++j) m = fmaxf(m, effort(j, p));
    return m;
  }

  // Isaac Gym's start: the torso at the model's pose at rest (1.34 m), each joint at 0 or, where 0 is outside its
  // range, the nearer limit, plus U(-noise, noise) clamped to the range (reset_limit_margin inside it); joint
  // velocities U(-noise, noise).
  GMI_HD static void reset(state& s, gmi::rng& r, const params& p) {
    for (int k = 0; k < 7; ++k) s.qpos[k] = p.model.qpos0[k];
    for (int k = 0; k < 6; ++k) s.qvel[k] = 0.0f;
    for (int j = 0; j < nj; ++j) {
      const float lo = lower(j, p) + p.reset_limit_margin, hi = upper(j, p) - p.reset_limit_margin;
      const float start = lo > 0.0f ? lo : (hi < 0.0f ? hi : 0.0f);
      s.qpos[7 + j] = fminf(fmaxf(start + r.uniform(-p.reset_dof_noise, p.reset_dof_noise), lo), hi);
      s.qvel[6 + j] = r.uniform(-p.reset_vel_noise, p.reset_vel_noise);
    }
    for (float& f : s.foot_ft) f = 0.0f;
    for (float& a : s.last_action) a = 0.0f;
  }

  GMI_HD static void observe(const state& s, float* obs, const params& p) {
    isaac_gym::observe_torso(s.qpos, s.qvel, p.angular_velocity_scale, p.target_x, p.target_y, obs);
    for (int j = 0; j < nj; ++j) {
      obs[obs_dof_pos + j] = scaled_pos(s, j, p);
      obs[obs_dof_vel + j] = p.dof_vel_scale * s.qvel[6 + j];
      // The joint force the motor applied over the last step (Isaac Gym's dof force tensor under its actuation).
      obs[obs_dof_force + j] = p.contact_force_scale * (p.power_scale * effort(j, p) * s.last_action[j]);
      obs[obs_action + j] = s.last_action[j];
    }
    for (int k = 0; k < 6 * nfeet; ++k) obs[obs_foot + k] = p.contact_force_scale * s.foot_ft[k];
  }

  // The reward's terms (their sum is the reward of a step that did not end the episode); progress from the
  // torso's (x, y) before the step, the others from the new state and the step's clipped actions.
  struct reward_terms {
    float progress, alive, up, heading, actions, energy, joints_at_limit;
    GMI_HD float sum() const { return progress + alive + up + heading - actions - energy - joints_at_limit; }
  };
  GMI_HD static reward_terms terms(const state& s, const float* xy_before, const float* clipped, const params& p) {
    float o[isaac_gym::torso_obs];
    isaac_gym::observe_torso(s.qpos, s.qvel, p.angular_velocity_scale, p.target_x, p.target_y, o);
    reward_terms t;
    t.progress = isaac_gym::progress(xy_before, s.qpos, p.target_x, p.target_y, dt(p));
    t.alive = p.alive_reward;
    t.up = isaac_gym::up_reward(o, p.up_weight);
    t.heading = isaac_gym::heading_reward(o, p.heading_weight);
    const float inv_max = 1.0f / max_effort(p);
    float a2 = 0.0f, energy = 0.0f, at_limit = 0.0f;
    for (int j = 0; j < nj; ++j) {
      const float ratio = effort(j, p) * inv_max;
      a2 += clipped[j] * clipped[j];
      energy += fabsf(clipped[j] * p.dof_vel_scale * s.qvel[6 + j]) * ratio;
      const float x = fabsf(scaled_pos(s, j, p));
      if (x > 0.98f) at_limit += (x - 0.98f) / 0.02f * ratio;  // both limits, in proportion past 0.98
    }
    t.actions = p.actions_cost * a2;
    t.energy = p.energy_cost * energy;
    t.joints_at_limit = p.joints_at_limit_cost * at_limit;
    return t;
  }

  // The foot of a body (-1: none), for isaac_gym::foot_forces.
  GMI_HD static int foot_of(int body) { return body == right_foot_body ? 0 : (body == left_foot_body ? 1 : -1); }

  // The step in three parts, so that a driver can run the physics between them on any path
  // (rl/physics_env_step.cuh, rl/physics_staged.hpp): control (the motors' controls and the torso's x, y before),
  // the physics (physics_substeps(p) steps of sim), finish (contact forces, reward and termination).
  static constexpr int carry_dim = 2;  // the torso's x, y before the step
  GMI_HD static int physics_substeps(const params& p) { return p.substeps; }
  GMI_HD static void control(const state& s, const float* action, const params& p, float* ctrl, float* carry, float*) {
    for (int j = 0; j < nj; ++j) ctrl[j] = p.power_scale * isaac_gym::clip(action[j]);
    carry[0] = s.qpos[0];
    carry[1] = s.qpos[1];
  }
  GMI_HD static gmi::transition finish(state& s, const float* action, const float* carry,
                                       const gmi::physics::data<float>& d, const params& p, float*) {
    float clipped[nj];
    for (int j = 0; j < nj; ++j) s.last_action[j] = clipped[j] = isaac_gym::clip(action[j]);
    const bool finite = sim::finite(s.qpos, sim::nq) && sim::finite(s.qvel, sim::nv);
    if (!finite) {
      for (float& f : s.foot_ft) f = 0.0f;
      return {0.0f, true};
    }
    isaac_gym::foot_forces<humanoid>(d, p.model, s.foot_ft);
    if (s.qpos[2] < p.termination_height) return {p.death_cost, true};
    return {terms(s, carry, clipped, p).sum(), false};
  }

  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    return split_step<humanoid>(s, action, p);
  }
};

static_assert(gmi::env<humanoid>);

}  // namespace gmi::envs

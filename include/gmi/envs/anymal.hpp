#pragma once
// Anymal: a 12-joint quadruped of our own at ANYmal's scale (include/gmi/physics/builtin/anymal.xml) on flat
// ground, tracking a base velocity command (forward, sideways, yaw rate) drawn at every reset, after Isaac
// Lab's ANYmal flat-terrain velocity task: the action sets joint PD targets around a standing pose, the
// reward is exponential tracking of the command minus penalties (vertical and rolling motion, torques, joint
// accelerations, action changes, a tilted base), scaled by the control step; the episode ends when the base
// touches the floor. One env step is 4 physics steps of 5 ms (0.02 s). 48-dim observation, 12 actions.
// Terms and differences from Isaac Lab: docs/envs.md.

#include <vector>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/envs/split_step.hpp>
#include <gmi/physics/builtin/anymal_model.hpp>
#include <gmi/physics/builtin_task.hpp>
#include <gmi/physics/step_path.hpp>

namespace gmi::envs {

struct anymal {
  using env_concept = gmi::env_tag;
  using sim = gmi::physics::builtin_sim<gmi::physics::builtin::anymal_model>;
  static constexpr const char* name = "anymal";
  static constexpr int nj = sim::nu;  // joints, one servo each, in qpos order (7 + j)
  static constexpr int obs_dim = 3 + 3 + 3 + 3 + 3 * nj, act_dim = nj;
  static constexpr int base_geom = 1;  // the base box; its contact with the floor ends the episode

  struct params {
    int decimation = 4;
    float action_scale = 0.5f;  // rad of PD target per unit action
    float hip = 0.0f, thigh = 0.4f, knee = -0.8f;  // standing pose (rad) of the front legs; hind legs mirrored
    float command_range = 1.0f;  // commands uniform in [-range, range] (m/s, m/s, rad/s)
    float joint_scale_lo = 0.8f, joint_scale_hi = 1.2f;  // reset joints at the pose times U(lo, hi)
    float base_height = 0.52f;
    float tracking_sigma2 = 0.25f;
    float w_lin_track = 1.0f, w_ang_track = 0.5f, w_lin_z = -2.0f, w_ang_xy = -0.05f, w_torque = -2.5e-5f,
          w_dof_acc = -2.5e-7f, w_action_rate = -0.01f, w_flat = -5.0f;
    int max_steps = 1000;  // 20 s
    // Constraint solve: Gauss-Seidel sweeps at most, and the stop (no force changes by more than tolerance
    // times 1 + the largest force). 1e-7 follows MuJoCo far closer (tests/physics/tasks_mujoco_test.cpp) at a
    // higher cost; docs/envs.md has both.
    int solver_iterations = 100;
    float solver_tolerance = 1e-6f;
    // The GPU driver's path (thread or warp per environment; auto: the rule of physics/step_path.hpp).
    gmi::physics::step_path step_path = gmi::physics::step_path::automatic;
    gmi::physics::model_view<float> model{};
  };

  struct state {
    float qpos[sim::nq];
    float qvel[sim::nv];
    float command[3];
    float last_action[nj];
  };

  static std::vector<float> make_table(const params&) { return sim::table(); }
  static void bind_table(params& p, const float* t) {
    p.model = sim::view(t);
    p.model.iterations = p.solver_iterations;
    p.model.tolerance = p.solver_tolerance;
  }

  GMI_HD static float dt(const params& p) { return p.model.timestep * float(p.decimation); }
  GMI_HD static float default_joint(int j, const params& p) {
    const int k = j % 3;
    const float side = j < 6 ? 1.0f : -1.0f;  // legs LF, RF, LH, RH: hind knees bend the other way (an X stance)
    return k == 0 ? p.hip : side * (k == 1 ? p.thigh : p.knee);
  }

  GMI_HD static void reset(state& s, gmi::rng& r, const params& p) {
    const float yaw = r.uniform(-3.14159265f, 3.14159265f);
    s.qpos[0] = 0.0f;
    s.qpos[1] = 0.0f;
    s.qpos[2] = p.base_height;
    s.qpos[3] = cosf(0.5f * yaw);
    s.qpos[4] = 0.0f;
    s.qpos[5] = 0.0f;
    s.qpos[6] = sinf(0.5f * yaw);
    for (int j = 0; j < nj; ++j) s.qpos[7 + j] = default_joint(j, p) * r.uniform(p.joint_scale_lo, p.joint_scale_hi);
    for (int k = 0; k < sim::nv; ++k) s.qvel[k] = 0.0f;
    for (int k = 0; k < 3; ++k) s.command[k] = r.uniform(-p.command_range, p.command_range);
    for (int j = 0; j < nj; ++j) s.last_action[j] = 0.0f;
  }

  // v in the base frame: the conjugate of the base quaternion applied to a world vector.
  GMI_HD static void to_base(const float* q, const float* v, float* out) {
    const float w = q[0], ux = -q[1], uy = -q[2], uz = -q[3];
    const float tx = 2.0f * (uy * v[2] - uz * v[1]), ty = 2.0f * (uz * v[0] - ux * v[2]),
                tz = 2.0f * (ux * v[1] - uy * v[0]);
    out[0] = v[0] + w * tx + (uy * tz - uz * ty);
    out[1] = v[1] + w * ty + (uz * tx - ux * tz);
    out[2] = v[2] + w * tz + (ux * ty - uy * tx);
  }

  // The reward's terms, each already weighted and scaled by the control step (their sum is the reward).
  struct reward_terms {
    float lin_track, ang_track, lin_z, ang_xy, torque, dof_acc, action_rate, flat;
    GMI_HD float sum() const { return lin_track + ang_track + lin_z + ang_xy + torque + dof_acc + action_rate + flat; }
  };

  GMI_HD static reward_terms terms(const state& s, const float* qvel_before, const float* action,
                                   const float* torque, const params& p) {
    float v[3], g[3];
    to_base(s.qpos + 3, s.qvel, v);
    const float down[3] = {0.0f, 0.0f, -1.0f};
    to_base(s.qpos + 3, down, g);
    const float* w = s.qvel + 3;  // angular velocity, base frame
    const float h = dt(p);
    const float ex = s.command[0] - v[0], ey = s.command[1] - v[1], ez = s.command[2] - w[2];
    float tau2 = 0.0f, acc2 = 0.0f, rate2 = 0.0f;
    for (int j = 0; j < nj; ++j) {
      tau2 += torque[j] * torque[j];
      const float a = (s.qvel[6 + j] - qvel_before[6 + j]) / h;
      acc2 += a * a;
      rate2 += (action[j] - s.last_action[j]) * (action[j] - s.last_action[j]);
    }
    reward_terms t;
    t.lin_track = h * p.w_lin_track * expf(-(ex * ex + ey * ey) / p.tracking_sigma2);
    t.ang_track = h * p.w_ang_track * expf(-(ez * ez) / p.tracking_sigma2);
    t.lin_z = h * p.w_lin_z * v[2] * v[2];
    t.ang_xy = h * p.w_ang_xy * (w[0] * w[0] + w[1] * w[1]);
    t.torque = h * p.w_torque * tau2;
    t.dof_acc = h * p.w_dof_acc * acc2;
    t.action_rate = h * p.w_action_rate * rate2;
    t.flat = h * p.w_flat * (g[0] * g[0] + g[1] * g[1]);
    return t;
  }

  // The step in three parts, so that a driver can run the physics between them with a warp per environment
  // (rl/physics_env_step.cuh): control (PD targets and the velocities before), the physics
  // (physics_substeps(p) steps of sim), finish (reward and termination from the new state and the last physics
  // step's torques and contacts).
  static constexpr int carry_dim = sim::nv;  // qvel before the step
  GMI_HD static int physics_substeps(const params& p) { return p.decimation; }
  GMI_HD static void control(const state& s, const float* action, const params& p, float* ctrl, float* carry, float*) {
    for (int j = 0; j < nj; ++j) ctrl[j] = default_joint(j, p) + p.action_scale * action[j];
    for (int k = 0; k < sim::nv; ++k) carry[k] = s.qvel[k];
  }
  GMI_HD static gmi::transition finish(state& s, const float* action, const float* carry,
                                       const gmi::physics::data<float>& d, const params& p, float*) {
    float torque[nj];
    for (int j = 0; j < nj; ++j) torque[j] = d.actuator_force[j];
    bool base_contact = false;
    const int ncon = static_cast<int>(d.ncon[0]);
    for (int c = 0; c < ncon; ++c) {
      const int pair = static_cast<int>(d.con_pair[c]);
      base_contact = base_contact || p.model.pair_geom1[pair] == base_geom || p.model.pair_geom2[pair] == base_geom;
    }
    const bool finite = sim::finite(s.qpos, sim::nq) && sim::finite(s.qvel, sim::nv);
    const float reward = finite ? terms(s, carry, action, torque, p).sum() : 0.0f;
    for (int j = 0; j < nj; ++j) s.last_action[j] = action[j];
    return {reward, base_contact || !finite};
  }

  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    return split_step<anymal>(s, action, p);
  }

  GMI_HD static void observe(const state& s, float* obs, const params& p) {
    to_base(s.qpos + 3, s.qvel, obs);
    for (int k = 0; k < 3; ++k) obs[3 + k] = s.qvel[3 + k];
    const float down[3] = {0.0f, 0.0f, -1.0f};
    to_base(s.qpos + 3, down, obs + 6);
    for (int k = 0; k < 3; ++k) obs[9 + k] = s.command[k];
    for (int j = 0; j < nj; ++j) {
      obs[12 + j] = s.qpos[7 + j] - default_joint(j, p);
      obs[12 + nj + j] = s.qvel[6 + j];
      obs[12 + 2 * nj + j] = s.last_action[j];
    }
  }
};

static_assert(gmi::env<anymal>);

}  // namespace gmi::envs

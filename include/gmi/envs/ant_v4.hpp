#pragma once
// Ant: the classic four-legged MuJoCo ant_v4 (include/gmi/physics/builtin/ant_v4.xml) simulated by gmi::physics,
// rewarded as Gymnasium's Ant-v4 without contact forces: forward velocity of the torso + a healthy bonus -
// 0.5 |a|^2; the episode ends when the torso leaves 0.2 <= z <= 1 or the state stops being finite. One env
// step is frame_skip physics steps of 10 ms (0.05 s). 27-dim observation (qpos without x, y; qvel), 8 actions
// (motor controls in [-1, 1]). Equations and differences from Gymnasium: docs/envs.md.

#include <vector>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/envs/split_step.hpp>
#include <gmi/physics/builtin/ant_v4_model.hpp>
#include <gmi/physics/builtin_task.hpp>
#include <gmi/physics/step_path.hpp>

namespace gmi::envs {

struct ant_v4 {
  using env_concept = gmi::env_tag;
  using sim = gmi::physics::builtin_sim<gmi::physics::builtin::ant_v4_model>;
  static constexpr const char* name = "ant_v4";
  static constexpr int obs_dim = sim::nq - 2 + sim::nv, act_dim = sim::nu;

  struct params {
    int frame_skip = 5;
    float forward_reward_weight = 1.0f;
    float ctrl_cost_weight = 0.5f;
    float healthy_reward = 1.0f;
    float healthy_z_min = 0.2f, healthy_z_max = 1.0f;
    float reset_noise = 0.1f;  // qpos + U(-noise, noise), qvel + noise N(0, 1)
    int max_steps = 1000;
    // Constraint solve: Gauss-Seidel sweeps at most, and the stop (no force changes by more than tolerance
    // times 1 + the largest force). 1e-7 follows MuJoCo far closer (tests/physics/tasks_mujoco_test.cpp) at a
    // higher cost; docs/envs.md has both.
    int solver_iterations = 100;
    float solver_tolerance = 1e-6f;
    // The GPU driver's path (thread or warp per environment; auto: the rule of physics/step_path.hpp).
    gmi::physics::step_path step_path = gmi::physics::step_path::automatic;
    gmi::physics::model_view<float> model{};  // points into the driver's table (bind_table)
  };

  struct state {
    float qpos[sim::nq];
    float qvel[sim::nv];
  };

  static std::vector<float> make_table(const params&) { return sim::table(); }
  static void bind_table(params& p, const float* t) {
    p.model = sim::view(t);
    p.model.iterations = p.solver_iterations;
    p.model.tolerance = p.solver_tolerance;
  }

  GMI_HD static float dt(const params& p) { return p.model.timestep * float(p.frame_skip); }

  GMI_HD static void reset(state& s, gmi::rng& r, const params& p) {
    for (int k = 0; k < sim::nq; ++k) s.qpos[k] = p.model.qpos0[k] + r.uniform(-p.reset_noise, p.reset_noise);
    for (int k = 0; k < sim::nv; ++k) s.qvel[k] = p.reset_noise * r.normal();
    normalize_root(s.qpos);
  }

  // The free joint's quaternion (qpos 3..6) to unit length after the noise.
  GMI_HD static void normalize_root(float* qpos) {
    const float n = sqrtf(qpos[3] * qpos[3] + qpos[4] * qpos[4] + qpos[5] * qpos[5] + qpos[6] * qpos[6]);
    for (int k = 3; k < 7; ++k) qpos[k] /= n;
  }

  GMI_HD static bool healthy(const state& s, const params& p) {
    return sim::finite(s.qpos, sim::nq) && sim::finite(s.qvel, sim::nv) && s.qpos[2] >= p.healthy_z_min &&
           s.qpos[2] <= p.healthy_z_max;
  }

  // The step in three parts, so that a driver can run the physics between them with a warp per environment
  // (rl/physics_env_step.cuh): control (controls and what the reward needs from before), the physics
  // (physics_substeps(p) steps of sim), finish (reward and termination from the new state and the last physics step).
  static constexpr int carry_dim = 2;  // x before the step, control cost
  GMI_HD static int physics_substeps(const params& p) { return p.frame_skip; }
  GMI_HD static void control(const state& s, const float* action, const params&, float* ctrl, float* carry, float*) {
    float ctrl_cost = 0.0f;
    for (int k = 0; k < sim::nu; ++k) {
      ctrl[k] = fminf(fmaxf(action[k], -1.0f), 1.0f);
      ctrl_cost += ctrl[k] * ctrl[k];
    }
    carry[0] = s.qpos[0];
    carry[1] = ctrl_cost;
  }
  GMI_HD static gmi::transition finish(state& s, const float*, const float* carry, const gmi::physics::data<float>&,
                                       const params& p, float*) {
    const float forward = (s.qpos[0] - carry[0]) / dt(p);
    const bool ok = healthy(s, p);
    return {p.forward_reward_weight * forward + p.healthy_reward - p.ctrl_cost_weight * carry[1], !ok};
  }

  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    return split_step<ant_v4>(s, action, p);
  }

  GMI_HD static void observe(const state& s, float* obs, const params&) {
    for (int k = 2; k < sim::nq; ++k) obs[k - 2] = s.qpos[k];
    for (int k = 0; k < sim::nv; ++k) obs[sim::nq - 2 + k] = s.qvel[k];
  }
};

static_assert(gmi::env<ant_v4>);

}  // namespace gmi::envs

#pragma once
// Cartpole: exactly the dynamics, reward, reset and time limit of the Isaac-Gym-style PyTorch anchor
// (shared/anchors/torch_isaacgym_style.py), so gmi and the anchor run the same task. Equations: docs/envs.md.

#include <cmath>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>

namespace gmi::envs {

struct cartpole {
  using env_concept = gmi::env_tag;
  static constexpr const char* name = "cartpole";
  static constexpr int obs_dim = 4, act_dim = 1;
  // Mean episode return at which the task counts as solved (of at most 500; bench-spec, target 5).
  static constexpr double solved_return = 450.0;

  struct params {
    float force_scale = 10.0f;  // N per unit action; the action is clamped to [-1, 1]
    float gravity = 9.8f;
    float cart_mass = 1.0f;
    float pole_mass = 0.1f;
    float half_length = 0.5f;  // the anchor's l: distance from the pivot to the pole's centre of mass
    float dt = 1.0f / 60.0f;   // explicit Euler, one step per action
    float x_limit = 3.0f;
    float theta_limit = 1.57079632679489661923f;  // pi / 2
    float fall_reward = -2.0f;  // replaces the reward on a fall before the time limit
    float reset_range = 0.1f;   // each state variable starts uniform in [-reset_range, reset_range)
    int max_steps = 500;
  };

  struct state {
    float x, x_dot, theta, theta_dot;
    int t;  // steps in this episode: the anchor's fall reward depends on it
  };

  GMI_HD static void reset(state& s, gmi::rng& r, const params& p) {
    // The anchor draws (rand - 0.5) * 0.2 per variable, in this order.
    s.x = (r.uniform() - 0.5f) * (2.0f * p.reset_range);
    s.x_dot = (r.uniform() - 0.5f) * (2.0f * p.reset_range);
    s.theta = (r.uniform() - 0.5f) * (2.0f * p.reset_range);
    s.theta_dot = (r.uniform() - 0.5f) * (2.0f * p.reset_range);
    s.t = 0;
  }

  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    const float a = fminf(fmaxf(action[0], -1.0f), 1.0f);
    const float f = a * p.force_scale;
    const float total_mass = p.cart_mass + p.pole_mass;
    const float ct = cosf(s.theta), st = sinf(s.theta);
    const float tmp = (f + p.pole_mass * p.half_length * s.theta_dot * s.theta_dot * st) / total_mass;
    const float theta_acc =
        (p.gravity * st - ct * tmp) / (p.half_length * (4.0f / 3.0f - p.pole_mass * ct * ct / total_mass));
    const float x_acc = tmp - p.pole_mass * p.half_length * theta_acc * ct / total_mass;
    // Explicit Euler: positions advance with the old velocities.
    s.x = s.x + p.dt * s.x_dot;
    s.x_dot = s.x_dot + p.dt * x_acc;
    s.theta = s.theta + p.dt * s.theta_dot;
    s.theta_dot = s.theta_dot + p.dt * theta_acc;
    s.t += 1;
    float reward = 1.0f - s.theta * s.theta - 0.01f * fabsf(s.x_dot) - 0.005f * fabsf(s.theta_dot);
    const bool fell = fabsf(s.x) > p.x_limit || fabsf(s.theta) > p.theta_limit;
    if (fell && s.t < p.max_steps) reward = p.fall_reward;
    return {reward, fell};
  }

  GMI_HD static void observe(const state& s, float* obs, const params&) {
    obs[0] = s.x;
    obs[1] = s.x_dot;
    obs[2] = s.theta;
    obs[3] = s.theta_dot;
  }
};

static_assert(gmi::env<cartpole>);

}  // namespace gmi::envs

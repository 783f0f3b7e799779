#pragma once
// CartpoleDiscrete: the classic control task with Gym's CartPole-v1 rules, two discrete actions (push the cart left
// or right with a fixed force), reward 1 on every step, the episode ends when the pole leans past 12 degrees or the
// cart leaves [-2.4, 2.4], time limit 500 steps. Trained with a categorical agent (gmi::agents::categorical_mlp).
// Equations: docs/envs.md.

#include <cmath>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>

namespace gmi::envs {

struct cartpole_discrete {
  using env_concept = gmi::env_tag;
  static constexpr const char* name = "cartpole_discrete";
  static constexpr int obs_dim = 4, act_dim = 1;
  static constexpr int num_actions = 2;  // 0: push left, 1: push right (action[0] is the index as a float)
  // Gym's threshold for CartPole-v1 (of at most 500).
  static constexpr double solved_return = 475.0;

  struct params {
    float force = 10.0f;  // N, the push of either action
    float gravity = 9.8f;
    float cart_mass = 1.0f;
    float pole_mass = 0.1f;
    float half_length = 0.5f;  // Gym's `length`: pivot to the pole's centre of mass
    float dt = 0.02f;          // explicit Euler, one step per action
    float x_limit = 2.4f;
    float theta_limit = 12.0f * 2.0f * 3.14159265358979323846f / 360.0f;  // 12 degrees, as Gym computes it
    float reset_range = 0.05f;  // each state variable starts uniform in [-reset_range, reset_range)
    int max_steps = 500;
  };

  struct state {
    float x, x_dot, theta, theta_dot;
  };

  GMI_HD static void reset(state& s, gmi::rng& r, const params& p) {
    s.x = r.uniform(-p.reset_range, p.reset_range);
    s.x_dot = r.uniform(-p.reset_range, p.reset_range);
    s.theta = r.uniform(-p.reset_range, p.reset_range);
    s.theta_dot = r.uniform(-p.reset_range, p.reset_range);
  }

  // action[0] >= 0.5 pushes right (index 1), anything else left (index 0).
  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    const float f = action[0] >= 0.5f ? p.force : -p.force;
    const float total_mass = p.cart_mass + p.pole_mass;
    const float pole_moment = p.pole_mass * p.half_length;
    const float ct = cosf(s.theta), st = sinf(s.theta);
    const float tmp = (f + pole_moment * s.theta_dot * s.theta_dot * st) / total_mass;
    const float theta_acc =
        (p.gravity * st - ct * tmp) / (p.half_length * (4.0f / 3.0f - p.pole_mass * ct * ct / total_mass));
    const float x_acc = tmp - pole_moment * theta_acc * ct / total_mass;
    s.x = s.x + p.dt * s.x_dot;
    s.x_dot = s.x_dot + p.dt * x_acc;
    s.theta = s.theta + p.dt * s.theta_dot;
    s.theta_dot = s.theta_dot + p.dt * theta_acc;
    const bool fell = s.x < -p.x_limit || s.x > p.x_limit || s.theta < -p.theta_limit || s.theta > p.theta_limit;
    return {1.0f, fell};
  }

  GMI_HD static void observe(const state& s, float* obs, const params&) {
    obs[0] = s.x;
    obs[1] = s.x_dot;
    obs[2] = s.theta;
    obs[3] = s.theta_dot;
  }
};

static_assert(gmi::env<cartpole_discrete>);
static_assert(gmi::has_discrete_actions<cartpole_discrete>);

}  // namespace gmi::envs

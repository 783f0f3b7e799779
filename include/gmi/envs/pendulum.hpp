#pragma once
// Pendulum: a rod on a motorised pivot, swung up and held upright (the classic Gym task). Semi-implicit
// (symplectic) Euler, so the undamped, unforced pendulum keeps its energy to O(dt) without drift.

#include <cmath>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>

namespace gmi::envs {

struct pendulum {
  using env_concept = gmi::env_tag;
  static constexpr const char* name = "pendulum";
  static constexpr int obs_dim = 3, act_dim = 1;

  struct params {
    float gravity = 10.0f;
    float mass = 1.0f;
    float length = 1.0f;      // a uniform rod: inertia m l^2 / 3, centre of mass at l / 2
    float max_torque = 2.0f;  // the action in [-1, 1] scales to [-max_torque, max_torque]
    float max_speed = 8.0f;   // angular speed clamp after each step (Gym's); set large to study the free pendulum
    float dt = 0.05f;
    int max_steps = 200;
  };

  struct state {
    float theta;  // 0 = upright
    float theta_dot;
  };

  GMI_HD static void reset(state& s, gmi::rng& r, const params&) {
    s.theta = r.uniform(-3.14159265358979f, 3.14159265358979f);
    s.theta_dot = r.uniform(-1.0f, 1.0f);
  }

  GMI_HD static float wrap(float a) {  // to [-pi, pi)
    constexpr float pi = 3.14159265358979f;
    return a - 2.0f * pi * floorf((a + pi) / (2.0f * pi));
  }

  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    const float u = fminf(fmaxf(action[0], -1.0f), 1.0f) * p.max_torque;
    const float th = wrap(s.theta);
    const float cost = th * th + 0.1f * s.theta_dot * s.theta_dot + 0.001f * u * u;
    const float acc = 3.0f * p.gravity / (2.0f * p.length) * sinf(s.theta) + 3.0f / (p.mass * p.length * p.length) * u;
    s.theta_dot = fminf(fmaxf(s.theta_dot + acc * p.dt, -p.max_speed), p.max_speed);
    s.theta = s.theta + s.theta_dot * p.dt;  // with the new velocity: semi-implicit Euler
    return {-cost, false};
  }

  GMI_HD static void observe(const state& s, float* obs, const params&) {
    obs[0] = cosf(s.theta);
    obs[1] = sinf(s.theta);
    obs[2] = s.theta_dot;
  }

  // Mechanical energy (0 = at rest upright is the maximum m g l / 2): used by the physics tests.
  GMI_HD static double energy(const state& s, const params& p) {
    const double inertia = double(p.mass) * p.length * p.length / 3.0;
    return 0.5 * inertia * double(s.theta_dot) * s.theta_dot + double(p.mass) * p.gravity * p.length / 2.0 * cos(double(s.theta));
  }
};

static_assert(gmi::env<pendulum>);

}  // namespace gmi::envs

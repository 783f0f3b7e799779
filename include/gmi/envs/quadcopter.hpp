#pragma once
// Quadcopter: a 6-DoF rigid body lifted by four rotors whose thrust axes tilt on two-axis servo gimbals (the
// 8 arm joints of Isaac Gym's quadcopter) and hovering at a target. 21-dim observation, 12 actions:
// actions 0..7 are gimbal angle targets (rotor k: roll about body x = action 2k, then pitch about body y =
// action 2k+1, each scaled by tilt_limit), actions 8..11 are rotor thrusts ((a + 1) / 2 * max_thrust, so -1 is
// zero thrust). Semi-implicit Euler at dt. Equations: docs/envs.md.

#include <cmath>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/envs/detail/rigid_body.hpp>

namespace gmi::envs {

struct quadcopter {
  using env_concept = gmi::env_tag;
  static constexpr const char* name = "quadcopter";
  static constexpr int obs_dim = 21, act_dim = 12;

  struct params {
    float mass = 1.0f;
    float inertia_xx = 0.01f, inertia_yy = 0.01f, inertia_zz = 0.02f;
    float arm_length = 0.2f;    // rotor hubs at (+-a, +-a, 0) / sqrt(2): X configuration
    float max_thrust = 5.0f;    // N per rotor; 4 x 5 N lifts about twice the weight
    float yaw_moment = 0.02f;   // m: reaction torque along the rotor axis per N of thrust, sign alternates
    float tilt_limit = 0.5f;    // rad
    float servo_time = 0.05f;   // s: first-order gimbal servo time constant
    float gravity = 9.81f;
    float dt = 0.01f;
    float target_z = 1.0f;
    float max_distance = 3.0f;  // terminate beyond this distance from the target ...
    float min_height = 0.3f;    // ... or below this height
    int max_steps = 500;
  };

  struct state {
    detail::rigid_body body;
    float tilt[8];
  };

  GMI_HD static void reset(state& s, gmi::rng& r, const params& p) {
    s.body.pos = {r.uniform(-0.5f, 0.5f), r.uniform(-0.5f, 0.5f), p.target_z + r.uniform(-0.5f, 0.5f)};
    s.body.vel = {r.uniform(-0.2f, 0.2f), r.uniform(-0.2f, 0.2f), r.uniform(-0.2f, 0.2f)};
    s.body.rot = {1.0f, 0.0f, 0.0f, 0.0f};
    s.body.ang_vel = {r.uniform(-0.2f, 0.2f), r.uniform(-0.2f, 0.2f), r.uniform(-0.2f, 0.2f)};
    for (float& t : s.tilt) t = 0.0f;
  }

  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    using detail::vec3;
    const float follow = fminf(p.dt / p.servo_time, 1.0f);
    for (int j = 0; j < 8; ++j) {
      const float target = fminf(fmaxf(action[j], -1.0f), 1.0f) * p.tilt_limit;
      s.tilt[j] += (target - s.tilt[j]) * follow;
    }
    const float h = p.arm_length * 0.70710678f;
    const vec3 hubs[4] = {{h, h, 0.0f}, {-h, h, 0.0f}, {-h, -h, 0.0f}, {h, -h, 0.0f}};
    vec3 force{0.0f, 0.0f, 0.0f}, torque{0.0f, 0.0f, 0.0f};
    for (int k = 0; k < 4; ++k) {
      const float thrust = fminf(fmaxf((action[8 + k] + 1.0f) * 0.5f, 0.0f), 1.0f) * p.max_thrust;
      const float a = s.tilt[2 * k], b = s.tilt[2 * k + 1];
      const vec3 axis{cosf(a) * sinf(b), -sinf(a), cosf(a) * cosf(b)};  // R_y(b) R_x(a) e_z
      const vec3 f = thrust * axis;
      const float spin = (k % 2 == 0) ? 1.0f : -1.0f;
      force = force + f;
      torque = torque + detail::cross(hubs[k], f) + (spin * p.yaw_moment) * f;
    }
    detail::integrate(s.body, force, torque, p.mass, {p.inertia_xx, p.inertia_yy, p.inertia_zz}, p.gravity, p.dt);
    const vec3 target{0.0f, 0.0f, p.target_z};
    const vec3 e = target - s.body.pos;
    const bool out = detail::dot(e, e) > p.max_distance * p.max_distance || s.body.pos.z < p.min_height;
    return {detail::hover_reward(s.body, target), out};
  }

  GMI_HD static void observe(const state& s, float* obs, const params& p) {
    obs[0] = -s.body.pos.x;
    obs[1] = -s.body.pos.y;
    obs[2] = p.target_z - s.body.pos.z;
    obs[3] = s.body.rot.w;
    obs[4] = s.body.rot.x;
    obs[5] = s.body.rot.y;
    obs[6] = s.body.rot.z;
    obs[7] = s.body.vel.x;
    obs[8] = s.body.vel.y;
    obs[9] = s.body.vel.z;
    obs[10] = s.body.ang_vel.x;
    obs[11] = s.body.ang_vel.y;
    obs[12] = s.body.ang_vel.z;
    for (int j = 0; j < 8; ++j) obs[13 + j] = s.tilt[j];
  }
};

static_assert(gmi::env<quadcopter>);

}  // namespace gmi::envs

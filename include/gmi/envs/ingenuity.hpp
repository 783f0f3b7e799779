#pragma once
// Ingenuity: a coaxial helicopter (two counter-rotating rotors on the body z axis) hovering at a target under
// Mars gravity. 13-dim observation, 6 actions: rotor k (0 = lower, 1 = upper) takes actions 3k..3k+2 as
// (cyclic x, cyclic y, collective): thrust T = (collective + 1) / 2 * max_thrust along body z, tilted by the
// cyclic into a lateral force cyclic_limit * cyclic * T. Yaw comes from the thrust difference of the two
// rotors (their reaction torques oppose). Semi-implicit Euler at dt. Equations: docs/envs.md.

#include <cmath>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/envs/detail/rigid_body.hpp>

namespace gmi::envs {

struct ingenuity {
  using env_concept = gmi::env_tag;
  static constexpr const char* name = "ingenuity";
  static constexpr int obs_dim = 13, act_dim = 6;

  struct params {
    float mass = 1.8f;  // kg, as the Mars helicopter
    float inertia_xx = 0.03f, inertia_yy = 0.03f, inertia_zz = 0.05f;
    float rotor_height[2] = {0.2f, 0.3f};  // m above the centre of mass: lower, upper
    float max_thrust = 8.0f;               // N per rotor; weight is 1.8 * 3.721 = 6.7 N
    float cyclic_limit = 0.2f;             // lateral force per N of thrust at full cyclic
    float yaw_moment = 0.03f;              // m: reaction torque per N of thrust (+ upper, - lower)
    float gravity = 3.721f;                // Mars
    float dt = 0.01f;
    float target_z = 1.0f;
    float max_distance = 3.0f;
    float min_height = 0.3f;
    int max_steps = 500;
  };

  using state = detail::rigid_body;

  GMI_HD static void reset(state& s, gmi::rng& r, const params& p) {
    s.pos = {r.uniform(-0.5f, 0.5f), r.uniform(-0.5f, 0.5f), p.target_z + r.uniform(-0.5f, 0.5f)};
    s.vel = {r.uniform(-0.2f, 0.2f), r.uniform(-0.2f, 0.2f), r.uniform(-0.2f, 0.2f)};
    s.rot = {1.0f, 0.0f, 0.0f, 0.0f};
    s.ang_vel = {r.uniform(-0.2f, 0.2f), r.uniform(-0.2f, 0.2f), r.uniform(-0.2f, 0.2f)};
  }

  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    using detail::vec3;
    vec3 force{0.0f, 0.0f, 0.0f}, torque{0.0f, 0.0f, 0.0f};
    for (int k = 0; k < 2; ++k) {
      const float* a = action + 3 * k;
      const float thrust = fminf(fmaxf((a[2] + 1.0f) * 0.5f, 0.0f), 1.0f) * p.max_thrust;
      const float cx = fminf(fmaxf(a[0], -1.0f), 1.0f) * p.cyclic_limit;
      const float cy = fminf(fmaxf(a[1], -1.0f), 1.0f) * p.cyclic_limit;
      const vec3 f{cx * thrust, cy * thrust, thrust};
      const float spin = k == 1 ? 1.0f : -1.0f;
      force = force + f;
      torque = torque + detail::cross(vec3{0.0f, 0.0f, p.rotor_height[k]}, f) + vec3{0.0f, 0.0f, spin * p.yaw_moment * thrust};
    }
    detail::integrate(s, force, torque, p.mass, {p.inertia_xx, p.inertia_yy, p.inertia_zz}, p.gravity, p.dt);
    const vec3 target{0.0f, 0.0f, p.target_z};
    const vec3 e = target - s.pos;
    const bool out = detail::dot(e, e) > p.max_distance * p.max_distance || s.pos.z < p.min_height;
    return {detail::hover_reward(s, target), out};
  }

  GMI_HD static void observe(const state& s, float* obs, const params& p) {
    obs[0] = -s.pos.x;
    obs[1] = -s.pos.y;
    obs[2] = p.target_z - s.pos.z;
    obs[3] = s.rot.w;
    obs[4] = s.rot.x;
    obs[5] = s.rot.y;
    obs[6] = s.rot.z;
    obs[7] = s.vel.x;
    obs[8] = s.vel.y;
    obs[9] = s.vel.z;
    obs[10] = s.ang_vel.x;
    obs[11] = s.ang_vel.y;
    obs[12] = s.ang_vel.z;
  }
};

static_assert(gmi::env<ingenuity>);

}  // namespace gmi::envs

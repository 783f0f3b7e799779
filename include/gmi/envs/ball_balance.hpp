#pragma once
// BallBalance: a round table carried by three vertical force-controlled legs (at 0, 120 and 240 degrees) tilts
// to keep a rolling ball at its centre. 24-dim observation, 3 actions (leg forces). Two semi-implicit Euler
// substeps per action. Equations: docs/envs.md.

#include <cmath>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>

namespace gmi::envs {

struct ball_balance {
  using env_concept = gmi::env_tag;
  static constexpr const char* name = "ball_balance";
  static constexpr int obs_dim = 24, act_dim = 3;

  struct params {
    float leg_radius = 0.2f;    // m: legs attach to the table at this distance from its centre
    float table_radius = 0.25f; // the ball is lost beyond this horizontal distance from the centre
    float leg_min = 0.3f, leg_max = 0.7f;  // leg length limits (m)
    float leg_mass = 1.0f;      // kg per leg, table share included; gravity is compensated by the actuator
    float leg_damping = 2.0f;   // N s / m
    float max_force = 10.0f;    // N per leg at action 1
    float ball_mass = 0.2f;
    float gravity = 9.81f;
    float dt = 0.01f;  // per action
    int substeps = 2;
    int max_steps = 500;
  };

  struct state {
    float leg[3], leg_vel[3], leg_acc[3], force[3];
    float bx, by, bvx, bvy;  // ball on the table: horizontal position and velocity (world frame)
  };

  // Leg directions (cos, sin of 0, 120, 240 degrees); functions, not static arrays, so device code needs no
  // global memory for them.
  GMI_HD static float leg_cos(int i) { return i == 0 ? 1.0f : -0.5f; }
  GMI_HD static float leg_sin(int i) { return i == 0 ? 0.0f : (i == 1 ? 0.86602540378f : -0.86602540378f); }

  // The table plane through the three leg tops: z = sum_i w_i(x, y) * leg_i, with w_i = 1/3 + 2/(3R)(x cos_i + y sin_i).
  GMI_HD static float weight(int i, float x, float y, const params& p) {
    return 1.0f / 3.0f + 2.0f / (3.0f * p.leg_radius) * (x * leg_cos(i) + y * leg_sin(i));
  }
  GMI_HD static void gradient(const float* z, const params& p, float& gx, float& gy) {
    gx = 2.0f / (3.0f * p.leg_radius) * (z[0] * leg_cos(0) + z[1] * leg_cos(1) + z[2] * leg_cos(2));
    gy = 2.0f / (3.0f * p.leg_radius) * (z[0] * leg_sin(0) + z[1] * leg_sin(1) + z[2] * leg_sin(2));
  }

  GMI_HD static void reset(state& s, gmi::rng& r, const params& p) {
    const float mid = 0.5f * (p.leg_min + p.leg_max);
    for (int i = 0; i < 3; ++i) {
      s.leg[i] = mid + r.uniform(-0.02f, 0.02f);
      s.leg_vel[i] = 0.0f;
      s.leg_acc[i] = 0.0f;
      s.force[i] = 0.0f;
    }
    s.bx = r.uniform(-0.1f, 0.1f);
    s.by = r.uniform(-0.1f, 0.1f);
    s.bvx = r.uniform(-0.2f, 0.2f);
    s.bvy = r.uniform(-0.2f, 0.2f);
  }

  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    for (int i = 0; i < 3; ++i) s.force[i] = fminf(fmaxf(action[i], -1.0f), 1.0f) * p.max_force;
    const float h = p.dt / float(p.substeps);
    for (int sub = 0; sub < p.substeps; ++sub) {
      // Ball first, on the current plane: a solid sphere rolling without slipping accelerates at 5/7 of the
      // in-plane gravity; the table's vertical acceleration under the ball adds to gravity.
      float gx, gy;
      gradient(s.leg, p, gx, gy);
      float lift = 0.0f;
      for (int i = 0; i < 3; ++i) lift += weight(i, s.bx, s.by, p) * s.leg_acc[i];
      const float g_eff = fmaxf(p.gravity + lift, 0.0f);
      const float k = -(5.0f / 7.0f) * g_eff / (1.0f + gx * gx + gy * gy);
      s.bvx += h * k * gx;
      s.bvy += h * k * gy;
      s.bx += h * s.bvx;
      s.by += h * s.bvy;
      // Legs: force-controlled prismatic joints with viscous damping, stopped at their limits.
      for (int i = 0; i < 3; ++i) {
        const float acc = (s.force[i] - p.leg_damping * s.leg_vel[i]) / p.leg_mass;
        float v = s.leg_vel[i] + h * acc;
        float z = s.leg[i] + h * v;
        if (z < p.leg_min || z > p.leg_max) {
          z = fminf(fmaxf(z, p.leg_min), p.leg_max);
          v = 0.0f;
        }
        s.leg_acc[i] = (v - s.leg_vel[i]) / h;
        s.leg_vel[i] = v;
        s.leg[i] = z;
      }
    }
    const float d2 = s.bx * s.bx + s.by * s.by;
    const float speed = sqrtf(s.bvx * s.bvx + s.bvy * s.bvy);
    const float reward = 1.0f / (1.0f + d2) * (1.0f / (1.0f + speed));
    return {reward, d2 > p.table_radius * p.table_radius};
  }

  GMI_HD static void observe(const state& s, float* obs, const params& p) {
    float gx, gy, gxd, gyd;
    gradient(s.leg, p, gx, gy);
    gradient(s.leg_vel, p, gxd, gyd);
    float bz = 0.0f, bz_dot = gx * s.bvx + gy * s.bvy, lift = 0.0f, h_dot = 0.0f;
    for (int i = 0; i < 3; ++i) {
      const float w = weight(i, s.bx, s.by, p);
      bz += w * s.leg[i];
      bz_dot += w * s.leg_vel[i];
      lift += w * s.leg_acc[i];
      h_dot += s.leg_vel[i] / 3.0f;
    }
    const float g_eff = fmaxf(p.gravity + lift, 0.0f);
    const float inv_n = 1.0f / sqrtf(1.0f + gx * gx + gy * gy);
    for (int i = 0; i < 3; ++i) {
      obs[i] = s.leg[i];
      obs[3 + i] = s.leg_vel[i];
      obs[12 + i] = s.force[i] / p.max_force;
      obs[15 + i] = weight(i, s.bx, s.by, p) * p.ball_mass * g_eff;  // the ball's load carried by leg i (N)
    }
    obs[6] = s.bx;
    obs[7] = s.by;
    obs[8] = bz;
    obs[9] = s.bvx;
    obs[10] = s.bvy;
    obs[11] = bz_dot;
    obs[18] = -gx * inv_n;  // table normal
    obs[19] = -gy * inv_n;
    obs[20] = inv_n;
    obs[21] = gxd;  // tilt rates and the table's vertical speed
    obs[22] = gyd;
    obs[23] = h_dot;
  }
};

static_assert(gmi::env<ball_balance>);

}  // namespace gmi::envs

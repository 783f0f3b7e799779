#pragma once
// PointReach: a damped point mass in a walled 2-D arena pushed towards a goal drawn at every reset. The goal is
// part of the observation (not the error to it), so the policy must learn the difference itself. Dense negative
// reward: minus the distance to the goal. 6-dim observation, 2 actions (force). Equations: docs/envs.md.

#include <cmath>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>

namespace gmi::envs {

struct point_reach {
  using env_concept = gmi::env_tag;
  static constexpr const char* name = "point_reach";
  static constexpr int obs_dim = 6, act_dim = 2;

  struct params {
    float max_accel = 2.0f;  // m/s^2 per unit action; the action is clamped to [-1, 1]
    float damping = 0.5f;    // 1/s: viscous drag
    float arena = 2.0f;      // walls at +-arena; hitting one stops the motion across it
    float goal_range = 1.0f; // goal and start uniform in [-goal_range, goal_range)^2
    float dt = 0.05f;
    int max_steps = 200;
  };

  struct state {
    float x, y, vx, vy, gx, gy;
  };

  GMI_HD static void reset(state& s, gmi::rng& r, const params& p) {
    s.x = r.uniform(-p.goal_range, p.goal_range);
    s.y = r.uniform(-p.goal_range, p.goal_range);
    s.vx = 0.0f;
    s.vy = 0.0f;
    s.gx = r.uniform(-p.goal_range, p.goal_range);
    s.gy = r.uniform(-p.goal_range, p.goal_range);
  }

  // One axis: semi-implicit Euler, then the wall.
  GMI_HD static void advance(float& pos, float& vel, float a, const params& p) {
    vel = vel + p.dt * (p.max_accel * fminf(fmaxf(a, -1.0f), 1.0f) - p.damping * vel);
    pos = pos + p.dt * vel;
    if (fabsf(pos) > p.arena) {
      pos = fminf(fmaxf(pos, -p.arena), p.arena);
      vel = 0.0f;
    }
  }

  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    advance(s.x, s.vx, action[0], p);
    advance(s.y, s.vy, action[1], p);
    const float dx = s.x - s.gx, dy = s.y - s.gy;
    return {-sqrtf(dx * dx + dy * dy), false};
  }

  GMI_HD static void observe(const state& s, float* obs, const params&) {
    obs[0] = s.x;
    obs[1] = s.y;
    obs[2] = s.vx;
    obs[3] = s.vy;
    obs[4] = s.gx;
    obs[5] = s.gy;
  }
};

static_assert(gmi::env<point_reach>);

}  // namespace gmi::envs

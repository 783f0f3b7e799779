#pragma once
// SparseReach: a point moved by velocity commands must touch a goal drawn on a ring around its start. Sparse
// reward: 1 on the step that brings it within goal_radius (the episode ends there), 0 on every other step, so a
// return is 0 or 1 and discounting is what rewards speed. 4-dim observation, 2 actions. Equations: docs/envs.md.

#include <cmath>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>

namespace gmi::envs {

struct sparse_reach {
  using env_concept = gmi::env_tag;
  static constexpr const char* name = "sparse_reach";
  static constexpr int obs_dim = 4, act_dim = 2;

  struct params {
    float step_size = 0.05f;   // displacement per step per unit action; the action is clamped to [-1, 1]
    float goal_min = 0.3f;     // the goal's distance from the start, uniform in [goal_min, goal_max)
    float goal_max = 0.8f;
    float goal_radius = 0.2f;  // reached within this distance
    float arena = 1.5f;        // positions are clamped to +-arena
    int max_steps = 100;
  };

  struct state {
    float x, y, gx, gy;
  };

  GMI_HD static void reset(state& s, gmi::rng& r, const params& p) {
    const float angle = r.uniform(-3.14159265358979f, 3.14159265358979f);
    const float dist = r.uniform(p.goal_min, p.goal_max);
    s.x = 0.0f;
    s.y = 0.0f;
    s.gx = dist * cosf(angle);
    s.gy = dist * sinf(angle);
  }

  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    s.x = fminf(fmaxf(s.x + p.step_size * fminf(fmaxf(action[0], -1.0f), 1.0f), -p.arena), p.arena);
    s.y = fminf(fmaxf(s.y + p.step_size * fminf(fmaxf(action[1], -1.0f), 1.0f), -p.arena), p.arena);
    const float dx = s.x - s.gx, dy = s.y - s.gy;
    const bool reached = dx * dx + dy * dy < p.goal_radius * p.goal_radius;
    return {reached ? 1.0f : 0.0f, reached};
  }

  GMI_HD static void observe(const state& s, float* obs, const params&) {
    obs[0] = s.x;
    obs[1] = s.y;
    obs[2] = s.gx;
    obs[3] = s.gy;
  }
};

static_assert(gmi::env<sparse_reach>);

}  // namespace gmi::envs

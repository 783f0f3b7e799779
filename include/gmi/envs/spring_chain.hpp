#pragma once
// SpringChain: four masses in a row joined by springs (and to walls at both ends), each pushed by its own
// actuator, brought to rest at zero. A quadratic cost in large units (cost_scale per unit of x'x), so returns run
// from about -1e5 (no control) to about -1e4 (good control): a test of value scaling. 8-dim observation,
// 4 actions. Equations: docs/envs.md.

#include <cmath>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>

namespace gmi::envs {

struct spring_chain {
  using env_concept = gmi::env_tag;
  static constexpr const char* name = "spring_chain";
  static constexpr int obs_dim = 8, act_dim = 4;
  static constexpr int masses = 4;

  struct params {
    float stiffness = 4.0f;   // 1/s^2: spring constant over mass, every spring
    float damping = 0.05f;    // 1/s
    float max_accel = 5.0f;   // m/s^2 per unit action; the action is clamped to [-1, 1]
    float cost_scale = 1000.0f;
    float velocity_cost = 0.1f, action_cost = 0.01f;  // weights inside the cost, relative to x'x
    float reset_range = 1.0f;  // x uniform in [-reset_range, reset_range), v in half that range
    float dt = 0.05f;
    int max_steps = 250;
  };

  struct state {
    float x[masses], v[masses];
  };

  GMI_HD static void reset(state& s, gmi::rng& r, const params& p) {
    for (int i = 0; i < masses; ++i) s.x[i] = r.uniform(-p.reset_range, p.reset_range);
    for (int i = 0; i < masses; ++i) s.v[i] = r.uniform(-0.5f * p.reset_range, 0.5f * p.reset_range);
  }

  // Reward for the state before the step: -cost_scale (x'x + velocity_cost v'v + action_cost u'u).
  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    float u[masses], cost = 0.0f;
    for (int i = 0; i < masses; ++i) {
      u[i] = fminf(fmaxf(action[i], -1.0f), 1.0f);
      cost += s.x[i] * s.x[i] + p.velocity_cost * s.v[i] * s.v[i] + p.action_cost * u[i] * u[i];
    }
    float acc[masses];
    for (int i = 0; i < masses; ++i) {
      const float left = i == 0 ? 0.0f : s.x[i - 1];
      const float right = i == masses - 1 ? 0.0f : s.x[i + 1];
      acc[i] = p.stiffness * (left - 2.0f * s.x[i] + right) - p.damping * s.v[i] + p.max_accel * u[i];
    }
    for (int i = 0; i < masses; ++i) {  // semi-implicit Euler
      s.v[i] = s.v[i] + p.dt * acc[i];
      s.x[i] = s.x[i] + p.dt * s.v[i];
    }
    return {-p.cost_scale * cost, false};
  }

  GMI_HD static void observe(const state& s, float* obs, const params&) {
    for (int i = 0; i < masses; ++i) {
      obs[i] = s.x[i];
      obs[masses + i] = s.v[i];
    }
  }
};

static_assert(gmi::env<spring_chain>);

}  // namespace gmi::envs

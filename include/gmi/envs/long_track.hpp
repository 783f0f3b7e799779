#pragma once
// LongTrack: a cart on a rail follows a target that moves as a sum of two sines with phases drawn at reset, for
// 2000 steps (40 s): a long horizon, episodes that outlast many PPO iterations and end only by the time limit.
// Reward exp(-k e^2) in (0, 1] for the tracking error e. 5-dim observation, 1 action (force). docs/envs.md.

#include <cmath>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>

namespace gmi::envs {

struct long_track {
  using env_concept = gmi::env_tag;
  static constexpr const char* name = "long_track";
  static constexpr int obs_dim = 5, act_dim = 1;

  struct params {
    float max_accel = 4.0f;  // m/s^2 per unit action; the action is clamped to [-1, 1]
    float damping = 0.2f;    // 1/s
    float amp1 = 1.0f, omega1 = 0.5f;  // target = amp1 sin(omega1 t + phase1) + amp2 sin(omega2 t + phase2)
    float amp2 = 0.3f, omega2 = 1.7f;
    float sharpness = 4.0f;  // k of the reward exp(-k e^2), 1/m^2
    float dt = 0.02f;
    int max_steps = 2000;
  };

  struct state {
    float x, v, phase1, phase2;
    int t;  // steps since reset: the target's time
  };

  // The target's position, velocity and acceleration at step t.
  GMI_HD static void target(const state& s, const params& p, float& pos, float& vel, float& acc) {
    const float time = float(s.t) * p.dt;
    const float a1 = p.omega1 * time + s.phase1, a2 = p.omega2 * time + s.phase2;
    pos = p.amp1 * sinf(a1) + p.amp2 * sinf(a2);
    vel = p.amp1 * p.omega1 * cosf(a1) + p.amp2 * p.omega2 * cosf(a2);
    acc = -p.amp1 * p.omega1 * p.omega1 * sinf(a1) - p.amp2 * p.omega2 * p.omega2 * sinf(a2);
  }

  GMI_HD static void reset(state& s, gmi::rng& r, const params& p) {
    s.phase1 = r.uniform(-3.14159265358979f, 3.14159265358979f);
    s.phase2 = r.uniform(-3.14159265358979f, 3.14159265358979f);
    s.t = 0;
    float pos, vel, acc;
    target(s, p, pos, vel, acc);
    s.x = pos + r.uniform(-0.5f, 0.5f);
    s.v = 0.0f;
  }

  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    s.v = s.v + p.dt * (p.max_accel * fminf(fmaxf(action[0], -1.0f), 1.0f) - p.damping * s.v);
    s.x = s.x + p.dt * s.v;
    s.t += 1;
    float pos, vel, acc;
    target(s, p, pos, vel, acc);
    const float e = s.x - pos;
    return {expf(-p.sharpness * e * e), false};
  }

  GMI_HD static void observe(const state& s, float* obs, const params& p) {
    float pos, vel, acc;
    target(s, p, pos, vel, acc);
    obs[0] = s.x - pos;
    obs[1] = s.v - vel;
    obs[2] = pos;
    obs[3] = vel;
    obs[4] = acc;
  }
};

static_assert(gmi::env<long_track>);

}  // namespace gmi::envs

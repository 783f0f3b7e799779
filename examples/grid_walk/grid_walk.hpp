#pragma once
// A task with five discrete actions: walk on a size x size grid to a goal drawn at reset (examples/grid_walk; also
// the task of the test ppo.discrete.categorical_ppo_learns_a_five_action_walk). Actions: 0 stay, 1 +x, 2 -x, 3 +y,
// 4 -y (a move off the grid stays put). Reward -(|goal - position|_1) / 10 after the move, every step; no terminal
// state, 40 steps an episode. A greedy walker's mean return is about -3.1, a random policy's about -29.
#include <gmi/concepts/env.hpp>  // gmi::env_tag, gmi::transition, gmi::rng, GMI_HD

#include <cmath>
#include <cstdint>

struct grid_walk {
  using env_concept = gmi::env_tag;
  static constexpr int obs_dim = 4, act_dim = 1, num_actions = 5;  // act_dim 1: action[0] is the index as a float
  struct params { int size = 11; int max_steps = 40; };
  struct state { int x, y, gx, gy; };

  GMI_HD static int cell(gmi::rng& r, int size) {
    const int c = static_cast<int>(r.uniform() * static_cast<float>(size));
    return c < size ? c : size - 1;
  }
  GMI_HD static void reset(state& s, gmi::rng& r, const params& p) {
    s.x = cell(r, p.size);
    s.y = cell(r, p.size);
    s.gx = cell(r, p.size);
    s.gy = cell(r, p.size);
  }
  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    const int a = static_cast<int>(action[0]);
    const int dx = a == 1 ? 1 : (a == 2 ? -1 : 0), dy = a == 3 ? 1 : (a == 4 ? -1 : 0);
    if (s.x + dx >= 0 && s.x + dx < p.size) s.x += dx;
    if (s.y + dy >= 0 && s.y + dy < p.size) s.y += dy;
    const float distance = fabsf(static_cast<float>(s.gx - s.x)) + fabsf(static_cast<float>(s.gy - s.y));
    return {.reward = -distance / 10.0f, .terminated = false};
  }
  // Positions in [-1, 1] and the offset to the goal in the same units.
  GMI_HD static void observe(const state& s, float* obs, const params& p) {
    const float h = 0.5f * static_cast<float>(p.size - 1);
    obs[0] = (static_cast<float>(s.x) - h) / h;
    obs[1] = (static_cast<float>(s.y) - h) / h;
    obs[2] = static_cast<float>(s.gx - s.x) / h;
    obs[3] = static_cast<float>(s.gy - s.y) / h;
  }

  // A hand-written policy to compare with: step along x until aligned, then along y, then stay.
  GMI_HD static int greedy(const float* obs) {
    if (fabsf(obs[2]) > 1e-4f) return obs[2] > 0.0f ? 1 : 2;
    if (fabsf(obs[3]) > 1e-4f) return obs[3] > 0.0f ? 3 : 4;
    return 0;
  }
  // Mean return over `episodes` episodes of `policy(obs, rng) -> action index`, stepped through the task's own
  // functions as gmi's driver steps them (the time limit ends each episode).
  template <class Policy>
  static double mean_return(Policy policy, int episodes = 1000, const params& p = {}) {
    double total = 0;
    for (int e = 0; e < episodes; ++e) {
      gmi::rng r(7, static_cast<std::uint64_t>(e));
      state s;
      reset(s, r, p);
      for (int t = 0; t < p.max_steps; ++t) {
        float obs[obs_dim];
        observe(s, obs, p);
        const float a = static_cast<float>(policy(obs, r));
        total += step(s, &a, r, p).reward;
      }
    }
    return total / episodes;
  }
};
static_assert(gmi::check_env<grid_walk>());

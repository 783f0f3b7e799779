#pragma once
// A test task with N discrete actions: each step shows a target index (scaled to [-1, 1]) and pays 1 when the action
// names it, 0 otherwise; a new target is drawn after every step; 8 steps an episode. Small enough that a GPU run and
// a host run of categorical PPO can be compared weight by weight for N = 2..5 (tests/ppo_gpu/discrete_gpu_test.cpp).
#include <gmi/concepts/env.hpp>

template <int N>
struct pick_env {
  using env_concept = gmi::env_tag;
  static constexpr int obs_dim = 2, act_dim = 1, num_actions = N;
  struct params { int max_steps = 8; };
  struct state { int target; };

  GMI_HD static int draw(gmi::rng& r) {
    const int c = static_cast<int>(r.uniform() * static_cast<float>(N));
    return c < N ? c : N - 1;
  }
  GMI_HD static void reset(state& s, gmi::rng& r, const params&) { s.target = draw(r); }
  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng& r, const params&) {
    const float reward = static_cast<int>(action[0]) == s.target ? 1.0f : 0.0f;
    s.target = draw(r);
    return {.reward = reward, .terminated = false};
  }
  GMI_HD static void observe(const state& s, float* obs, const params&) {
    obs[0] = 2.0f * static_cast<float>(s.target) / static_cast<float>(N - 1) - 1.0f;
    obs[1] = 1.0f;
  }
};
static_assert(gmi::check_env<pick_env<3>>());

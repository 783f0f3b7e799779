#pragma once
// Generalized advantage estimation for one environment's rollout column, the same function on host and device.
// Rollouts are [horizon][num_envs] row-major; an episode boundary (terminated or truncated) cuts the trace.
// Truncated episodes get their bootstrap through the reward (reward += gamma * V(final state)) at collection.

#include <cstdint>

#include <gmi/core/hd.hpp>

namespace gmi::rl {

// values has horizon + 1 rows: row horizon is V(observation after the last step).
GMI_HD inline void gae_column(int env, int num_envs, int horizon, float gamma, float lambda, const float* rewards,
                              const std::uint8_t* episode_ends, const float* values, float* advantages,
                              float* returns) {
  float running = 0.0f;
  for (int t = horizon - 1; t >= 0; --t) {
    const int at = t * num_envs + env;
    const float next_weight = episode_ends[at] ? 0.0f : 1.0f;
    const float delta = rewards[at] + gamma * values[at + num_envs] * next_weight - values[at];
    running = delta + gamma * lambda * next_weight * running;
    advantages[at] = running;
    returns[at] = running + values[at];
  }
}

}  // namespace gmi::rl

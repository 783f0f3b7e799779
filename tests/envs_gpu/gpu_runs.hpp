#pragma once
// Plain host functions over the CUDA env driver (defined in gpu_runs.cu), so the doctest file stays host-compiled.
#include <cstdint>
#include <string_view>
#include <vector>

#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/rl/env_batch.hpp>

struct trajectory {
  std::vector<float> obs, rewards;  // every step's rows, appended
  std::vector<std::uint8_t> terminated, truncated;
  gmi::rl::episode_stats stats;
};

// The action of environment i at step t: the same bits on host and device.
GMI_HD inline float test_action(std::uint64_t action_seed, int t, std::size_t i, int act_dim, int k) {
  gmi::rng r(action_seed, std::uint64_t(t) * 1000003u + i);
  float a = 0;
  for (int j = 0; j <= k; ++j) a = r.uniform(-1.0f, 1.0f);
  (void)act_dim;
  return a;
}

// max_steps > 0 replaces the task's params.max_steps (its episode length); 0 keeps the task's own. start: where
// the first reset puts the episode-step counters.
trajectory run_gpu(std::string_view task, int num_envs, int steps, std::uint64_t seed, std::uint64_t action_seed,
                   int max_steps = 0, gmi::rl::episode_start start = gmi::rl::episode_start::first_step);
// Cartpole stepped from a user kernel through env_batch_view::step_one, with a linear policy computed in the
// same kernel (the shape of a fused rollout kernel); returns the observations after `steps` steps.
std::vector<float> run_gpu_fused_cartpole(int num_envs, int steps, std::uint64_t seed);

#pragma once
// Host-callable runs of PPO with reward scaling (ppo_config::reward_scaling) on the GPU and on host threads, for
// the doctest file (compiled by g++).
#include <string>
#include <vector>

struct reward_scaling_run {
  std::vector<float> rewards;   // the last rollout's rewards (scaled, bootstraps included)
  std::vector<float> running;   // every environment's R after the run
  std::vector<double> stats;    // the std's statistics [count | mean | M2]
  std::vector<float> params;
  std::string collection;       // "host", "threads" or "batched"
};

// `iterations` PPO iterations on point_reach (256 envs, minibatch 1024, 2 epochs, seed 13) with reward scaling;
// collection "" runs the host trainer, "threads" or "batched" the GPU trainer collecting that way.
reward_scaling_run reward_scaling_iterations(const std::string& collection, int iterations);

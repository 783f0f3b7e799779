#pragma once
// Host-callable runs of PPO with advantages normalized over a window of rollouts (ppo_config::advantage_window) on
// the GPU and on host threads, for the doctest file (compiled by g++).
#include <vector>

struct advantage_window_run {
  std::vector<float> stats;   // the last update's advantage mean and 1 / (std + 1e-8)
  std::vector<float> params;
};

// `iterations` PPO iterations on spring_chain (256 envs, minibatch 1024, 2 epochs, seed 17) with advantage_window
// `window`, on the GPU (gpu true) or host threads.
advantage_window_run advantage_window_iterations(bool gpu, int window, int iterations);

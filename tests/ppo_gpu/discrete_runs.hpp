#pragma once
// Host-callable runs of categorical PPO on cartpole_discrete for the doctest file (compiled by g++).
#include <string>
#include <vector>

struct discrete_run {
  std::vector<float> params;         // after the iterations
  std::vector<float> first_actions;  // the first rollout's actions (indices as floats)
  std::vector<float> first_log_probs;
  double policy_loss = 0, value_loss = 0, entropy = 0;
  std::string path;  // the gradient path taken ("host" for the host trainer)
};

// `iterations` PPO iterations from seed 11 (256 envs, minibatch 1024, 2 epochs) with the minibatch gradient formed
// the way rl::request_gradient_path(path) asks (warps, tiles, threads); "" runs the host trainer.
discrete_run discrete_iterations(const std::string& path, int iterations);

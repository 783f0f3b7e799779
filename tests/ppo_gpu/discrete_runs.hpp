#pragma once
// Host-callable runs of categorical PPO for the doctest file (compiled by g++): cartpole_discrete (two actions) or
// the grid_walk example's task (five actions).
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
// the way rl::request_gradient_path(path) asks (warps, tiles, threads); "" runs the host trainer. `actions`: 2 for
// cartpole_discrete, 5 for grid_walk.
discrete_run discrete_iterations(const std::string& path, int iterations, int actions = 2);

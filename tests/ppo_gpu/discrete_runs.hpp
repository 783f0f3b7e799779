#pragma once
// Host-callable runs of categorical PPO for the doctest file (compiled by g++): cartpole_discrete (two actions) or
// the grid_walk example's task (five actions).
#include <string>
#include <vector>

struct discrete_run {
  std::vector<float> params;         // after the iterations
  std::vector<float> first_actions;  // the first rollout's actions (indices as floats)
  std::vector<float> first_log_probs;
  // The first rollout's other arrays (as the update read them): observations, values, rewards, ends (0/1 as
  // floats), advantages and returns.
  std::vector<float> first_obs, first_values, first_rewards, first_ends, first_advantages, first_returns;
  double policy_loss = 0, value_loss = 0, entropy = 0;
  std::vector<float> grads;          // the last minibatch's gradient row (param_count values)
  // The first minibatch's gradient recomputed serially on the host from copies of the trainer's own arrays and
  // statistics (meaningful with one_minibatch), and those statistics: advantage mean and 1/std, the observation
  // normalizer's means and stds, the value normalizer's mean and std.
  std::vector<float> recomputed_grads, stats;
  std::string path;  // the gradient path taken ("host" for the host trainer)
};

// `iterations` PPO iterations from seed 11 (256 envs, minibatch 1024, 2 epochs) with the minibatch gradient formed
// the way rl::request_gradient_path(path) asks (warps, tiles, threads); "" runs the host trainer. `task`:
// "cartpole_discrete" (2 actions), "grid_walk" (5), "pick2" .. "pick5" (tests/ppo_gpu/pick_env.hpp).
// one_minibatch: one epoch of one minibatch (the whole rollout), so `grads` is the gradient at the initial weights.
discrete_run discrete_iterations(const std::string& path, int iterations, const std::string& task,
                                 bool one_minibatch = false);

#pragma once
// gmi::train and gmi::serve on host threads, called from the doctest file (compiled by the host compiler) through
// train_runs.cu (nvcc): each returns what the test looks at, no stdout parsed.

#include <array>
#include <string>
#include <vector>

namespace gmi_test {

struct train_outcome {
  std::string reason;  // train_result::reason_text()
  int exit_code = 0;
  double env_steps = 0, mean_return = 0, eval_return = 0, train_rate = 0, env_rate = 0, serve_rate = 0;
  std::vector<std::array<double, 2>> curve;
  std::vector<std::string> weight_names;
  std::string error;  // a config_error's message (the run did not start)
};

// A constant-reward task (reward = params.reward every step, episodes of params.max_steps steps) trained for
// max_env_steps on host threads, optionally to a target return.
train_outcome train_constant_reward(float reward, int max_steps, double max_env_steps, double target_return);
// Cartpole trained on host threads (64 envs) until solved or max_env_steps.
train_outcome train_cartpole(double max_env_steps, unsigned long long seed);
// A config that can not run: population on host threads, or --target-optimum-gap for a task without an optimum.
train_outcome train_refused(const std::string& which);
// The serving layout measured on host threads.
train_outcome serve_cartpole();

}  // namespace gmi_test

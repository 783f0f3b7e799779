#pragma once
// gmi::train over actors::on_cpu<cartpole, 2> on host threads, called from the doctest file through
// on_cpu_runs.cu (nvcc): what the test looks at, no stdout parsed.
#include <string>
#include <vector>

struct on_cpu_outcome {
  std::string reason, error;
  double env_steps = 0, train_rate = 0, serve_rate = 0;
  long iterations = 0;
  std::vector<float> weights;    // the run's policy tensors, in order
  std::vector<float> reference;  // ppo_on_actors with the same seed and iterations
  bool engine_is_actors = false;  // the pipeline's host engine is actors::on_cpu_engine
};
on_cpu_outcome train_cartpole_on_cpu(double max_env_steps);
// The engine refuses to join a synced group (one GMI only): the config_error's message.
std::string on_cpu_sync_refusal();
// gmi::train with CPU actors and a run option that asks for more than one GMI ("population", "gmis", "gpus"):
// the config_error's message, or "" when nothing was refused.
std::string on_cpu_several_gmis_refusal(const std::string& which);

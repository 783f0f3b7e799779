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
// gmi::train with CPU actors and a run option that still can not work with them ("population", "restart",
// "cores_without_actors", "threshold", "host_gmis_checkpoint", "too_many_cores"): the config_error's message, or
// "" when nothing was refused.
std::string on_cpu_refusal(const std::string& which);

// `gmis` host GMIs of CPU actors (on_cpu<cartpole, 0>, 1 actor core each) trained as one synchronous group.
struct on_cpu_gmis_outcome {
  std::string error, reason;
  int exit_code = -1, gmis = 0;
  long iterations = 0;
  double env_steps = 0, mean_return = 0;
  std::vector<std::vector<int>> cores;      // each GMI's actor cores
  std::vector<std::vector<float>> weights;  // each GMI's parameters at the end
};
// Through gmi::train (gmis host GMIs, the group's result) and, with `direct`, through the host GMIs' run itself
// (every GMI's cores and weights).
on_cpu_gmis_outcome train_cartpole_on_cpu_gmis(int gmis, double max_env_steps, double target_return, bool direct);

// parse_cli over these arguments into an on_cpu pipeline's config: the exit code it asks for (-1: none) and the
// placement threshold and actor cores it read.
struct cli_outcome {
  int exit_code = -1;
  double placement_threshold = 0;
  int actor_cores_per_gmi = 0;
};
cli_outcome parse_on_cpu_cli(const std::vector<std::string>& args);
// apply_actor_ratio on a fresh config: {actor cores per GMI, GMIs per GPU, envs per GMI}; error text when refused.
std::vector<int> applied_ratio(int cores_per_gmi, int envs_per_core, int gmis_per_gpu, std::string* error);

#pragma once
// gmi::train over actors::on_cpu<cartpole, 2> on host threads, called from the doctest file through
// on_cpu_runs.cu (nvcc): what the test looks at, no stdout parsed.
#include <cstdint>
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
// gmi::train with CPU actors and a run option that still can not work with them ("split_roles",
// "cores_without_actors", "cpu_cores_without_actors", "threshold", "too_many_cores"): the config_error's message, or
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

// 2 host GMIs of CPU actors (one actor core each) through gmi::train for `iterations` iterations (the group's env
// steps counted from iteration 0), with --log-interval 0, --metrics `metrics`, and --checkpoint / --resume where
// given: what the end and metrics lines say.
struct host_gmis_run {
  std::string error, reason;
  int exit_code = -1;
  long iterations = 0, resumed_at = -1;
  long first_metrics_iteration = -1, metrics_lines = 0;  // the per-iteration lines
  std::string end_hash;  // weights_hash of the end line
  bool end_identical = false;
};
host_gmis_run run_host_gmis(long iterations, const std::string& checkpoint, const std::string& resume,
                            const std::string& metrics);

// `gmis` host GMIs of CPU actors, 1 actor core each, 128 / gmis envs a GMI (2048 env steps an iteration of the group
// for 1 or 2 GMIs), through gmi::train with --max-env-steps `max_env_steps`, --metrics `metrics` and --checkpoint /
// --resume where given: the result and the metrics end line's iteration, resumed_at and wall_s.
struct resumable_run {
  std::string error, reason;
  int exit_code = -1;
  long iterations = 0, end_iteration = -1, resumed_at = -1;
  double env_steps = 0, end_env_steps = -1, end_wall_s = -1;
};
resumable_run run_resumable(int gmis, double max_env_steps, const std::string& checkpoint, const std::string& resume,
                            const std::string& metrics);

// A plan whose CPU/GPU ratio (chosen from a sweep of three points) is 1 actor core per GMI, 16 envs per core and 2
// GMIs per GPU, saved at `path` and trained with on host threads (gmi::run --device host --plan PATH): the end
// line's shape.
struct ratio_plan_run {
  std::string error;
  int gmis = 0, num_envs = 0, actor_cores_per_gmi = 0, exit_code = -1;
  std::vector<std::vector<int>> actor_cores;
  int chosen_cores = 0, chosen_envs_per_core = 0, chosen_gmis = 0;  // the plan's choice, as loaded back
};
// with_ratio false: the plan has no cpu_actor_ratio (refused on host threads).
ratio_plan_run train_on_ratio_plan(const std::string& path, const std::string& metrics, bool with_ratio);

// --population with 2 host GMIs of CPU actors (1 actor core each) through gmi::train: the population line's members,
// and each member's own metrics file (<metrics>.gmi<rank>.jsonl): its progress lines and end line.
struct population_member_run {
  std::uint64_t seed = 0;
  std::string reason;
  long iterations = 0;
  std::vector<int> actor_cores;
  int progress_lines = 0, end_lines = 0;  // in the member's own file
  std::uint64_t file_seed = 0;            // the seed its lines carry
  long file_rank = -1, file_iterations = 0;
  std::size_t curve_points = 0, wall_points = 0;  // the end line's curves
};
struct population_run {
  std::string error;
  int exit_code = -1, gmis = 0;
  std::vector<population_member_run> members;
};
population_run train_population_on_cpu(const std::string& metrics);

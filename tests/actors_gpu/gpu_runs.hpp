#pragma once
// Host-callable runs of PPO on CPU actors with the GPU trainer (gpu_runs.cu), for the doctest file (g++).
#include <cstdint>
#include <string>
#include <vector>

struct gpu_actor_iterations {
  std::vector<float> gpu_params, host_params;  // after the iterations: GPU trainer on actors, host trainer on actors
  std::vector<float> gpu_returns, host_returns;  // the last rollout's returns
  double gpu_value_loss = 0, host_value_loss = 0;
  std::uint64_t gpu_episodes = 0, host_episodes = 0;
};
// `iterations` of Cartpole (256 envs, seed 5, minibatch 1024, 2 epochs) on `cores` actor cores, both ways.
gpu_actor_iterations cartpole_on_actors_both_ways(int cores, int iterations);

struct gpu_actor_learning {
  double best_return = 0, seconds = 0;
  int iterations = 0;
  std::uint64_t env_steps = 0;
};
// Cartpole (512 envs, minibatch 8192, 8 epochs) on `cores` actor cores until the mean return over the last
// iterations reaches `target` or `max_iterations` pass.
gpu_actor_learning cartpole_learns_on_actors(int cores, int max_iterations, double target);

struct gpu_actor_gate {
  bool pinned = false;               // the staging arrays are page-locked (so copies from them do not wait)
  bool both_groups_submitted = false;  // step 0 of both groups was handed to the GPU while the stream was held
  bool actions_before_open = false;  // an actor saw actions while the stream was held (must not happen)
  bool stream_busy_while_held = false;
  bool finished = false;  // after release, the iteration ran to its end
  std::uint64_t iterations = 0;
  std::string error;
};
// A second iteration started while the trainer's stream is held shut by a host callback: the driver must hand
// both groups' first step to the stream without waiting on it.
gpu_actor_gate submit_without_waiting(int cores);

struct gpu_actor_mujoco {
  bool available = false;  // built with MuJoCo
  double value_loss = 0;
  std::uint64_t episodes = 0, iterations = 0;
  std::string error;
};
// A few iterations of the MuJoCo Ant task (tests/physics/models/ant_floor.xml) through the same GPU trainer.
gpu_actor_mujoco mujoco_ant_v4_on_actors(int cores, int iterations);

struct gpu_actor_mujoco_resume {
  bool available = false;  // built with MuJoCo
  bool weights_equal = false, env_states_equal = false, trainer_only_differs = false;
  std::uint64_t episodes = 0;  // finished in the straight run (resets drew from the env streams)
  std::string error;
};
// MuJoCo Ant with the GPU trainer: `iterations` straight against iterations/2, a save to a .gmi file, a fresh
// engine resumed from it and iterations/2 more (weights and the actors' MuJoCo state compared bit for bit), and a
// resume of the trainer alone (must part ways).
gpu_actor_mujoco_resume mujoco_ant_v4_resume_on_gpu(int cores, int iterations);

struct gpu_actor_placement {
  double cpu_seconds_per_step = 0, gpu_seconds_per_batch_step = 0;
  int cpu_cores = 0;
  std::string chosen, chosen_with_high_threshold, chosen_with_low_threshold;
  std::string error;
};
// --autotune's profile of Cartpole at `batch` on GPU 0 and the choice with the default threshold, and with
// thresholds that force each side (1e9: cpu, 1e-9: gpu).
gpu_actor_placement cartpole_placement(int batch);

struct gpu_actor_gmis {
  int exit_code = -1, gmis = 0;
  long iterations = 0;
  std::string reason, error;
};
// gmi::train over actors::on_cpu<cartpole> with `gmis` GMIs on GPU 0 (threads, comm::hierarchical<comm::nccl>),
// `cores` actor cores each, for `iterations` iterations: exit code 1 when the GMIs end with different weights.
gpu_actor_gmis cartpole_gmis_on_actors(int gmis, int cores, int iterations);

#pragma once
// Host-callable runs of the CUDA PPO trainer for the doctest file (compiled by g++).
#include <vector>

struct ppo_run_result {
  std::vector<float> params;          // after the iterations
  std::vector<float> first_values;    // values of the first collection (horizon + 1 rows)
  std::vector<float> first_rewards;
  double policy_loss, value_loss, approx_kl;
  double best_return;                 // best windowed mean return seen
  int iterations;
};

// iterations of PPO on Cartpole; on_gpu false runs the same on host threads.
ppo_run_result run_cartpole_ppo(bool on_gpu, int num_envs, unsigned long long seed, int iterations, int minibatch,
                                int epochs, bool stop_when_solved);

// 6 iterations straight vs 3, save_state, load_state into a fresh trainer, 3 more: the same weights?
bool gpu_resume_matches_straight_run();

// lr_schedule::linear on the GPU (the first iteration eager, the rest replayed graphs): the lr each of `iterations`
// iterations used, and the lr of a trainer resumed from a checkpoint after half of them and run to the end.
struct linear_lr_run {
  std::vector<float> lrs, resumed_lrs, want;
};
linear_lr_run gpu_linear_lr_run(int iterations);

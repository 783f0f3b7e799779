#pragma once
// Host-callable runs of the APPO actor and learner for the doctest file (compiled by g++).
#include <vector>

struct appo_run_result {
  std::vector<float> first_rewards;  // the first rollout of actor 0, T x N rewards
  std::vector<float> params;         // after the updates
  double best_return = 0;            // best windowed mean return of the actors
  double max_abs_log_ratio = 0;      // the largest per-update mean |log pi - log mu|
  int updates = 0;
  unsigned long long replayed_updates = 0;  // updates that ran as one CUDA graph launch
};

// Two actors of 256 Cartpoles act with weights `lag` updates old; each update takes one rollout of each.
// on_gpu false runs the same on host threads; replay_updates false enqueues every GPU update kernel by kernel.
appo_run_result run_cartpole_appo(bool on_gpu, int lag, int updates, bool stop_when_solved, bool replay_updates = true);

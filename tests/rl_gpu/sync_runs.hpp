#pragma once
// Host-callable runs of synced CUDA PPO trainers for the doctest file (compiled by g++): W trainers on one GPU,
// each on its own thread and stream, joined through device buffers (copied to the host, summed in rank order).
#include <cstdint>
#include <vector>

// What must agree across replicas after an iteration, and the head of the rollout (which must not).
struct gpu_snapshot {
  std::vector<float> params;
  std::vector<double> obs_stats, value_stats;
  double lr = 0, approx_kl = 0;
  std::vector<float> obs_head;
};

enum class gpu_sync_mode {
  full,             // gradients and statistics summed over the group
  no_gradient_sum,  // control: joined (rank 0's weights), then the gradient sums do nothing
  none,             // not joined at all
  replayed_alone,   // world 1 only: a sum that enqueues nothing and is replayable, so the update is one graph
};

struct gpu_group_options {
  int world = 4;
  int envs = 256;
  int iterations = 4;
  bool same_seed = false;          // every rank seeded alike (identical rollouts)
  bool normalize_advantage = true;
  gpu_sync_mode mode = gpu_sync_mode::full;
  std::vector<std::size_t>* replays = nullptr;  // replayed_alone: each ppo_sync::replayed call's count
};

// [rank][iteration]
std::vector<std::vector<gpu_snapshot>> run_gpu_group(const gpu_group_options& o);

// The learning check of gmi::run's failing case (8 GMIs x 512 envs, the group's minibatch 8192 = 1024 per
// replica, default PPO otherwise) without gmi::run: `world` synced CUDA trainers in threads. Returns the best mean
// return over the group's finished episodes (every 5 iterations, at least 32 episodes) within `iterations`.
// On the host, exec::host trainers in the same setting reach 480+ after 45 iterations.
double run_gpu_group_learning(int world, int envs, int group_minibatch, int iterations);

// One trainer without a sync (a captured graph from the second iteration on), as a snapshot per iteration.
std::vector<gpu_snapshot> run_gpu_plain(int envs, std::uint64_t seed, int iterations, bool normalize_advantage);

#pragma once
// SAC hyperparameters (Haarnoja et al. 2018, "SAC: algorithms and applications": twin critics, Polyak targets,
// learned temperature), validated in one place with "got X, need Y" messages. The defaults are the paper's, for
// a learner with a few environments (the host trainer); sac_gpu_scale holds those of a GPU learner with
// thousands of environments (gmi::run applies them on a GPU to every setting no flag gave).

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>

#include <gmi/core/error.hpp>

namespace gmi::rl {

struct sac_config {
  int batch = 256;                       // transitions per gradient step
  float gamma = 0.99f;
  float tau = 0.005f;                    // Polyak factor: target <- (1 - tau) target + tau online
  float actor_lr = 3e-4f;
  float critic_lr = 3e-4f;
  float alpha_lr = 3e-4f;
  float initial_alpha = 1.0f;            // the temperature before tuning
  bool tune_alpha = true;                // automatic entropy tuning towards target_entropy
  std::optional<float> target_entropy;   // nullopt: -act_dim (the paper's heuristic)
  float log_std_min = -5.0f;             // the actor's log-std is squashed into [min, max] by a tanh
  float log_std_max = 2.0f;
  std::size_t replay_capacity = 1000000; // transitions kept (oldest evicted first)
  std::size_t warmup_steps = 1000;       // env transitions with uniform random actions before the first update
  float updates_per_step = 1.0f;         // gradient steps per collected env transition (UTD ratio)
  // When set, replaces updates_per_step: gradient steps per vector step (one step of each of the learner's
  // num_envs environments), i.e. updates_per_vector_step / num_envs per transition.
  std::optional<float> updates_per_vector_step;
  std::optional<float> max_grad_norm;    // nullopt: no clipping (the paper's setting)
  // Steps of reward summed into each stored transition before the critics bootstrap (n-step returns, sac_nstep.hpp:
  // folded as the transitions are collected, cut where an episode ends); 1 is the paper's one-step target.
  int n_step = 1;
  // The GPU trainer (sac_device_trainer) replays each update as one captured CUDA graph: the same bits as
  // launching its kernels one by one (tests/sac_gpu's graph_update_matches_launches), fewer launches. Not with
  // data-parallel sums (those updates launch as before); the host trainer ignores it.
  bool cuda_graph = true;
  // The GPU trainer's replay as replay_shards device tables, one per group of its environments, sampled as one
  // table (replay::device_shard_set::sample_global; sac_shards.cuh). Above 1 the update launches (no CUDA graph).
  int replay_shards = 1;
  // A placement step (replay/placement.hpp's rule on the draws since the last step) every this many vector steps;
  // 0: none. Needs replay_shards >= 2.
  std::size_t placement_every = 0;
  // The shards' columns device memory may hold, MiB: whole shards, hottest first; the rest in pinned host memory.
  // With a budget every shard starts in pinned host memory (cold: nothing drawn yet) until the first placement
  // step. nullopt: no budget. Needs placement_every > 0.
  std::optional<double> replay_device_mib;

  // Gradient steps owed for n collected transitions by a learner stepping num_envs environments at a time (a whole
  // vector step, n == num_envs, owes exactly updates_per_vector_step).
  [[nodiscard]] double updates_for(std::size_t n, std::size_t num_envs) const {
    return updates_per_vector_step ? double(*updates_per_vector_step) * double(n) / double(num_envs)
                                   : double(updates_per_step) * double(n);
  }
  // The replay ratio: transitions sampled into batches per transition collected.
  [[nodiscard]] double replay_ratio(std::size_t num_envs) const {
    return double(batch) * updates_for(num_envs, num_envs) / double(num_envs);
  }

  // The target entropy used for act_dim actions.
  [[nodiscard]] float entropy_target(int act_dim) const { return target_entropy ? *target_entropy : -float(act_dim); }

  // Throws config_error with one line naming the first bad field.
  void validate() const {
    gmi::require(batch >= 1 && batch <= (1 << 20), "sac.batch", batch, "1..1048576");
    gmi::require(std::isfinite(gamma) && gamma > 0.0f && gamma <= 1.0f, "sac.gamma", gamma, "in (0, 1]");
    gmi::require(std::isfinite(tau) && tau > 0.0f && tau <= 1.0f, "sac.tau", tau, "in (0, 1]");
    gmi::require(std::isfinite(actor_lr) && actor_lr > 0.0f, "sac.actor_lr", actor_lr, "> 0");
    gmi::require(std::isfinite(critic_lr) && critic_lr > 0.0f, "sac.critic_lr", critic_lr, "> 0");
    gmi::require(std::isfinite(alpha_lr) && alpha_lr > 0.0f, "sac.alpha_lr", alpha_lr, "> 0");
    gmi::require(std::isfinite(initial_alpha) && initial_alpha > 0.0f, "sac.initial_alpha", initial_alpha, "> 0");
    if (target_entropy)
      gmi::require(std::isfinite(*target_entropy), "sac.target_entropy", *target_entropy, "a finite value");
    gmi::require(std::isfinite(log_std_min) && log_std_min >= -20.0f, "sac.log_std_min", log_std_min, ">= -20");
    gmi::require(std::isfinite(log_std_max) && log_std_max > log_std_min && log_std_max <= 5.0f, "sac.log_std_max",
                 log_std_max, "in (log_std_min, 5]");
    gmi::require(replay_capacity >= std::size_t(batch) && replay_capacity <= (std::size_t{1} << 30),
                 "sac.replay_capacity", replay_capacity, "batch (" + std::to_string(batch) + ") .. 2^30");
    gmi::require(warmup_steps >= std::size_t(batch) && warmup_steps <= replay_capacity, "sac.warmup_steps",
                 warmup_steps, "batch (" + std::to_string(batch) + ") .. replay_capacity");
    gmi::require(std::isfinite(updates_per_step) && updates_per_step > 0.0f && updates_per_step <= 64.0f,
                 "sac.updates_per_step", updates_per_step, "in (0, 64]");
    if (updates_per_vector_step)
      gmi::require(std::isfinite(*updates_per_vector_step) && *updates_per_vector_step > 0.0f &&
                       *updates_per_vector_step <= 4096.0f,
                   "sac.updates_per_vector_step", *updates_per_vector_step, "in (0, 4096] (or nullopt: updates_per_step)");
    gmi::require(n_step >= 1 && n_step <= 32, "sac.n_step", n_step, "1..32");
    gmi::require(replay_shards >= 1 && replay_shards <= 64, "sac.replay_shards", replay_shards, "1..64");
    gmi::require(placement_every <= 1000000 && (placement_every == 0 || replay_shards >= 2), "sac.placement_every",
                 placement_every, replay_shards >= 2 ? "0..1000000 vector steps"
                                                    : "0 with sac.replay_shards 1 (one shard: nothing to place)");
    if (replay_device_mib)
      gmi::require(std::isfinite(*replay_device_mib) && *replay_device_mib >= 0.0 && *replay_device_mib <= 1e7 &&
                       placement_every > 0,
                   "sac.replay_device_mib", *replay_device_mib,
                   placement_every > 0 ? "0..1e7 MiB" : "none without sac.placement_every > 0 (placement applies it)");
    if (max_grad_norm)
      gmi::require(std::isfinite(*max_grad_norm) && *max_grad_norm > 0.0f, "sac.max_grad_norm", *max_grad_norm,
                   "> 0 (or nullopt for no clipping)");
  }
};

// The settings of a GPU learner (sac_device_trainer) that differ from sac_config's, after the practice of
// off-policy learners over many simulated environments (parallel Q-learning, FastTD3): a batch of 4096, a fixed
// number of gradient steps per vector step, n-step returns (3), 4 M transitions kept and a warm-up of 16 vector steps
// of uniform actions; the update replays a CUDA graph as everywhere. 1024 environments with 32 gradient steps per
// vector step give a replay ratio of 4096 x 32 / 1024 = 128 samples per collected transition (1 gradient step per 32
// env steps): fewer environments than PPO's 4096, because an off-policy learner's progress per env step grows with
// its gradient steps per env step, while a vector step of a physics task costs little next to 32 updates at any of
// these counts (its environments step on the tile path, rl::env_batch). What these settings reach on the ant_v4 is
// measured by bench/sac/device_sacfast.sh.
struct sac_gpu_scale {
  static constexpr int num_envs = 1024;
  static constexpr int batch = 4096;
  static constexpr float updates_per_vector_step = 32.0f;
  static constexpr int n_step = 3;  // not with split roles (their actors send one-step transitions)
  static constexpr std::size_t warmup_steps = 16384;
  static constexpr std::size_t replay_capacity = std::size_t{1} << 22;
};

}  // namespace gmi::rl

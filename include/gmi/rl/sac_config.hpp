#pragma once
// SAC hyperparameters (Haarnoja et al. 2018, "SAC: algorithms and applications": twin critics, Polyak targets,
// learned temperature), validated in one place with "got X, need Y" messages.

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
  std::optional<float> max_grad_norm;    // nullopt: no clipping (the paper's setting)
  // The GPU trainer (sac_device_trainer) replays each update as one captured CUDA graph: the same bits as
  // launching its kernels one by one. Not with data-parallel sums (those updates launch as before); the host
  // trainer ignores it.
  bool cuda_graph = false;

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
    if (max_grad_norm)
      gmi::require(std::isfinite(*max_grad_norm) && *max_grad_norm > 0.0f, "sac.max_grad_norm", *max_grad_norm,
                   "> 0 (or nullopt for no clipping)");
  }
};

}  // namespace gmi::rl

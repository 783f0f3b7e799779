#pragma once
// Reward scaling (ppo_config::reward_scaling): each environment keeps the discounted return of its raw rewards,
// R <- gamma R + r, set back to 0 after an episode's end (terminated or truncated); the rewards PPO trains on are
// r / std(R), clamped to [-reward_clip, reward_clip], no mean subtracted (the sign and the zero of rewards stay).
// SB3's VecNormalize(norm_reward=True) (clip_reward 10, epsilon 1e-8), CleanRL's NormalizeReward wrapper followed
// by a clip to [-10, 10], and "Implementation Matters in Deep RL" (Engstrom et al. 2020), section "reward
// scaling". The statistics of R are frozen during an iteration (those of the rollouts before it) and take in the
// rollout's R after the update, as the observation statistics do: the libraries update them at every step before
// scaling, a lag of one rollout here. A fresh trainer's first rollout meets std 1 (no data yet: its rewards only
// clamped), so it trains nothing and only fills the statistics (ppo_trainer::update_epochs).

#include <cmath>
#include <cstddef>

#include <gmi/core/hd.hpp>
#include <gmi/nn/normalizer.hpp>

namespace gmi::rl {

// What a collection (a host loop or a device thread per environment, the batched rollout's ends kernel, the
// actors' hand-off) needs to scale the reward of step t of environment i. running null: reward scaling off, the
// reward passes unchanged (the same bits as without it).
struct reward_scaling_view {
  float* running = nullptr;  // [num_envs]: each environment's R, carried across iterations (and checkpoints)
  float* seen = nullptr;     // [horizon][num_envs]: R after each step, what the statistics take in
  nn::normalizer_view norm;  // std(R) (std[0], sqrt(var + 1e-8)), frozen for the iteration; clip: the bound
  float gamma = 0.99f;

  // Step `at` (= t * num_envs + i) of environment i gave the raw reward r and ended (or not) the episode: R moves
  // on and is recorded, and the reward to train on comes back.
  GMI_HD float scale(std::size_t i, std::size_t at, float r, bool ended) const {
    if (!running) return r;
    const float ret = running[i] * gamma + r;
    seen[at] = ret;
    running[i] = ended ? 0.0f : ret;
    return scaled_reward(r, norm.std[0], norm.clip);
  }

  // r / std clamped to [-clip, clip].
  GMI_HD static float scaled_reward(float r, float std, float clip) { return fminf(fmaxf(r / std, -clip), clip); }
};

}  // namespace gmi::rl

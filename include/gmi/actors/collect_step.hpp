#pragma once
// One environment's part of one hand-off of PPO on CPU actors, written once for the host collector
// (ppo_actors.hpp) and the GPU kernel (ppo_actors_gpu.cuh): record step k - 1's outcome (reward, truncation
// bootstrap, end), then either draw step k's action or, after the last step, store the bootstrap value and run
// GAE over the environment's column. The same arithmetic, in the same order, as ppo_rollout_view::collect.

#include <cstddef>
#include <cstdint>

#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/rl/gae.hpp>
#include <gmi/rl/ppo_steps.hpp>

namespace gmi::actors {

// What environment i of a group brings to the hand-off at step k (pointers into that group's arrays).
struct collect_input {
  const float* obs;        // obs_dim: after k steps
  const float* final_obs;  // obs_dim: the episode's last observation when step k - 1 truncated it
  float reward;            // of step k - 1 (k >= 1)
  bool terminated, truncated;
};

// Environment i at step `step` of the rollout through v; `a` receives the action when needs_actions, and r is the
// environment's policy stream, alive over the whole rollout.
template <class E, class Net>
GMI_HD void collect_step(const rl::ppo_rollout_view<E, Net>& v, const float* params, gmi::rng& r, std::size_t i,
                         int step, bool needs_actions, const collect_input& in, float* a) {
  constexpr int obs_dim = E::obs_dim, act_dim = E::act_dim, dist_dim = Net::dist_dim;
  const std::size_t n = static_cast<std::size_t>(v.num_envs);
  float on[obs_dim], mu[dist_dim], value;
  if (step > 0) {
    const std::size_t at = static_cast<std::size_t>(step - 1) * n + i;
    float reward = v.reward_scale.scale(i, at, in.reward, in.terminated || in.truncated);
    if (in.truncated && v.bootstrap_truncation) {
      v.obs_norm.normalize(in.final_obs, on);
      Net::forward(params, on, mu, &value);
      reward += v.gamma * v.value_of(value);
    }
    v.rewards[at] = reward;
    v.ends[at] = (in.terminated || in.truncated) ? 1 : 0;
  }
  v.obs_norm.normalize(in.obs, on);
  Net::forward(params, on, mu, &value);
  if (!needs_actions) {  // the run's last observations: bootstrap value, then GAE of column i
    v.values[static_cast<std::size_t>(v.horizon) * n + i] = v.value_of(value);
    for (int k = 0; k < obs_dim; ++k) v.current_obs[i * obs_dim + k] = in.obs[k];
    v.policy_rng_blocks[i] = r.block();
    rl::gae_column(static_cast<int>(i), v.num_envs, v.horizon, v.gamma, v.lambda, v.rewards, v.ends, v.values,
                   v.advantages, v.returns);
    return;
  }
  const std::size_t at = static_cast<std::size_t>(step) * n + i;
  float logp;
  Net::sample(params, mu, r, a, &logp);
  for (int k = 0; k < obs_dim; ++k) v.obs[at * obs_dim + k] = in.obs[k];
  for (int k = 0; k < act_dim; ++k) v.actions[at * act_dim + k] = a[k];
  v.log_probs[at] = logp;
  v.values[at] = v.value_of(value);
}

}  // namespace gmi::actors

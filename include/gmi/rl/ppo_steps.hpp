#pragma once
// The two per-item functions of PPO, written once for a host loop and a device thread: collect one
// environment's rollout column (normalize -> policy -> sample -> env step -> truncation bootstrap, then GAE),
// and add one sample's loss gradient into a gradient row through an adder (plain += on the host, a warp
// reduction on the device).

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/gae.hpp>
#include <gmi/rl/ppo_config.hpp>
#include <gmi/rl/ppo_loss.hpp>
#include <gmi/rl/reward_scaling.hpp>
#include <gmi/rl/shuffle.hpp>

namespace gmi::rl {

// Loss terms accumulated beside the gradient, per minibatch (means over its samples).
enum ppo_term : int { term_policy = 0, term_value, term_entropy, term_kl, term_clipped, term_bounds, term_count };

// Rollout arrays are [horizon][num_envs] (values: horizon + 1 rows); observations are stored raw and
// normalized with the statistics frozen for the iteration, so collection and update see the same inputs.
template <gmi::env E, class Net>
struct ppo_rollout_view {
  static constexpr int obs_dim = E::obs_dim, act_dim = E::act_dim, dist_dim = Net::dist_dim;
  static_assert(Net::obs_dim == E::obs_dim && Net::act_dim == E::act_dim,
                "gmi::rl::ppo: the network's obs_dim/act_dim must equal the environment's");
  static_assert(gmi::network_fits_env<Net, E>(), "gmi::rl::ppo: the network's policy must fit the environment's actions");

  env_batch_view<E> env;
  nn::normalizer_view obs_norm;
  nn::normalizer_view value_norm;  // the value head predicts normalized returns when normalize_value is set
  bool normalize_value;
  float* current_obs;  // [num_envs][obs_dim], raw
  float* obs;          // [horizon][num_envs][obs_dim], raw
  float* actions;      // [horizon][num_envs][act_dim]
  float* log_probs;    // [horizon][num_envs]
  float* values;       // [horizon + 1][num_envs]
  float* rewards;      // [horizon][num_envs], scaled (reward_scale), truncation bootstrap included
  std::uint8_t* ends;  // [horizon][num_envs], terminated or truncated
  float* advantages;   // [horizon][num_envs]
  float* returns;      // [horizon][num_envs]
  std::uint64_t* policy_rng_blocks;  // [num_envs]
  std::uint64_t policy_seed;
  int num_envs;
  int horizon;
  float gamma;
  float lambda;
  bool bootstrap_truncation;
  reward_scaling_view reward_scale{};  // off unless ppo_config::reward_scaling (running null)

  // The value in return units.
  GMI_HD float value_of(float head) const { return normalize_value ? value_norm.denormalize(0, head) : head; }

  GMI_HD void collect(std::size_t i, const float* params) const {
    float o[obs_dim], on[obs_dim], a[act_dim], mu[dist_dim], final_obs[obs_dim];
    for (int k = 0; k < obs_dim; ++k) o[k] = current_obs[i * obs_dim + k];
    gmi::rng r(policy_seed, i, policy_rng_blocks[i]);
    const std::size_t n = static_cast<std::size_t>(num_envs);
    for (int t = 0; t < horizon; ++t) {
      const std::size_t at = static_cast<std::size_t>(t) * n + i;
      obs_norm.normalize(o, on);
      float v, logp;
      Net::forward(params, on, mu, &v);
      Net::sample(params, mu, r, a, &logp);
      for (int k = 0; k < obs_dim; ++k) obs[at * obs_dim + k] = o[k];
      for (int k = 0; k < act_dim; ++k) actions[at * act_dim + k] = a[k];
      log_probs[at] = logp;
      values[at] = value_of(v);
      const step_result s = env.step_one(i, a, o, final_obs);
      float reward = reward_scale.scale(i, at, s.reward, s.terminated || s.truncated);
      if (s.truncated && bootstrap_truncation) {
        float fn[obs_dim], fmu[dist_dim], fv;
        obs_norm.normalize(final_obs, fn);
        Net::forward(params, fn, fmu, &fv);
        reward += gamma * value_of(fv);
      }
      rewards[at] = reward;
      ends[at] = (s.terminated || s.truncated) ? 1 : 0;
    }
    obs_norm.normalize(o, on);
    float v_last;
    Net::forward(params, on, mu, &v_last);
    values[static_cast<std::size_t>(horizon) * n + i] = value_of(v_last);
    for (int k = 0; k < obs_dim; ++k) current_obs[i * obs_dim + k] = o[k];
    policy_rng_blocks[i] = r.block();
    gae_column(static_cast<int>(i), num_envs, horizon, gamma, lambda, rewards, ends, values, advantages, returns);
  }

  // Serving: `steps` steps of policy + env for environment i, nothing stored (the serving tier's work).
  GMI_HD void serve(std::size_t i, const float* params, int steps) const {
    float o[obs_dim], on[obs_dim], a[act_dim], mu[dist_dim];
    for (int k = 0; k < obs_dim; ++k) o[k] = current_obs[i * obs_dim + k];
    gmi::rng r(policy_seed, i, policy_rng_blocks[i]);
    for (int t = 0; t < steps; ++t) {
      obs_norm.normalize(o, on);
      float v, logp;
      Net::forward(params, on, mu, &v);
      Net::sample(params, mu, r, a, &logp);
      env.step_one(i, a, o, nullptr);
    }
    for (int k = 0; k < obs_dim; ++k) current_obs[i * obs_dim + k] = o[k];
    policy_rng_blocks[i] = r.block();
  }
};

// One minibatch of the update: samples perm(begin + k) for k < count.
template <class Net>
struct ppo_minibatch_view {
  static constexpr int obs_dim = Net::obs_dim, act_dim = Net::act_dim, dist_dim = Net::dist_dim;
  // dL/d(the distribution's own parameters) has Net::dist_param_count values; arrays of it at least one.
  static constexpr int dist_slots = Net::dist_param_count > 0 ? Net::dist_param_count : 1;

  const float* obs;
  const float* actions;
  const float* log_probs;
  const float* values;
  const float* advantages;
  const float* returns;
  const float* advantage_stats;  // mean, 1 / (std + 1e-8) of the whole rollout (used if normalize_advantage)
  nn::normalizer_view obs_norm;
  nn::normalizer_view value_norm;
  bool normalize_value;
  std::uint32_t total;           // horizon * num_envs
  std::uint64_t shuffle_seed;
  std::uint64_t shuffle_round;   // a new permutation every epoch
  std::uint32_t begin;
  std::uint32_t count;
  float clip, value_coef, entropy_coef, value_clip;
  bool clip_value, normalize_advantage;
  float bounds_coef;
  float dual_clip;
  const float* entropy_coef_at;  // set: the entropy weight is read here (a schedule moves it), not entropy_coef

  // Adds sample k's gradient of the minibatch-mean loss into grads (Net::param_count) and its loss terms into
  // terms (term_count), each through add(where, value). Inactive samples (active == false) add zeros, so every
  // thread of a warp makes the same calls (what a warp-reducing adder needs).
  template <class Add>
  GMI_HD void accumulate(std::uint32_t k, bool active, const float* params, float* grads, float* terms, Add add) const {
    const std::uint32_t j = sample(k, active);
    const float scale = active ? 1.0f / static_cast<float>(count) : 0.0f;
    float on[obs_dim], mu[dist_dim], acts[Net::acts_size], dz[Net::acts_size];
    float d_mu[dist_dim], d_dist[dist_slots], d_value, v;
    obs_norm.normalize(obs + static_cast<std::size_t>(j) * obs_dim, on);
    Net::forward(params, on, mu, &v, acts);
    const ppo_sample_terms t = loss_gradient(j, mu, v, params, scale, d_mu, d_dist, &d_value);
    Net::backward(params, on, acts, d_mu, d_value, d_dist, grads, dz, nullptr, add);
    add_terms(t, scale, terms, add);
  }

  // This minibatch's draw: minibatch sample k is rollout sample permutation()(begin + k).
  GMI_HD feistel_permutation permutation() const { return {total, shuffle_seed, shuffle_round}; }

  // The rollout index of minibatch sample k (0 when inactive).
  GMI_HD std::uint32_t sample(std::uint32_t k, bool active = true) const { return active ? permutation()(begin + k) : 0; }

  // What the loss reads of rollout sample j besides the network's outputs, normalized as the loss uses it.
  struct sample_inputs {
    float action[act_dim];
    float log_prob, old_value, advantage, target;
  };
  GMI_HD sample_inputs inputs(std::uint32_t j) const {
    sample_inputs in;
    for (int a = 0; a < act_dim; ++a) in.action[a] = actions[static_cast<std::size_t>(j) * act_dim + a];
    in.log_prob = log_probs[j];
    in.advantage = advantages[j];
    if (normalize_advantage) in.advantage = (in.advantage - advantage_stats[0]) * advantage_stats[1];
    // With value normalization the loss compares the head with normalized targets (rl_games' normalize_value).
    in.old_value = normalize_value ? value_norm.normalize(0, values[j]) : values[j];
    in.target = normalize_value ? value_norm.normalize(0, returns[j]) : returns[j];
    return in;
  }

  // A sample's loss terms and the gradient of its share (scale) of the loss with respect to the network's
  // outputs (the policy head's dist_dim, then the value) and the distribution's own parameters (d_dist:
  // log_std's), given those outputs; params: the flat parameters (where the distribution's own ones are read).
  GMI_HD ppo_sample_terms loss_gradient(const sample_inputs& in, const float* out, float v, const float* params,
                                        float scale, float* d_out, float* d_dist, float* d_value) const {
    return ppo_policy_sample_gradient<Net>(params, in.action, out, v, in.log_prob, in.old_value, in.advantage,
                                           in.target, clip, value_coef, entropy_coef_at ? *entropy_coef_at : entropy_coef,
                                           bounds_coef, clip_value,
                                           value_clip, scale, d_out, d_dist, d_value, dual_clip);
  }
  GMI_HD ppo_sample_terms loss_gradient(std::uint32_t j, const float* out, float v, const float* params, float scale,
                                        float* d_out, float* d_dist, float* d_value) const {
    return loss_gradient(inputs(j), out, v, params, scale, d_out, d_dist, d_value);
  }

  // The loss terms of one sample (means over the minibatch once every sample has added its share).
  template <class Add>
  GMI_HD static void add_terms(const ppo_sample_terms& t, float scale, float* terms, Add& add) {
    add(terms + term_policy, scale * t.policy_loss);
    add(terms + term_value, scale * t.value_loss);
    add(terms + term_entropy, scale * t.entropy);
    add(terms + term_kl, scale * t.approx_kl);
    add(terms + term_clipped, t.clipped ? scale : 0.0f);
    add(terms + term_bounds, scale * t.bounds_loss);
  }
};

// What an update reads of its samples (the PPO trainer's rollout, the APPO learner's evaluated batch).
struct ppo_update_arrays {
  const float *obs, *actions, *log_probs, *values, *advantages, *returns;
  const float* advantage_stats;
  nn::normalizer_view obs_norm, value_norm;
  std::uint32_t total;
  std::uint64_t shuffle_seed;
  const float* entropy_coef = nullptr;  // the scheduled entropy weight (ppo_minibatch_view::entropy_coef_at)
};

// Minibatch b (of `minibatch` samples) of epoch `epoch` in update `update`, with the loss settings of c: the one
// place a ppo_config becomes a minibatch view.
template <class Net>
ppo_minibatch_view<Net> make_minibatch_view(const ppo_update_arrays& a, const ppo_config& c, std::uint64_t update,
                                            int epoch, std::size_t minibatch, std::size_t b) {
  const std::size_t begin = b * minibatch;
  return {a.obs,
          a.actions,
          a.log_probs,
          a.values,
          a.advantages,
          a.returns,
          a.advantage_stats,
          a.obs_norm,
          a.value_norm,
          c.normalize_value,
          a.total,
          a.shuffle_seed,
          update * static_cast<std::uint64_t>(c.epochs) + static_cast<std::uint64_t>(epoch),
          static_cast<std::uint32_t>(begin),
          static_cast<std::uint32_t>(std::min<std::size_t>(minibatch, a.total - begin)),
          c.clip,
          c.value_coef,
          c.entropy_coef,
          c.value_clip,
          c.clip_value,
          c.normalize_advantage,
          c.bounds_loss_coef,
          c.dual_clip,
          a.entropy_coef};
}

}  // namespace gmi::rl

#pragma once
// Deterministic evaluation of a trained policy: fresh episodes on host threads, each acting with the policy's mode
// (the Gaussian's mean, the categorical's most likely action) on observations normalized by the training's
// statistics. Training returns include exploration noise; a known optimum (the LQ proxies' Riccati controller)
// is that of a deterministic policy, so this is the return to compare with it (docs/learning.md).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gmi/concepts/env.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/span.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/io/checkpoint.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/env_batch.hpp>

namespace gmi::rl {

// Episodes a run's end line evaluates (one per environment of the evaluation batch).
inline constexpr int default_eval_episodes = 256;

struct eval_result {
  std::uint64_t episodes = 0;
  double mean_return = std::numeric_limits<double>::quiet_NaN();
  double mean_length = std::numeric_limits<double>::quiet_NaN();
};

// The evaluation environments' seed: apart from the training's (seed, i) streams, so the initial states are new.
inline std::uint64_t eval_stream_seed(std::uint64_t seed) { return seed * 0xA0761D6478BD642Full + 0xE7037ED1A0B428DBull; }

// The action a deterministic policy takes given the policy head's outputs: the mean, or the index of the largest
// logit (the first of equal ones) as a float.
template <class Net>
GMI_HD void mode_action(const float* out, float* action) {
  if constexpr (Net::discrete) {
    int best = 0;
    for (int k = 1; k < Net::dist_dim; ++k) best = out[k] > out[best] ? k : best;
    action[0] = static_cast<float>(best);
  } else {
    for (int k = 0; k < Net::act_dim; ++k) action[k] = out[k];
  }
}

// One deterministic episode in each of envs 0..n-1 (`first`: their first observations, obs_dim each), to its end
// (termination or the time limit), with the weights `params` (Net::param_count) and the observation statistics
// `obs_stats` ([count | mean | M2], the trainer's record; count 0: no normalization; clamped to +-obs_clip);
// step_one(i, action, obs) steps environment i (env_batch_view's or a host sim's). Returns and lengths are summed in
// environment order, so the result does not depend on the thread count.
template <class Net, int ObsDim, class StepOne>
eval_result mode_episodes(std::size_t n, const float* first, host_span<const float> params,
                          host_span<const double> obs_stats, exec::host policy, float obs_clip, StepOne step_one) {
  gmi::require(params.size() == std::size_t(Net::param_count), "evaluation params", params.size(),
               "Net::param_count = " + std::to_string(Net::param_count));
  nn::running_mean_std<exec::host> norm(ObsDim, nn::normalizer_config{.clip = obs_clip});
  norm.assign(obs_stats);
  std::vector<double> returns(n, 0.0), lengths(n, 0.0);
  const nn::normalizer_view nv = norm.view();
  const float* p = params.data();
  exec::for_each(policy, n, [&](std::size_t i) {
    float o[ObsDim], on[ObsDim], out[Net::dist_dim], a[Net::act_dim], v;
    for (int k = 0; k < ObsDim; ++k) o[k] = first[i * ObsDim + k];
    double ret = 0, len = 0;
    for (;;) {
      nv.normalize(o, on);
      Net::forward(p, on, out, &v);
      mode_action<Net>(out, a);
      const step_result s = step_one(i, a, o);
      ret += s.reward;
      len += 1;
      if (s.terminated || s.truncated) break;  // every task has a time limit, so this ends
    }
    returns[i] = ret;
    lengths[i] = len;
  });
  eval_result r;
  r.episodes = n;
  double rs = 0, ls = 0;
  for (std::size_t i = 0; i < n; ++i) {
    rs += returns[i];
    ls += lengths[i];
  }
  r.mean_return = rs / double(n);
  r.mean_length = ls / double(n);
  return r;
}

// `episodes` fresh episodes of task E, one per environment (mode_episodes), seeded apart from the training.
template <gmi::env E, class Net>
eval_result evaluate_mode(host_span<const float> params, host_span<const double> obs_stats, int episodes,
                          std::uint64_t seed, const typename E::params& env_params = {}, exec::host policy = {},
                          float obs_clip = 5.0f) {
  gmi::require(episodes >= 1, "evaluation episodes", episodes, ">= 1");
  env_batch<E, exec::host> envs(episodes, eval_stream_seed(seed), env_params, policy);
  const std::size_t n = static_cast<std::size_t>(episodes);
  std::vector<float> first(n * E::obs_dim);
  envs.reset(host_span<float>(first.data(), first.size()));
  const env_batch_view<E> view = envs.view();
  return mode_episodes<Net, E::obs_dim>(n, first.data(), params, obs_stats, policy, obs_clip,
                                        [&](std::size_t i, const float* a, float* o) {
                                          return view.step_one(i, a, o, nullptr);
                                        });
}

// The same from a PPO trainer's state (ppo_trainer::save_state(): its weights and observation statistics, copied
// to the host whatever the backend), its seed and its task's parameters. A trainer whose environments are not
// Trainer::env_type's (an engine of MuJoCo tasks on CPU actors) makes them: trainer.eval_sim(episodes, seed,
// env_params), a host sim (reset_one, step_one) of `episodes` environments that the episodes step instead.
template <class Trainer>
  requires requires(Trainer& t) {
    t.save_state();
    t.seed();
    t.config().obs_clip;
    Trainer::net_type::discrete;
  }
eval_result evaluate_mode(Trainer& trainer, int episodes, const typename Trainer::env_type::params& env_params = {},
                          exec::host policy = {}) {
  using E = typename Trainer::env_type;
  using Net = typename Trainer::net_type;
  const io::checkpoint ck = trainer.save_state();
  const std::vector<float> params = ck.template get<float>("policy.params", std::size_t(Net::param_count));
  const std::vector<double> stats = ck.template get<double>("obs_norm.stats", 1 + 2 * std::size_t(E::obs_dim));
  const host_span<const float> p(params.data(), params.size());
  const host_span<const double> st(stats.data(), stats.size());
  if constexpr (requires { trainer.eval_sim(1, std::uint64_t{}, env_params); }) {
    gmi::require(episodes >= 1, "evaluation episodes", episodes, ">= 1");
    auto sim = trainer.eval_sim(episodes, eval_stream_seed(trainer.seed()), env_params);
    const std::size_t n = static_cast<std::size_t>(episodes);
    std::vector<float> first(n * E::obs_dim);
    for (std::size_t i = 0; i < n; ++i) sim.reset_one(i, first.data() + i * E::obs_dim);
    return mode_episodes<Net, E::obs_dim>(n, first.data(), p, st, policy, trainer.config().obs_clip,
                                          [&](std::size_t i, const float* a, float* o) {
                                            return sim.step_one(i, a, o, nullptr);
                                          });
  } else {
    return evaluate_mode<E, Net>(p, st, episodes, trainer.seed(), env_params, policy, trainer.config().obs_clip);
  }
}

}  // namespace gmi::rl

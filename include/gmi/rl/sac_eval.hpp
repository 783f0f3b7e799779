#pragma once
// The deterministic policy's return of a SAC actor on the host (sac_device_trainer::evaluate): tanh of the mean
// action, one episode in each of `envs` fresh environments, each capped at the task's max_steps.

#include <cstddef>
#include <cstdint>
#include <vector>

#include <gmi/concepts/env.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/sac_loss.hpp>

namespace gmi::rl {

// The mean undiscounted return over one episode in each of `envs` environments (seed), the actor's parameters
// `actor` (host floats), log-std bounds [lo, hi].
template <gmi::env E, class ActorNet>
double sac_deterministic_return(const std::vector<float>& actor, int envs, std::uint64_t seed,
                                const typename E::params& params, float lo, float hi) {
  constexpr int O = E::obs_dim, A = E::act_dim;
  const auto n = std::size_t(envs);
  env_batch<E> eval(envs, seed, params);
  std::vector<float> o(n * O), a(n * A), rew(n);
  std::vector<std::uint8_t> te(n), tr(n), done(n, 0);
  std::vector<double> ret(n, 0.0);
  eval.reset({o.data(), o.size()});
  for (int t = 0; t < params.max_steps; ++t) {
    for (std::size_t i = 0; i < n; ++i) {
      float head[2 * A], eps[A] = {};
      ActorNet::forward(actor.data(), &o[i * O], head);
      squashed_draw<float, A> d;
      d.compute(head, eps, lo, hi);
      for (int k = 0; k < A; ++k) a[i * A + k] = d.action[k];
    }
    eval.step({a.data(), a.size()}, {o.data(), o.size()}, {rew.data(), n}, {te.data(), n}, {tr.data(), n});
    for (std::size_t i = 0; i < n; ++i) {
      if (done[i]) continue;
      ret[i] += rew[i];
      done[i] = te[i] || tr[i];
    }
  }
  double sum = 0;
  for (double r : ret) sum += r;
  return sum / double(n);
}

}  // namespace gmi::rl

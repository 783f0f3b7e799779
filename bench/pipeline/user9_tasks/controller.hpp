// Runs a hand-written controller (and a random policy) through the env's own functions, as the driver would:
// an episode ends on terminated or after params.max_steps steps.
#pragma once
#include <gmi/gmi.hpp>
#include <cstdio>
#include <string>

template <class E, class Policy>
double mean_return(Policy policy, int episodes = 1000, std::uint64_t seed = 7) {
  typename E::params p{};
  double total = 0;
  for (int e = 0; e < episodes; ++e) {
    gmi::rng r(seed, e);
    typename E::state s;
    E::reset(s, r, p);
    double ret = 0;
    for (int t = 0; t < p.max_steps; ++t) {
      float obs[E::obs_dim];
      E::observe(s, obs, p);
      float a[E::act_dim];
      policy(obs, a, r);
      const gmi::transition tr = E::step(s, a, r, p);
      ret += tr.reward;
      if (tr.terminated) break;
    }
    total += ret;
  }
  return total / episodes;
}

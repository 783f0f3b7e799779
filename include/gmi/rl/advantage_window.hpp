#pragma once
// Advantage normalization over a window of rollouts (ppo_config::advantage_window, default 1: each rollout by its
// own mean and std). With every environment in phase, most rollouts hold only settled states whose true advantages
// are tiny against the critic's error; scaled by their own std to unit size, that error drives the policy at full
// step and its settled behaviour drifts late in a run (spring_chain, docs/learning.md "spring_chain's late decline
// (helper learn10)"). Over a window of K rollouts the mean and std weigh the transient rollouts too, so a rollout
// with little to say moves the policy little. The rollout's record [count | mean | M2] is merged into the held one
// after the older samples beyond K rollouts were forgotten (nn::normalizer's window rule), on host and device.

#include <gmi/core/hd.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/detail/stats_words.hpp>

namespace gmi::rl {

// Merges a rollout's record into `held` (both [count | mean | M2]) under a window of `rollouts` rollouts of
// `rollout` samples, and returns the record the scale comes from: the rollout's own when rollouts <= 1.
GMI_HD inline const double* advantage_window_take_in(double* held, const double* record, int rollouts, double rollout) {
  if (rollouts <= 1) return record;
  const double had = held[0], cb = record[0], ca = nn::detail::kept_count(had, cb, rollouts * rollout);
  if (ca < had) held[2] *= ca / had;
  nn::detail::merge_moments(ca, held[1], held[2], cb, record[1], record[2]);
  held[0] = ca + cb;
  return held;
}

// stats = mean, 1 / (std + 1e-8) of the record advantage_window_take_in returns: the trainer's advantage scale, on
// host and device (detail/advantage_stats.cuh).
GMI_HD inline void advantage_window_scale(double* held, const double* record, int rollouts, double rollout, float* stats) {
  detail::advantage_scale_rn(advantage_window_take_in(held, record, rollouts, rollout), stats);
}

// The trainer's storage: a rollout's record (device: the moments kernel's output), then the window's, zeroed.
template <class Array, class Policy>
Array advantage_window_storage(const Policy& policy) {
  Array a(6);
  if constexpr (Policy::on_device) a.fill_bytes(0, policy.stream);
  return a;
}

}  // namespace gmi::rl

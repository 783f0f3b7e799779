#pragma once
// What travels between serving and trainer GMIs in asynchronous PPO (APPO): one env-step record of a rollout, and
// the weights snapshot (network parameters plus the normalizers' float mean and std) a learner publishes and an
// actor acts with. A rollout is (horizon + 1) rows x num_envs records, time-major; row `horizon` holds the
// observation after the last step (the bootstrap), the version, and in `end` and `reward` the number and the
// summed (undiscounted, unbootstrapped) returns of the episodes that environment finished during the rollout.

#include <cstddef>
#include <cstdint>

#include <gmi/core/hd.hpp>
#include <gmi/nn/normalizer.hpp>

namespace gmi::rl {

template <int ObsDim, int ActDim>
struct appo_record {
  float obs[ObsDim];      // raw observation before the step
  float action[ActDim];
  float log_prob;         // log mu(action | obs) of the behaviour policy
  float reward;           // with the behaviour policy's truncation bootstrap (gamma * V(final state)) included
  std::uint32_t end;      // 1 when the episode ended at this step (terminated or truncated)
  std::uint32_t version;  // the version of the weights that chose the action
};

// Flat float snapshot: [params | obs mean | obs std | value mean | value std].
template <class Net>
struct appo_snapshot_layout {
  static constexpr int obs_dim = Net::obs_dim;
  static constexpr std::size_t params = 0;
  static constexpr std::size_t obs_mean = static_cast<std::size_t>(Net::param_count);
  static constexpr std::size_t obs_std = obs_mean + obs_dim;
  static constexpr std::size_t value_mean = obs_std + obs_dim;
  static constexpr std::size_t value_std = value_mean + 1;
  static constexpr std::size_t size = value_std + 1;
  static constexpr float obs_clip = nn::normalizer_config{}.clip;  // the clips the learner's normalizers use
  static constexpr float value_clip = 1e6f;

  GMI_HD static nn::normalizer_view obs_norm(const float* s) { return {s + obs_mean, s + obs_std, obs_dim, obs_clip}; }
  GMI_HD static nn::normalizer_view value_norm(const float* s) { return {s + value_mean, s + value_std, 1, value_clip}; }
};

}  // namespace gmi::rl

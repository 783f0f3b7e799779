#pragma once
// ppo_trainer's part in a synced group (ppo_sync.hpp): the statistics all-gather, the check that every member runs
// one schedule, rank 0's weights to every member. Included by ppo.hpp.

#include <gmi/rl/ppo.hpp>

namespace gmi::rl {

template <gmi::env E, class Net, gmi::exec::policy P>
inline void ppo_trainer<E, Net, P>::gather_statistics() {
  const std::size_t world = static_cast<std::size_t>(sync_->world);
  std::vector<double> slots(world * stats_size, 0.0);
  double* mine = slots.data() + static_cast<std::size_t>(sync_->rank) * stats_size;
  if constexpr (P::on_device) {
    device_->local_moments(*this);
    GMI_CUDA_TRY(cudaMemcpyAsync(mine, local_stats_.data(), stats_size * sizeof(double), cudaMemcpyDeviceToHost,
                                 policy_.stream));
    GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
  } else {
    using cspan = host_span<const float>;
    if (config_.normalize_advantage) advantage_moments(mine + stats_advantages);
    if (config_.normalize_obs) {
      const std::vector<double> r = obs_norm_.moments(cspan(obs_.data(), obs_.size()));
      std::copy(r.begin(), r.end(), mine + stats_obs);
    }
    if (config_.normalize_value) {
      const std::vector<double> r = value_norm_.moments(cspan(returns_.data(), returns_.size()));
      std::copy(r.begin(), r.end(), mine + stats_returns);
    }
  }
  sync_->sum_stats(slots.data(), slots.size());
  std::vector<double> merged(stats_size, 0.0);
  auto merge_part = [&](std::size_t at, int dim) {
    const std::size_t size = 1 + 2 * static_cast<std::size_t>(dim);
    std::vector<double> part(world * size);
    for (std::size_t r = 0; r < world; ++r)
      std::copy_n(slots.data() + r * stats_size + at, size, part.data() + r * size);
    const std::vector<double> m = nn::merge_in_order(host_span<const double>(part.data(), part.size()), dim);
    std::copy(m.begin(), m.end(), merged.begin() + static_cast<std::ptrdiff_t>(at));
  };
  merge_part(stats_advantages, 1);
  merge_part(stats_obs, obs_dim);
  merge_part(stats_returns, 1);
  float scale[2] = {0.0f, 1.0f};
  if (config_.normalize_advantage) advantage_scale(merged.data() + stats_advantages, scale);
  if constexpr (P::on_device) {  // from pageable memory: the copies have taken the bytes when they return
    if (config_.normalize_advantage)
      GMI_CUDA_TRY(cudaMemcpyAsync(advantage_stats_.data(), scale, sizeof scale, cudaMemcpyHostToDevice, policy_.stream));
    GMI_CUDA_TRY(cudaMemcpyAsync(merged_stats_.data(), merged.data(), stats_size * sizeof(double),
                                 cudaMemcpyHostToDevice, policy_.stream));
  } else {
    if (config_.normalize_advantage) std::copy_n(scale, 2, advantage_stats_.begin());
    merged_stats_ = std::move(merged);
  }
}

template <gmi::env E, class Net, gmi::exec::policy P>
inline void ppo_trainer<E, Net, P>::check_group_schedule(const ppo_sync& sync) const {
  gmi::require(config_.advantage_window == 1, "ppo.advantage_window with a synced group", config_.advantage_window,
               "1 (the group's advantage statistics are this rollout's; a window is not merged yet)");
  const std::array<std::pair<const char*, double>, 13> mine{{
      {"trainers", 1.0},
      {"samples per iteration (horizon x num_envs)", static_cast<double>(total_)},
      {"ppo.minibatch (samples per gradient step)", static_cast<double>(minibatch_)},
      {"ppo.epochs", static_cast<double>(config_.epochs)},
      {"gradient row (parameters + loss terms)", static_cast<double>(row)},
      {"obs_dim", static_cast<double>(obs_dim)},
      {"ppo.normalize_advantage", config_.normalize_advantage ? 1.0 : 0.0},
      {"ppo.normalize_obs", config_.normalize_obs ? 1.0 : 0.0},
      {"ppo.normalize_value", config_.normalize_value ? 1.0 : 0.0},
      {"ppo.obs_normalizer_window", config_.obs_normalizer_window},
      {"ppo.value_normalizer_window", config_.value_normalizer_window},
      {"ppo.schedule (0 constant, 1 adaptive_kl, 2 linear, 3 kl_capped)", static_cast<double>(config_.schedule)},
      {"ppo.lr_decay_env_steps", config_.lr_decay_env_steps},
  }};
  const std::size_t k = mine.size(), world = static_cast<std::size_t>(sync.world);
  std::vector<double> all(world * k, 0.0);
  for (std::size_t i = 0; i < k; ++i) all[static_cast<std::size_t>(sync.rank) * k + i] = mine[i].second;
  sync.sum_stats(all.data(), all.size());
  for (std::size_t r = 0; r < world; ++r)
    if (all[r * k] != 1.0)
      throw gmi::config_error(gmi::got_need("ppo_sync: trainers with rank " + std::to_string(r),
                                            static_cast<long long>(all[r * k]),
                                            "1 (each rank 0.." + std::to_string(world - 1) + " once)"));
  for (std::size_t r = 1; r < world; ++r)
    for (std::size_t i = 1; i < k; ++i)
      if (all[r * k + i] != all[i])
        throw gmi::config_error(gmi::got_need("ppo_sync: rank " + std::to_string(r) + "'s " + mine[i].first,
                                              static_cast<long long>(all[r * k + i]),
                                              std::to_string(static_cast<long long>(all[i])) + " as on rank 0"));
}

template <gmi::env E, class Net, gmi::exec::policy P>
inline void ppo_trainer<E, Net, P>::broadcast_params() {
  const bool root = sync_->rank == 0;
  if constexpr (P::on_device) {
    const cudaStream_t s = policy_.stream;
    grads_.fill_bytes(0, s);
    if (root)
      GMI_CUDA_TRY(cudaMemcpyAsync(grads_.data(), params_.data(), params_.size() * sizeof(float),
                                   cudaMemcpyDeviceToDevice, s));
    sync_->sum_device(grads_.data(), grads_.size(), s);
    GMI_CUDA_TRY(cudaMemcpyAsync(params_.data(), grads_.data(), params_.size() * sizeof(float),
                                 cudaMemcpyDeviceToDevice, s));
    GMI_CUDA_TRY(cudaStreamSynchronize(s));
  } else {
    std::fill(grads_.begin(), grads_.end(), 0.0f);
    if (root) std::copy(params_.begin(), params_.end(), grads_.begin());
    sync_->sum_host(grads_.data(), grads_.size());
    std::copy_n(grads_.begin(), params_.size(), params_.begin());
  }
}
}  // namespace gmi::rl

#pragma once
// Serving without a trainer (trainers::none): N environments stepped by the policy's inference and sampling,
// nothing stored, nothing learned. It holds what serving reads (weights, env state, the policy's RNG counters and
// an observation normalizer with no statistics yet) and none of a PPO trainer's rollout, Adam state, update
// buffers or graphs, and it steps the trainer's own per-environment function (ppo_rollout_view::serve) from the
// trainer's initial weights, so a seed serves the steps ppo_trainer::serve would. On exec::cuda include
// <gmi/rl/policy_server.cuh> in a .cu file.

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/span.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/io/checkpoint.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/rl/ppo_config.hpp>
#include <gmi/rl/ppo_steps.hpp>

namespace gmi::rl {

namespace detail {
// The launch of the serving kernel, defined in policy_server.cuh.
template <class E, class Net>
void launch_serve(const ppo_rollout_view<E, Net>& v, const float* params, int steps, cudaStream_t stream);
}  // namespace detail

template <gmi::env E, class Net, gmi::exec::policy P = exec::host>
class policy_server {
 public:
  using env_type = E;
  using net_type = Net;
  using policy_type = P;
  template <class T>
  using array = std::conditional_t<P::on_device, cuda::device_buffer<T>, std::vector<T>>;
  static constexpr int obs_dim = E::obs_dim, act_dim = E::act_dim, param_count = Net::param_count;

  // The PPO config's settings that serving reads (the horizon, discount and the rest are the trainer's).
  policy_server(int num_envs, std::uint64_t seed, const ppo_config& config = {}, typename E::params env_params = {},
                P policy = {})
      : policy_(policy), seed_(seed), envs_(num_envs, seed, env_params, policy),
        n_(static_cast<std::size_t>(num_envs)), clip_(nn::normalizer_config{}.clip) {
    config.validate();
    // The trainer's first reset, so a server of the same seed and config serves the trainer's episodes.
    const episode_start start =
        config.random_episode_start ? episode_start::random_step : episode_start::first_step;
    const std::vector<float> init = detail::initial_params<Net>(seed);
    const std::vector<float> zeros(obs_dim, 0.0f), ones(obs_dim, 1.0f);
    if constexpr (P::on_device) {
      params_ = array<float>(Net::param_count);
      current_obs_ = array<float>(n_ * obs_dim);
      policy_rng_ = array<std::uint64_t>(n_);
      obs_mean_ = array<float>(obs_dim);
      obs_std_ = array<float>(obs_dim);
      cuda::copy(params_.span(), host_span<const float>(init.data(), init.size()), policy_.stream);
      cuda::copy(obs_mean_.span(), host_span<const float>(zeros.data(), zeros.size()), policy_.stream);
      cuda::copy(obs_std_.span(), host_span<const float>(ones.data(), ones.size()), policy_.stream);
      policy_rng_.fill_bytes(0, policy_.stream);
      envs_.reset(current_obs_.span(), policy_.stream, start);
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    } else {
      params_ = init;
      current_obs_.assign(n_ * obs_dim, 0.0f);
      policy_rng_.assign(n_, 0);
      obs_mean_ = zeros;
      obs_std_ = ones;
      envs_.reset(host_span<float>(current_obs_.data(), current_obs_.size()), nullptr, start);
    }
  }
  policy_server(const policy_server&) = delete;
  policy_server& operator=(const policy_server&) = delete;

  // `steps` steps of policy inference + sampling + env step for every environment, nothing stored.
  void serve(int steps) {
    gmi::require(steps >= 1, "serve steps", steps, ">= 1");
    const auto v = view();
    if constexpr (P::on_device) {
      detail::launch_serve<E, Net>(v, params_.data(), steps, policy_.stream);
    } else {
      const float* p = params_.data();
      exec::for_each(policy_, n_, [&](std::size_t i) { v.serve(i, p, steps); });
    }
  }

  // Waits for the queued work.
  void synchronize() {
    if constexpr (P::on_device) GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
  }

  [[nodiscard]] int num_envs() const noexcept { return static_cast<int>(n_); }
  // The environments (episode statistics, state), as ppo_trainer::envs.
  [[nodiscard]] env_batch<E, P>& envs() noexcept { return envs_; }

  // The weights served, as named tensors (what ppo_trainer::policy_tensors gives).
  [[nodiscard]] io::checkpoint policy_tensors() {
    std::vector<float> p(Net::param_count);
    if constexpr (P::on_device) {
      GMI_CUDA_TRY(cudaMemcpyAsync(p.data(), params_.data(), p.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                   policy_.stream));
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    } else {
      p = params_;
    }
    if constexpr (requires { E::name; }) {
      return policy_tensors_of<Net>(p, E::name);
    } else {
      return policy_tensors_of<Net>(p, "custom");
    }
  }

 private:
  // Serving reads the environments, the normalizer, the current observations and the RNG counters; the rollout
  // pointers stay null (serve stores nothing).
  [[nodiscard]] ppo_rollout_view<E, Net> view() const {
    auto* self = const_cast<policy_server*>(this);
    const nn::normalizer_view norm{obs_mean_.data(), obs_std_.data(), obs_dim, clip_};
    return {envs_.view(), norm, norm, false, self->current_obs_.data(), nullptr, nullptr, nullptr, nullptr, nullptr,
            nullptr, nullptr, nullptr, self->policy_rng_.data(), detail::policy_stream_seed(seed_),
            static_cast<int>(n_), 1, 0.0f, 0.0f, false};
  }

  P policy_;
  std::uint64_t seed_;
  env_batch<E, P> envs_;
  std::size_t n_;
  float clip_;
  array<float> params_, current_obs_, obs_mean_, obs_std_;
  array<std::uint64_t> policy_rng_;
};

}  // namespace gmi::rl

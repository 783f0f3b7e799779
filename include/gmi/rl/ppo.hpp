#pragma once
// PPO for one task over N environments of one GMI, on host threads (exec::host) or CUDA kernels (exec::cuda:
// include <gmi/rl/ppo.cuh> under nvcc). An iteration is: collect horizon steps of every environment (one fused
// pass per environment, GAE included), normalize advantages over the rollout, then epochs of shuffled
// minibatches, each a per-sample gradient, a fixed-order reduction (the same sums whatever the thread count)
// and an Adam step with gradient-norm clipping; finally the observation statistics take in the rollout.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/core/span.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/nn/adam.hpp>
#include <gmi/nn/mlp.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/ppo_config.hpp>
#include <gmi/rl/ppo_steps.hpp>

namespace gmi::rl {

// Means over every minibatch of the last iteration.
struct ppo_losses {
  double policy_loss = 0, value_loss = 0, entropy = 0, approx_kl = 0, clip_fraction = 0;
  double learning_rate = 0;
};

namespace detail {
// The CUDA half of the trainer, defined in ppo.cuh (a trainer on exec::cuda without that header fails to compile
// with ppo_device_ops incomplete: include <gmi/rl/ppo.cuh> in a .cu file).
template <class E, class Net>
struct ppo_device_ops;

// A seed for the policy's sampling streams that never equals the environments' (seed, i) streams.
inline std::uint64_t policy_stream_seed(std::uint64_t seed) { return seed * 0x9E3779B97F4A7C15ull + 0x5851F42D4C957F2Dull; }
inline std::uint64_t shuffle_stream_seed(std::uint64_t seed) { return seed * 0xD1342543DE82EF95ull + 0x2545F4914F6CDD1Dull; }

// Orthogonal-free initialisation in the spirit of torch.nn.Linear: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for
// every weight and bias; the policy rows of the head scaled by 0.01 so the first actions stay near 0; log_std 0.
template <class Net>
std::vector<float> initial_params(std::uint64_t seed) {
  using layers = typename Net::net::layers;
  std::vector<float> p(Net::param_count, 0.0f);
  gmi::rng r(seed, 0xA11CE);
  for (int l = 0; l < layers::count; ++l) {
    const int in = layers::width(l), out = layers::width(l + 1);
    const float bound = 1.0f / std::sqrt(static_cast<float>(in));
    const bool head = l == layers::count - 1;
    for (int o = 0; o < out; ++o) {
      const float s = head && o < Net::act_dim ? 0.01f : 1.0f;
      for (int i = 0; i < in; ++i) p[layers::weight_offset(l) + o * in + i] = s * r.uniform(-bound, bound);
      p[layers::bias_offset(l) + o] = s * r.uniform(-bound, bound);
    }
  }
  return p;
}
}  // namespace detail

template <gmi::env E, class Net, gmi::exec::policy P = exec::host>
class ppo_trainer {
 public:
  using env_type = E;
  using net_type = Net;
  using policy_type = P;
  template <class T>
  using array = std::conditional_t<P::on_device, cuda::device_buffer<T>, std::vector<T>>;
  using memory_space = std::conditional_t<P::on_device, gmi::device_memory, gmi::host_memory>;
  using normalizer_type = nn::running_mean_std<P>;
  using adam_type = nn::adam<P>;
  static constexpr int obs_dim = E::obs_dim, act_dim = E::act_dim, param_count = Net::param_count;
  static constexpr int row = Net::param_count + term_count;  // one gradient row: parameters, then loss terms

  ppo_trainer(int num_envs, std::uint64_t seed, ppo_config config, typename E::params env_params = {}, P policy = {})
      : config_((config.validate(), config)),
        policy_(policy),
        seed_(seed),
        envs_(num_envs, seed, env_params, policy),
        n_(static_cast<std::size_t>(num_envs)),
        total_(static_cast<std::size_t>(config.horizon) * n_),
        minibatch_(std::min<std::size_t>(static_cast<std::size_t>(config.minibatch), total_)),
        minibatches_((total_ + minibatch_ - 1) / minibatch_),
        obs_norm_(obs_dim, nn::normalizer_config{}, policy),
        adam_(nn::adam_config{config.learning_rate, 0.9f, 0.999f, 1e-8f,
                              config.max_grad_norm > 0 ? std::optional<float>(config.max_grad_norm) : std::nullopt},
              Net::param_count, policy) {
    gmi::require(total_ <= 0x7fffffffu, "horizon x num_envs", total_, "< 2^31 samples per iteration");
    params_ = array<float>(Net::param_count);
    current_obs_ = array<float>(n_ * obs_dim);
    obs_ = array<float>(total_ * obs_dim);
    actions_ = array<float>(total_ * act_dim);
    log_probs_ = array<float>(total_);
    values_ = array<float>(total_ + n_);
    rewards_ = array<float>(total_);
    ends_ = array<std::uint8_t>(total_);
    advantages_ = array<float>(total_);
    returns_ = array<float>(total_);
    policy_rng_ = array<std::uint64_t>(n_);
    advantage_stats_ = array<float>(2);
    grads_ = array<float>(row);
    term_log_ = array<float>(static_cast<std::size_t>(config_.epochs) * minibatches_ * term_count);
    const std::vector<float> init = detail::initial_params<Net>(seed);
    if constexpr (P::on_device) {
      device_ = std::make_unique<detail::ppo_device_ops<E, Net>>(*this);
      cuda::copy(params_.span(), host_span<const float>(init.data(), init.size()), policy_.stream);
      policy_rng_.fill_bytes(0, policy_.stream);
      envs_.reset(current_obs_.span(), policy_.stream);
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    } else {
      params_ = init;
      chunk_rows_.assign(((minibatch_ + host_chunk - 1) / host_chunk) * row, 0.0f);
      envs_.reset(host_span<float>(current_obs_.data(), current_obs_.size()));
    }
  }
  ppo_trainer(const ppo_trainer&) = delete;
  ppo_trainer& operator=(const ppo_trainer&) = delete;
  ~ppo_trainer() = default;

  // One iteration: collection, GAE, advantage normalization, epochs x minibatches of Adam steps, observation
  // statistics. Asynchronous on exec::cuda (replays a captured graph after the first iteration).
  void iterate() {
    if constexpr (P::on_device) {
      device_->iterate(*this);
    } else {
      host_iterate();
    }
    ++iteration_;
  }

  // Serving tier: `steps` steps of policy inference + sampling + env step for every environment, nothing stored.
  void serve(int steps) {
    gmi::require(steps >= 1, "serve steps", steps, ">= 1");
    if constexpr (P::on_device) {
      device_->serve(*this, steps);
    } else {
      const auto v = rollout_view();
      const float* p = params_.data();
      exec::for_each(policy_, n_, [&](std::size_t i) { v.serve(i, p, steps); });
    }
  }

  // Waits for the queued work; then losses() and episode statistics are current.
  void synchronize() {
    if constexpr (P::on_device) GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
  }

  // Loss terms of the last iteration (waits for it on exec::cuda).
  [[nodiscard]] ppo_losses losses() {
    std::vector<float> log(term_log_.size());
    if constexpr (P::on_device) {
      cuda::copy(host_span<float>(log.data(), log.size()), term_log_.span(), policy_.stream);
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    } else {
      log = term_log_;
    }
    ppo_losses out;
    const double groups = static_cast<double>(log.size() / term_count);
    for (std::size_t g = 0; g < log.size() / term_count; ++g) {
      out.policy_loss += log[g * term_count + term_policy] / groups;
      out.value_loss += log[g * term_count + term_value] / groups;
      out.entropy += log[g * term_count + term_entropy] / groups;
      out.approx_kl += log[g * term_count + term_kl] / groups;
      out.clip_fraction += log[g * term_count + term_clipped] / groups;
    }
    out.learning_rate = current_learning_rate();
    return out;
  }

  // Finished-episode statistics since the last call (waits on exec::cuda).
  episode_stats episodes() {
    if constexpr (P::on_device) return envs_.read_stats(policy_.stream);
    else return envs_.read_stats();
  }

  [[nodiscard]] const ppo_config& config() const noexcept { return config_; }
  [[nodiscard]] int num_envs() const noexcept { return static_cast<int>(n_); }
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  [[nodiscard]] std::uint64_t iteration() const noexcept { return iteration_; }
  [[nodiscard]] std::uint64_t samples_per_iteration() const noexcept { return total_; }
  [[nodiscard]] std::size_t minibatches() const noexcept { return minibatches_; }
  [[nodiscard]] const P& policy() const noexcept { return policy_; }
  [[nodiscard]] memory_span<float, memory_space> params() noexcept { return {params_.data(), params_.size()}; }
  [[nodiscard]] normalizer_type& obs_normalizer() noexcept { return obs_norm_; }
  [[nodiscard]] adam_type& optimizer() noexcept { return adam_; }
  [[nodiscard]] env_batch<E, P>& envs() noexcept { return envs_; }

  // The view a fused kernel or host loop collects through (valid while *this lives).
  [[nodiscard]] ppo_rollout_view<E, Net> rollout_view() const {
    auto* self = const_cast<ppo_trainer*>(this);
    return {envs_.view(),        obs_norm_.view(),          self->current_obs_.data(), self->obs_.data(),
            self->actions_.data(), self->log_probs_.data(), self->values_.data(),    self->rewards_.data(),
            self->ends_.data(),  self->advantages_.data(),  self->returns_.data(),   self->policy_rng_.data(),
            detail::policy_stream_seed(seed_), static_cast<int>(n_), config_.horizon, config_.gamma, config_.lambda,
            config_.bootstrap_truncation};
  }

  // Minibatch b of epoch e in the update of iteration `it`.
  [[nodiscard]] ppo_minibatch_view<Net> minibatch_view(std::uint64_t it, int epoch, std::size_t b) const {
    const std::uint32_t begin = static_cast<std::uint32_t>(b * minibatch_);
    const std::uint32_t count = static_cast<std::uint32_t>(std::min(minibatch_, total_ - b * minibatch_));
    return {obs_.data(),
            actions_.data(),
            log_probs_.data(),
            values_.data(),
            advantages_.data(),
            returns_.data(),
            advantage_stats_.data(),
            obs_norm_.view(),
            static_cast<std::uint32_t>(total_),
            detail::shuffle_stream_seed(seed_),
            it * static_cast<std::uint64_t>(config_.epochs) + static_cast<std::uint64_t>(epoch),
            begin,
            count,
            config_.clip,
            config_.value_coef,
            config_.entropy_coef,
            config_.value_clip,
            config_.clip_value,
            config_.normalize_advantage};
  }

 private:
  friend struct detail::ppo_device_ops<E, Net>;
  static constexpr std::size_t host_chunk = 64;  // samples per host gradient row: fixed, so sums do not depend on threads

  float current_learning_rate() {
    if constexpr (P::on_device) {
      float lr = 0;
      GMI_CUDA_TRY(cudaMemcpyAsync(&lr, adam_.lr_device(), sizeof lr, cudaMemcpyDeviceToHost, policy_.stream));
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
      return lr;
    } else {
      return adam_.config().lr;
    }
  }

  void host_iterate() {
    const auto rv = rollout_view();
    const float* p = params_.data();
    exec::for_each(policy_, n_, [&](std::size_t i) { rv.collect(i, p); });
    if (config_.normalize_advantage) {
      double sum = 0, sumsq = 0;
      for (float a : advantages_) sum += a;
      const double mean = sum / static_cast<double>(total_);
      for (float a : advantages_) sumsq += (a - mean) * (a - mean);
      const double std = total_ > 1 ? std::sqrt(sumsq / static_cast<double>(total_ - 1)) : 0.0;
      advantage_stats_[0] = static_cast<float>(mean);
      advantage_stats_[1] = static_cast<float>(1.0 / (std + 1e-8));
    }
    for (int e = 0; e < config_.epochs; ++e) {
      for (std::size_t b = 0; b < minibatches_; ++b) {
        const auto mb = minibatch_view(iteration_, e, b);
        const std::size_t chunks = (mb.count + host_chunk - 1) / host_chunk;
        std::fill(chunk_rows_.begin(), chunk_rows_.begin() + chunks * row, 0.0f);
        float* rows = chunk_rows_.data();
        float* params = params_.data();
        exec::for_each(policy_, chunks, [&](std::size_t c) {
          float* r = rows + c * row;
          const std::uint32_t end = static_cast<std::uint32_t>(std::min<std::size_t>((c + 1) * host_chunk, mb.count));
          for (std::uint32_t k = static_cast<std::uint32_t>(c * host_chunk); k < end; ++k) {
            mb.accumulate(k, true, params, r, r + Net::param_count, nn::accumulate_plain{});
          }
        });
        std::fill(grads_.begin(), grads_.end(), 0.0f);
        for (std::size_t c = 0; c < chunks; ++c)
          for (int q = 0; q < row; ++q) grads_[q] += rows[c * row + q];
        adam_.step(host_span<float>(params_.data(), Net::param_count),
                   host_span<const float>(grads_.data(), Net::param_count));
        const float* terms = grads_.data() + Net::param_count;
        std::copy(terms, terms + term_count, term_log_.begin() + (e * minibatches_ + b) * term_count);
        if (config_.schedule == lr_schedule::adaptive_kl) {
          adam_.set_lr(next_learning_rate(config_, adam_.config().lr, terms[term_kl]));
        }
      }
    }
    obs_norm_.update(host_span<const float>(obs_.data(), obs_.size()));
  }

  ppo_config config_;
  P policy_;
  std::uint64_t seed_;
  env_batch<E, P> envs_;
  std::size_t n_, total_, minibatch_, minibatches_;
  normalizer_type obs_norm_;
  adam_type adam_;
  array<float> params_, current_obs_, obs_, actions_, log_probs_, values_, rewards_, advantages_, returns_;
  array<std::uint8_t> ends_;
  array<std::uint64_t> policy_rng_;
  array<float> advantage_stats_, grads_, term_log_;
  std::vector<float> chunk_rows_;  // host path: one gradient row per chunk of a minibatch
  // Only the CUDA instantiation holds device state (its type is complete only with ppo.cuh).
  std::conditional_t<P::on_device, std::unique_ptr<detail::ppo_device_ops<E, Net>>, char> device_{};
  std::uint64_t iteration_ = 0;
};

}  // namespace gmi::rl

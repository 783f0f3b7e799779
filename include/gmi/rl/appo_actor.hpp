#pragma once
// The acting half of asynchronous PPO: N environments stepped with the weights snapshot of some learner version
// (the behaviour policy), writing rollouts of appo_records for a learner (appo.hpp). On exec::host here; on
// exec::cuda include <gmi/rl/appo.cuh> (one thread per environment, weights in shared memory).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/core/span.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/rl/appo_record.hpp>
#include <gmi/rl/env_batch.hpp>

namespace gmi::rl {

// One environment's rollout column, for a host loop or a device thread.
template <gmi::env E, class Net>
struct appo_actor_view {
  static constexpr int obs_dim = E::obs_dim, act_dim = E::act_dim;
  static_assert(Net::obs_dim == E::obs_dim && Net::act_dim == E::act_dim,
                "gmi::rl::appo_actor: the network's obs_dim/act_dim must equal the environment's");
  static_assert(gmi::network_fits_env<Net, E>(), "gmi::rl::appo_actor: the network's policy must fit the actions");
  using record = appo_record<obs_dim, act_dim>;
  using layout = appo_snapshot_layout<Net>;

  env_batch_view<E> env;
  float* current_obs;                 // [num_envs][obs_dim], raw
  std::uint64_t* policy_rng_blocks;   // [num_envs]
  float* episode_returns;             // [num_envs]: the running episode's return so far
  record* records;                    // [horizon + 1][num_envs]
  std::uint64_t policy_seed;
  int num_envs;
  int horizon;
  float gamma;
  bool bootstrap_truncation;
  std::uint32_t version;

  // snapshot: the weights in the appo_snapshot_layout (params first); may be a shared-memory copy of them.
  GMI_HD void collect(std::size_t i, const float* snapshot) const {
    const nn::normalizer_view obs_norm = layout::obs_norm(snapshot), value_norm = layout::value_norm(snapshot);
    float o[obs_dim], on[obs_dim], a[act_dim], mu[Net::dist_dim], final_obs[obs_dim];
    for (int k = 0; k < obs_dim; ++k) o[k] = current_obs[i * obs_dim + k];
    gmi::rng r(policy_seed, i, policy_rng_blocks[i]);
    const std::size_t n = static_cast<std::size_t>(num_envs);
    float running = episode_returns[i], finished = 0.0f;
    std::uint32_t episodes = 0;
    for (int t = 0; t < horizon; ++t) {
      record& rec = records[static_cast<std::size_t>(t) * n + i];
      obs_norm.normalize(o, on);
      float v, logp;
      Net::forward(snapshot, on, mu, &v);
      Net::sample(snapshot, mu, r, a, &logp);
      for (int k = 0; k < obs_dim; ++k) rec.obs[k] = o[k];
      for (int k = 0; k < act_dim; ++k) rec.action[k] = a[k];
      rec.log_prob = logp;
      rec.version = version;
      const step_result s = env.step_one(i, a, o, final_obs);
      float reward = s.reward;
      running += s.reward;
      if (s.terminated || s.truncated) {
        finished += running;
        running = 0.0f;
        ++episodes;
      }
      if (s.truncated && bootstrap_truncation) {
        float fn[obs_dim], fmu[Net::dist_dim], fv;
        obs_norm.normalize(final_obs, fn);
        Net::forward(snapshot, fn, fmu, &fv);
        reward += gamma * value_norm.denormalize(0, fv);
      }
      rec.reward = reward;
      rec.end = (s.terminated || s.truncated) ? 1u : 0u;
    }
    record& last = records[static_cast<std::size_t>(horizon) * n + i];
    for (int k = 0; k < obs_dim; ++k) last.obs[k] = o[k];
    for (int k = 0; k < act_dim; ++k) last.action[k] = 0.0f;
    last.log_prob = 0.0f;
    last.reward = finished;
    last.end = episodes;
    episode_returns[i] = running;
    last.version = version;
    for (int k = 0; k < obs_dim; ++k) current_obs[i * obs_dim + k] = o[k];
    policy_rng_blocks[i] = r.block();
  }
};

namespace detail {
template <class E, class Net>
struct appo_actor_device_ops;  // defined in appo.cuh
inline std::uint64_t actor_stream_seed(std::uint64_t seed) { return seed * 0xA24BAED4963EE407ull + 0x9FB21C651E98DF25ull; }
}  // namespace detail

template <gmi::env E, class Net, gmi::exec::policy P = exec::host>
class appo_actor {
 public:
  using view_type = appo_actor_view<E, Net>;
  using record = typename view_type::record;
  using layout = appo_snapshot_layout<Net>;
  template <class T>
  using array = std::conditional_t<P::on_device, cuda::device_buffer<T>, std::vector<T>>;
  using memory_space = std::conditional_t<P::on_device, gmi::device_memory, gmi::host_memory>;

  // horizon steps per rollout; gamma and bootstrap_truncation as the learner's ppo_config.
  appo_actor(int num_envs, std::uint64_t seed, int horizon, float gamma, bool bootstrap_truncation,
             typename E::params env_params = {}, P policy = {})
      : policy_(policy),
        seed_(seed),
        envs_(num_envs, seed, env_params, policy),
        n_(static_cast<std::size_t>(num_envs)),
        horizon_(horizon),
        gamma_(gamma),
        bootstrap_truncation_(bootstrap_truncation) {
    gmi::require(horizon >= 1 && horizon <= 4096, "appo actor horizon", horizon, "1..4096");
    snapshot_ = array<float>(layout::size);
    current_obs_ = array<float>(n_ * E::obs_dim);
    policy_rng_ = array<std::uint64_t>(n_);
    episode_returns_ = array<float>(n_);
    records_ = array<record>(rollout_records());
    if constexpr (P::on_device) {
      snapshot_.fill_bytes(0, policy_.stream);
      policy_rng_.fill_bytes(0, policy_.stream);
      episode_returns_.fill_bytes(0, policy_.stream);
      envs_.reset(current_obs_.span(), policy_.stream);
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    } else {
      envs_.reset(host_span<float>(current_obs_.data(), current_obs_.size()));
    }
  }
  appo_actor(const appo_actor&) = delete;
  appo_actor& operator=(const appo_actor&) = delete;

  // The weights the next collect() acts with (layout appo_snapshot_layout<Net>): write them here, then set_version.
  [[nodiscard]] memory_span<float, memory_space> snapshot() noexcept { return {snapshot_.data(), snapshot_.size()}; }
  void set_version(std::uint64_t v) {
    gmi::require(v <= 0xffffffffull, "appo actor weights version", v, "< 2^32");
    version_ = v;
  }
  [[nodiscard]] std::uint64_t version() const noexcept { return version_; }

  // One rollout: horizon steps of every environment into records() (asynchronous on exec::cuda).
  void collect() {
    if constexpr (P::on_device) {
      detail::appo_actor_device_ops<E, Net>::collect(view(), snapshot_.data(), policy_.stream);
    } else {
      const view_type v = view();
      const float* s = snapshot_.data();
      exec::for_each(policy_, n_, [&](std::size_t i) { v.collect(i, s); });
    }
  }

  // The last rollout, [horizon + 1][num_envs] records.
  [[nodiscard]] memory_span<const record, memory_space> records() const noexcept { return {records_.data(), records_.size()}; }
  [[nodiscard]] std::size_t rollout_records() const noexcept { return (static_cast<std::size_t>(horizon_) + 1) * n_; }
  [[nodiscard]] int num_envs() const noexcept { return static_cast<int>(n_); }
  [[nodiscard]] int horizon() const noexcept { return horizon_; }
  [[nodiscard]] const P& policy() const noexcept { return policy_; }
  [[nodiscard]] env_batch<E, P>& envs() noexcept { return envs_; }

  // Finished-episode statistics since the last call (waits on exec::cuda).
  episode_stats episodes() {
    if constexpr (P::on_device) return envs_.read_stats(policy_.stream);
    else return envs_.read_stats();
  }

  [[nodiscard]] view_type view() const {
    auto* self = const_cast<appo_actor*>(this);
    return {envs_.view(),          self->current_obs_.data(), self->policy_rng_.data(), self->episode_returns_.data(),
            self->records_.data(),
            detail::actor_stream_seed(seed_), static_cast<int>(n_), horizon_, gamma_, bootstrap_truncation_,
            static_cast<std::uint32_t>(version_)};
  }

 private:
  P policy_;
  std::uint64_t seed_;
  env_batch<E, P> envs_;
  std::size_t n_;
  int horizon_;
  float gamma_;
  bool bootstrap_truncation_;
  std::uint64_t version_ = 0;
  array<float> snapshot_, current_obs_, episode_returns_;
  array<std::uint64_t> policy_rng_;
  array<record> records_;
};

}  // namespace gmi::rl

#pragma once
// The batched rollout for wide networks: each step of every environment as a few launches over the whole batch
// instead of one thread running the whole policy for its env. Per step: one kernel normalizes the observations
// (and stores the raw ones in the rollout), the policy MLP runs as cuBLASLt products with bias epilogues
// (nn::lt_mlp, fp32/TF32/bf16 by network_config), one kernel samples every action (and stores action, log-prob
// and value), then the env step of the whole batch (batched_dynamics: matrix products for the linear proxies,
// one kernel otherwise). collect() fills a ppo_rollout_view as ppo_rollout_view::collect does (GAE included);
// step() serves. All of it is capturable in a CUDA graph after the first call (plans made eagerly). With
// network_config::kernels wholenet the normalize and forward are one kernel (nn/wholenet.cuh), in serving with the
// sampling, a linear proxy's pre-step and its U B_sub^T too (batched_wholenet.cuh, lq_pre_row, lq_bu_tile).

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/nn/lt_mlp.cuh>
#include <gmi/nn/network_config.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/nn/wholenet.cuh>
#include <gmi/rl/batched_dynamics.cuh>
#include <gmi/rl/batched_wholenet.cuh>
#include <gmi/rl/env_batch.cuh>
#include <gmi/rl/gae.hpp>
#include <gmi/rl/ppo_steps.hpp>
#include <gmi/rl/reward_scaling.hpp>
#include <gmi/rl/wide_rule.hpp>

namespace gmi::rl {

namespace detail {

// inputs[i][k] = normalize(obs[i][k]); raw_store (if given) = obs (the rollout keeps raw observations).
__global__ static void batch_normalize_kernel(const float* __restrict__ obs, std::size_t total, int dim,
                                              nn::normalizer_view norm, float* __restrict__ inputs,
                                              float* __restrict__ raw_store) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += stride) {
    const float x = obs[k];
    inputs[k] = norm.normalize(static_cast<int>(k % dim), x);
    if (raw_store) raw_store[k] = x;
  }
}

// One thread per env: the sample from its outputs row, as ppo_rollout_view::collect draws it (same stream).
template <class Net>
__global__ static void batch_sample_kernel(batch_sample_args a) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= a.n) return;
  batch_sample_row<Net>(a, i, a.outputs + i * (Net::dist_dim + 1));
}

// After the env step (row `at` of the rollout): ends = terminated or truncated; the reward scaled (reward_scale,
// ppo_config::reward_scaling); a truncated step's reward takes gamma V(final obs) when final_outputs is given (the
// forward of the normalized final observations).
template <class Net>
__global__ static void batch_ends_kernel(std::size_t n, const std::uint8_t* __restrict__ terminated,
                                         const std::uint8_t* __restrict__ truncated, const float* final_outputs,
                                         nn::normalizer_view value_norm, bool normalize_value, float gamma,
                                         float* __restrict__ rewards, std::uint8_t* __restrict__ ends,
                                         reward_scaling_view reward_scale, std::size_t at) {
  constexpr int D = Net::dist_dim;
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  rewards[i] = reward_scale.scale(i, at + i, rewards[i], terminated[i] || truncated[i]);
  if (truncated[i] && final_outputs) {
    const float v = final_outputs[i * (D + 1) + D];
    rewards[i] += gamma * (normalize_value ? value_norm.denormalize(0, v) : v);
  }
  ends[i] = (terminated[i] || truncated[i]) ? 1 : 0;
}

// values[i] = the value head of outputs row i, in return units.
template <class Net>
__global__ static void batch_values_kernel(std::size_t n, const float* __restrict__ outputs,
                                           nn::normalizer_view value_norm, bool normalize_value,
                                           float* __restrict__ values) {
  constexpr int D = Net::dist_dim;
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = outputs[i * (D + 1) + D];
  values[i] = normalize_value ? value_norm.denormalize(0, v) : v;
}

template <class E, class Net>
__global__ static void batch_gae_kernel(ppo_rollout_view<E, Net> v) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= v.num_envs) return;
  gae_column(i, v.num_envs, v.horizon, v.gamma, v.lambda, v.rewards, v.ends, v.values, v.advantages, v.returns);
}

inline unsigned batch_blocks(std::size_t n, unsigned block) {
  return static_cast<unsigned>((n + static_cast<std::size_t>(block) - 1) / static_cast<std::size_t>(block));
}

// The serving step's end for a linear proxy: each row's sample (whole_sample_tail), then the env's pre-product
// work from the action just drawn (lq_pre_row) and the tile's rows of U B_sub^T (lq_bu_tile), so the step launches
// neither the pre-step kernel nor that product. Called by every thread of the block (the kernel's contract).
template <class Net, class E>
struct whole_sample_pre_tail {
  batch_sample_args a;
  env_batch_view<E> env;
  lq_pre_out pre;
  __device__ void operator()(const float* o, int ld, int row0, int rows) const {
    const int r = static_cast<int>(threadIdx.x);
    if (r < rows) {
      const std::size_t i = static_cast<std::size_t>(row0 + r);
      batch_sample_row<Net>(a, i, o + r * ld);
      lq_pre_row<E>(env, i, a.actions + i * Net::act_dim, pre);  // this thread's own stores, read back
    }
    __syncthreads();  // the tile's action columns stored, visible to the whole block
    lq_bu_tile<E>(pre, row0, rows);
  }
};

}  // namespace detail

// cfg with "auto" layer kernels settled by rl/wide_rule.hpp's rule for Net's network (an actor-critic with ::net)
// over `rows` rows on the current device; explicit kernels kept.
template <class Net>
nn::network_config with_rule_kernels(const nn::network_config& cfg, kernels_use use, std::size_t rows) {
  using mlp = typename Net::net;
  const bool fits = cfg.kernels == nn::layer_kernels::automatic && nn::wholenet_fits<mlp>(cfg.precision);
  return resolve_layer_kernels(cfg, use, mlp::max_width, rows, fits);
}

// The rollout's network runs only forwards: no backward chain kernel (network_config::backward) to build.
inline nn::network_config forward_only(nn::network_config cfg) {
  cfg.backward = nn::backward_kernels::cublaslt;
  return cfg;
}

// The per-step pieces over n environments of E with policy Net (an actor-critic whose ::net is an mlp).
template <gmi::env E, class Net>
class batched_rollout {
  static_assert(gmi::network_fits_env<Net, E>(), "gmi::rl::batched_rollout: the network's policy must fit the actions");
  static_assert(Net::obs_dim == E::obs_dim && Net::act_dim == E::act_dim,
                "gmi::rl::batched_rollout: the network's obs_dim/act_dim must equal the environment's");
  using mlp = typename Net::net;
  static constexpr int O = E::obs_dim, A = E::act_dim, D = Net::dist_dim;

 public:
  // env_params: the env batch's params (their table bound: the linear proxies' products read it).
  batched_rollout(std::size_t num_envs, const typename E::params& env_params, const nn::network_config& cfg,
                  exec::cuda policy)
      : n_(num_envs), policy_(policy), forward_(policy, 2 * num_envs, forward_only(cfg)),
        dynamics_(num_envs, cfg.precision, table_of(env_params, policy.stream)),
        inputs_(2 * n_ * O), outputs_(2 * n_ * (D + 1)), actions_(n_ * A), rewards_(n_), final_obs_(n_ * O),
        terminated_(n_), truncated_(n_), words_(n_) {
    gmi::require(num_envs >= 1, "batched_rollout num_envs", num_envs, ">= 1");
    dynamics_.choose(env_params, policy.sm_count);
    final_obs_.fill_bytes(0, policy_.stream);
    inputs_.fill_bytes(0, policy_.stream);
  }

  // "lt_tf32+gemm_substeps" and the like: the forward's path, then the env step's.
  [[nodiscard]] std::string path() const {
    return std::string(forward_.path()) + "+" + dynamics_.path();
  }
  [[nodiscard]] std::size_t num_envs() const noexcept { return n_; }
  [[nodiscard]] const float* actions() const noexcept { return actions_.data(); }
  [[nodiscard]] const float* rewards() const noexcept { return rewards_.data(); }
  void set_stream(cudaStream_t s) noexcept {
    policy_.stream = s;
    forward_.set_stream(s);
  }

  // Serving: one step of every environment (current_obs raw [n][obs_dim], read then overwritten with the next).
  // weights_changed false: params are those of the previous step (the whole-network kernel keeps their packing).
  void step(const env_batch_view<E>& env, const float* params, float* current_obs, std::uint64_t* policy_blocks,
            std::uint64_t policy_seed, nn::normalizer_view obs_norm, float* log_probs = nullptr,
            bool weights_changed = true) {
    const detail::batch_sample_args sa{outputs_.data(), params, actions_.data(), log_probs, nullptr, policy_blocks,
                                       nullptr, 0, false, policy_seed, {}, false, n_};
    const batch_step_out out{rewards_.data(), terminated_.data(), truncated_.data(), current_obs, nullptr};
    if (auto* whole = forward_.whole()) {  // normalize, forward and sampling in one kernel
      if (weights_changed) whole->pack(params);
      if constexpr (gemm_dynamics<E>) {  // and a linear proxy's pre-step and U B_sub^T too
        whole->run(params, n_, obs_in(current_obs, nullptr, obs_norm, nullptr),
                   detail::whole_sample_pre_tail<Net, E>{sa, env, dynamics_.pre_out(rewards_.data())});
        dynamics_.step_after_bu(env, out, policy_.stream);
        return;
      }
      whole->run(params, n_, obs_in(current_obs, nullptr, obs_norm, nullptr), detail::whole_sample_tail<Net>{sa});
    } else {
      normalize(current_obs, obs_norm, inputs_.data(), nullptr);
      forward_.forward_raw(params, inputs_.data(), outputs_.data(), nullptr, n_);
      sample(sa);
    }
    dynamics_.step(env, actions_.data(), out, policy_.stream);
  }

  // PPO collection: horizon steps into v's arrays (raw observations, actions, log-probs, values, rewards with the
  // truncation bootstrap, ends), the last values, then GAE per env, as ppo_rollout_view::collect.
  void collect(const ppo_rollout_view<E, Net>& v, const float* params) {
    gmi::require(static_cast<std::size_t>(v.num_envs) == n_, "batched_rollout num_envs", v.num_envs,
                 "the " + std::to_string(n_) + " built for");
    const std::size_t n = n_;
    auto* whole = forward_.whole();  // kernels wholenet: normalize and forward as one kernel (weights packed once)
    if (whole) {
      whole->pack(params);
      whole->run(params, n, obs_in(v.current_obs, nullptr, v.obs_norm, v.obs), outputs_out());
    } else {
      normalize(v.current_obs, v.obs_norm, inputs_.data(), v.obs);
      forward_.forward_raw(params, inputs_.data(), outputs_.data(), nullptr, n);
    }
    for (int t = 0; t < v.horizon; ++t) {
      const std::size_t at = static_cast<std::size_t>(t) * n;
      sample({outputs_.data(), params, v.actions + at * A, v.log_probs + at, v.values + at, v.policy_rng_blocks,
              words_.data(), t, t == v.horizon - 1, v.policy_seed, v.value_norm, v.normalize_value, n});
      float* final_obs = v.bootstrap_truncation ? final_obs_.data() : nullptr;
      dynamics_.step(v.env, v.actions + at * A,
                     {v.rewards + at, terminated_.data(), truncated_.data(), v.current_obs, final_obs}, policy_.stream);
      // One forward of 2n rows: the next step's observations (after the last step: the last values) and every
      // final observation (its value bootstraps the truncated ones), instead of two products of n rows.
      float* raw_next = t + 1 < v.horizon ? v.obs + (at + n) * O : nullptr;
      if (whole) {
        whole->run(params, final_obs ? 2 * n : n, obs_in(v.current_obs, final_obs, v.obs_norm, raw_next), outputs_out());
      } else {
        normalize(v.current_obs, v.obs_norm, inputs_.data(), raw_next);
        if (final_obs) normalize(final_obs, v.obs_norm, inputs_.data() + n * O, nullptr);
        forward_.forward_raw(params, inputs_.data(), outputs_.data(), nullptr, final_obs ? 2 * n : n);
      }
      const float* final_outputs = final_obs ? outputs_.data() + n * (D + 1) : nullptr;
      detail::batch_ends_kernel<Net><<<grid(), threads(), 0, policy_.stream>>>(
          n, terminated_.data(), truncated_.data(), final_outputs, v.value_norm, v.normalize_value, v.gamma,
          v.rewards + at, v.ends + at, v.reward_scale, at);
      GMI_CUDA_TRY(cudaGetLastError());
    }
    last_values(v);
    detail::batch_gae_kernel<E, Net><<<grid(), threads(), 0, policy_.stream>>>(v);
    GMI_CUDA_TRY(cudaGetLastError());
  }

  // Multiply-adds per env step: the forward's and the env step's products.
  static constexpr double forward_macs() { return static_cast<double>(mlp::layers::forward_macs); }
  static constexpr double env_macs() { return batched_dynamics<E>::macs_per_env(); }

 private:
  // Launch shape of the one-thread-per-env kernels.
  [[nodiscard]] unsigned threads() const { return detail::batch_env_block(n_); }
  [[nodiscard]] unsigned grid() const { return detail::batch_blocks(n_, threads()); }

  static std::vector<float> table_of(const typename E::params& p, cudaStream_t stream) {
    if constexpr (gemm_dynamics<E>) {
      gmi::require(p.table != nullptr, "batched_rollout env table", "null", "the env batch's bound table");
      GMI_CUDA_TRY(cudaStreamSynchronize(stream));  // the env batch copies its table on its stream
      std::vector<float> t(static_cast<std::size_t>(E::table_r + A));
      GMI_CUDA_TRY(cudaMemcpy(t.data(), p.table, t.size() * sizeof(float), cudaMemcpyDefault));
      return t;
    } else {
      return {};
    }
  }

  // The whole-network kernel's ends: rows [0, n) from a, rows [n, 2n) from b; the outputs into outputs_.
  [[nodiscard]] detail::whole_obs_in obs_in(const float* a, const float* b, nn::normalizer_view norm,
                                            float* raw_store) const {
    return {a, b, static_cast<int>(n_), O, norm, raw_store};
  }
  [[nodiscard]] nn::detail::wholenet_rows_out outputs_out() { return {outputs_.data(), D + 1}; }

  void normalize(const float* obs, nn::normalizer_view norm, float* inputs, float* raw_store) {
    const std::size_t total = n_ * O;
    detail::batch_normalize_kernel<<<nn::detail::lt_blocks(total, 256), 256, 0, policy_.stream>>>(obs, total, O, norm,
                                                                                                  inputs, raw_store);
    GMI_CUDA_TRY(cudaGetLastError());
  }
  void sample(const detail::batch_sample_args& a) {
    detail::batch_sample_kernel<Net><<<grid(), threads(), 0, policy_.stream>>>(a);
    GMI_CUDA_TRY(cudaGetLastError());
  }
  void last_values(const ppo_rollout_view<E, Net>& v) {
    detail::batch_values_kernel<Net><<<grid(), threads(), 0, policy_.stream>>>(
        n_, outputs_.data(), v.value_norm, v.normalize_value, v.values + static_cast<std::size_t>(v.horizon) * n_);
    GMI_CUDA_TRY(cudaGetLastError());
  }

  std::size_t n_;
  exec::cuda policy_;
  nn::lt_mlp<mlp> forward_;
  batched_dynamics<E> dynamics_;
  cuda::device_buffer<float> inputs_, outputs_, actions_, rewards_, final_obs_;
  cuda::device_buffer<std::uint8_t> terminated_, truncated_;
  cuda::device_buffer<std::uint64_t> words_;
};

}  // namespace gmi::rl

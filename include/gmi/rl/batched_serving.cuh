#pragma once
// The serving tier for networks too wide for one thread per environment: each step is batched_rollout::step over
// the whole batch (normalize, the policy as cuBLASLt products, TF32 unless the network_config says otherwise, one
// sampling kernel, the env step of all envs: matrix products for the linear proxies; with network_config::kernels
// wholenet the normalize, forward, sampling and a linear proxy's pre-step and U B_sub^T are one kernel; kernels
// "auto", the default: rl/wide_rule.hpp's default_layer_kernels for serving). A window of steps is captured once
// as a CUDA graph and replayed, so the CPU issues one launch per window.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/graph.hpp>
#include <gmi/exec/cuda.cuh>
#include <gmi/nn/mlp.cuh>
#include <gmi/nn/network_config.hpp>
#include <gmi/nn/normalizer.cuh>
#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/batched_rollout.cuh>
#include <gmi/rl/env_batch.cuh>
#include <gmi/rl/ppo.hpp>

namespace gmi::rl {

// Serving runs TF32 products unless told otherwise (inference only: the policy trained elsewhere).
inline nn::network_config serving_network_config() { return {.precision = nn::precision::tf32}; }

// Path: the forward's layers; only nn::lt_path (the cuBLASLt layers of batched_rollout).
template <gmi::env E, class Net, class Path = nn::lt_path>
class batched_server {
  static_assert(gmi::network_fits_env<Net, E>(), "gmi::rl::batched_server: the network's policy must fit the actions");
  static_assert(std::is_same_v<Path, nn::lt_path>,
                "gmi::rl::batched_server: the batched step runs the cuBLASLt layers (nn::lt_path) only");

 public:
  batched_server(int num_envs, std::uint64_t seed, exec::cuda policy, int graph_steps = 20,
                 const nn::network_config& net_cfg = serving_network_config())
      : policy_(policy),
        n_(static_cast<std::size_t>(num_envs)),
        seed_(seed),
        graph_steps_(graph_steps),
        envs_(num_envs, seed, typename E::params{}, policy),
        norm_(E::obs_dim, nn::normalizer_config{}, policy),
        rollout_(n_, envs_.view().params, with_rule_kernels<Net>(net_cfg, kernels_use::serving, n_), policy),
        params_(Net::param_count),
        obs_(n_ * E::obs_dim),
        log_probs_(n_),
        policy_blocks_(n_),
        path_(rollout_.path()) {
    gmi::require(graph_steps >= 1, "graph_steps", graph_steps, ">= 1");
    const std::vector<float> init = detail::initial_params<Net>(seed);
    cuda::copy(params_.span(), host_span<const float>(init.data(), init.size()), policy_.stream);
    policy_blocks_.fill_bytes(0, policy_.stream);
    envs_.reset(obs_.span(), policy_.stream);
    GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
  }
  batched_server(const batched_server&) = delete;
  batched_server& operator=(const batched_server&) = delete;

  // One step of every environment, enqueued eagerly. weights_changed false: the weights are those of the previous
  // step (kernels wholenet then skips its weight packing).
  void step(bool weights_changed = true) {
    rollout_.step(envs_.view(), params_.data(), obs_.data(), policy_blocks_.data(), detail::policy_stream_seed(seed_),
                  norm_.view(), log_probs_.data(), weights_changed);
  }

  // At least `steps` steps (whole graph windows), asynchronous.
  void serve(int steps) {
    if (!graph_) {
      step();  // eager first: cuBLASLt plans and module loading stay out of the capture
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
      graph_ = cuda::instantiate(cuda::capture(policy_.stream, [&](cudaStream_t) {
        for (int k = 0; k < graph_steps_; ++k) step(k == 0);  // weights packed once per window
      }));
    }
    for (int done = 0; done < steps; done += graph_steps_) graph_.launch(policy_.stream);
  }
  [[nodiscard]] int graph_steps() const noexcept { return graph_steps_; }
  void synchronize() { GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream)); }
  [[nodiscard]] int num_envs() const noexcept { return static_cast<int>(n_); }
  // The step's paths: the forward's, then the env step's ("lt_tf32+gemm_substeps", "lt_bf16+thread_per_env", ...).
  [[nodiscard]] const char* path() const noexcept { return path_.c_str(); }

  // The last step's actions ([n][act_dim]) and log-probabilities ([n]), the observations the next step acts on
  // (raw, [n][obs_dim]) and the weights (Net::param_count): device pointers, for tests and inspection.
  [[nodiscard]] const float* actions() const noexcept { return rollout_.actions(); }
  [[nodiscard]] const float* log_probs() const noexcept { return log_probs_.data(); }
  [[nodiscard]] const float* rewards() const noexcept { return rollout_.rewards(); }  // the last step's ([n])
  [[nodiscard]] float* observations() noexcept { return obs_.data(); }
  [[nodiscard]] float* params() noexcept { return params_.data(); }
  [[nodiscard]] std::uint64_t policy_seed() const noexcept { return detail::policy_stream_seed(seed_); }
  [[nodiscard]] nn::normalizer_view obs_norm() const { return norm_.view(); }

 private:
  exec::cuda policy_;
  std::size_t n_;
  std::uint64_t seed_;
  int graph_steps_;
  env_batch<E, exec::cuda> envs_;
  nn::running_mean_std<exec::cuda> norm_;
  batched_rollout<E, Net> rollout_;
  cuda::device_buffer<float> params_, obs_, log_probs_;
  cuda::device_buffer<std::uint64_t> policy_blocks_;
  std::string path_;
  cuda::graph_exec graph_;
};

}  // namespace gmi::rl

#pragma once
// The serving tier for networks too wide for one thread per environment: each step is the network's forward
// for the whole batch through batch_mlp (cuBLASLt layers, TF32 unless the network_config says otherwise), then
// one kernel that samples every action,
// steps every environment and writes the next normalized observations. A window of steps is captured once as a
// CUDA graph and replayed, so the CPU issues one launch per window.

#include <cuda_runtime_api.h>

#include <cstdint>
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
#include <gmi/rl/env_batch.cuh>
#include <gmi/rl/ppo.hpp>

namespace gmi::rl {

namespace detail {
template <class E, class Net>
struct sample_and_step_fn {
  env_batch_view<E> env;
  const float* params;
  const float* outputs;  // [n][dist_dim + 1]: the policy outputs, then value
  float* inputs;         // [n][obs_dim]: normalized observations for the next forward
  nn::normalizer_view norm;
  std::uint64_t policy_seed;
  std::uint64_t* policy_blocks;
  GMI_HD void operator()(std::size_t i) const {
    constexpr int A = E::act_dim, D = Net::dist_dim, O = E::obs_dim;
    float mu[D], a[A], o[O], logp;
    for (int j = 0; j < D; ++j) mu[j] = outputs[i * (D + 1) + j];
    gmi::rng r(policy_seed, i, policy_blocks[i]);
    Net::sample(params, mu, r, a, &logp);
    policy_blocks[i] = r.block();
    env.step_one(i, a, o, nullptr);
    norm.normalize(o, inputs + i * O);
  }
};
}  // namespace detail

// Serving runs TF32 products unless told otherwise (inference only: the policy trained elsewhere).
inline nn::network_config serving_network_config() { return {.precision = nn::precision::tf32}; }

template <gmi::env E, class Net, class Path = nn::lt_path>
class batched_server {
  static_assert(gmi::network_fits_env<Net, E>(), "gmi::rl::batched_server: the network's policy must fit the actions");

 public:
  using forward_type = nn::batch_mlp<typename Net::net, exec::cuda, Path>;
  static constexpr const char* path_name = forward_type::path_name;

  batched_server(int num_envs, std::uint64_t seed, exec::cuda policy, int graph_steps = 20,
                 const nn::network_config& net_cfg = serving_network_config())
      : policy_(policy),
        n_(static_cast<std::size_t>(num_envs)),
        seed_(seed),
        graph_steps_(graph_steps),
        envs_(num_envs, seed, typename E::params{}, policy),
        norm_(E::obs_dim, nn::normalizer_config{}, policy),
        forward_(make_forward(policy, n_, net_cfg)),
        params_(Net::param_count),
        inputs_(n_ * E::obs_dim),
        outputs_(n_ * (Net::dist_dim + 1)),
        policy_blocks_(n_) {
    gmi::require(graph_steps >= 1, "graph_steps", graph_steps, ">= 1");
    const std::vector<float> init = detail::initial_params<Net>(seed);
    cuda::copy(params_.span(), host_span<const float>(init.data(), init.size()), policy_.stream);
    policy_blocks_.fill_bytes(0, policy_.stream);
    cuda::device_buffer<float> raw(n_ * E::obs_dim);
    envs_.reset(raw.span(), policy_.stream);
    norm_.normalize(device_span<const float>(raw.data(), raw.size()), inputs_.span());
    GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
  }
  ~batched_server() {
    if (graph_) cudaGraphExecDestroy(graph_);
  }
  batched_server(const batched_server&) = delete;
  batched_server& operator=(const batched_server&) = delete;

  // One step of every environment, enqueued eagerly.
  void step() {
    forward_.forward(device_span<const float>(params_.data(), Net::net::param_count),
                     device_span<const float>(inputs_.data(), inputs_.size()), outputs_.span());
    // 32-thread blocks: one environment's step is long (a 211-wide state), so spread 4096 envs over 128 SMs
    // instead of 16 (ncu: 287 us per step with 256-thread blocks at 1.7% SM throughput).
    exec::for_each(exec::cuda{.stream = policy_.stream, .block_size = 32}, n_,
                   detail::sample_and_step_fn<E, Net>{envs_.view(), params_.data(), outputs_.data(), inputs_.data(),
                                                      norm_.view(), detail::policy_stream_seed(seed_),
                                                      policy_blocks_.data()});
  }

  // At least `steps` steps (whole graph windows), asynchronous.
  void serve(int steps) {
    if (!graph_) {
      step();  // eager first: cuBLAS and module loading stay out of the capture
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
      cudaGraph_t g = nullptr;
      GMI_CUDA_TRY(cudaStreamBeginCapture(policy_.stream, cudaStreamCaptureModeThreadLocal));
      for (int k = 0; k < graph_steps_; ++k) step();
      GMI_CUDA_TRY(cudaStreamEndCapture(policy_.stream, &g));
      const cudaError_t e = cudaGraphInstantiate(&graph_, g, 0);
      cudaGraphDestroy(g);
      GMI_CUDA_TRY(e);
    }
    for (int done = 0; done < steps; done += graph_steps_) GMI_CUDA_TRY(cudaGraphLaunch(graph_, policy_.stream));
  }
  [[nodiscard]] int graph_steps() const noexcept { return graph_steps_; }
  void synchronize() { GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream)); }
  [[nodiscard]] int num_envs() const noexcept { return static_cast<int>(n_); }
  // The forward path in use ("lt_tf32", "fused_fp32", "gemm_tf32", ...).
  [[nodiscard]] const char* path() const noexcept { return forward_.path(); }

 private:
  static forward_type make_forward(exec::cuda policy, std::size_t n, const nn::network_config& cfg) {
    if constexpr (std::is_constructible_v<forward_type, exec::cuda, std::size_t, const nn::network_config&>)
      return forward_type(policy, n, cfg);
    else
      return forward_type(policy, n);
  }

  exec::cuda policy_;
  std::size_t n_;
  std::uint64_t seed_;
  int graph_steps_;
  env_batch<E, exec::cuda> envs_;
  nn::running_mean_std<exec::cuda> norm_;
  forward_type forward_;
  cuda::device_buffer<float> params_, inputs_, outputs_;
  cuda::device_buffer<std::uint64_t> policy_blocks_;
  cudaGraphExec_t graph_ = nullptr;
};

}  // namespace gmi::rl

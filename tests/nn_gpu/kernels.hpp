#pragma once
// Host entry points into the nn CUDA paths, for the doctest file (compiled by the host compiler).

#include <cstdint>
#include <string>
#include <vector>

#include <gmi/nn/actor_critic.hpp>
#include <gmi/nn/adam.hpp>
#include <gmi/nn/mlp.hpp>
#include <gmi/nn/normalizer.hpp>

namespace nn_gpu {

using small_net = gmi::nn::mlp<gmi::nn::layers<4, 32, 32, 1>, gmi::nn::elu>;                      // fused path
using ant_net = gmi::nn::mlp<gmi::nn::layers<60, 256, 128, 64, 8>, gmi::nn::elu>;                 // lt (auto)
using wide_net = gmi::nn::mlp<gmi::nn::layers<211, 512, 512, 512, 256, 20>, gmi::nn::elu>;        // gemm
using tanh_net = gmi::nn::mlp<gmi::nn::layers<6, 48, 40, 5>, gmi::nn::tanh_act, gmi::nn::tanh_act>; // fused
using cartpole_ac = gmi::nn::gaussian_actor_critic<4, 1, gmi::nn::layers<32, 32>, gmi::nn::elu>;

enum class run_kind { small_auto, small_gemm_fp32, tanh_auto, ant_auto, wide_tf32, wide_fp32 };

struct mlp_run {
  std::string path;
  std::vector<float> out, out_inference, d_params, d_x;
};

// forward with an activation record, forward for inference, then backward with d_x, all on the GPU.
mlp_run run_mlp(run_kind kind, const std::vector<float>& params, const std::vector<float>& x,
                const std::vector<float>& d_out);

// Runs steps of adam<exec::cuda> (lr switched to lr2 after the first step); returns params, writes the last norm.
std::vector<float> run_adam(const gmi::nn::adam_config& cfg, float lr2, std::vector<float> params,
                            const std::vector<std::vector<float>>& grads, double& last_norm);

struct normalizer_run {
  std::vector<double> stats_sequential, stats_merged, stats_gathered;
  std::vector<float> normalized;
};
// Updates with batch a then b; separately updates two instances and merges; merges the records of a and b laid
// end to end into a fresh instance (merge_in_order); normalizes probe. Every
// normalizer forgets under `window` (nn::normalizer_config::window; 0: every sample).
normalizer_run run_normalizer(int dim, const std::vector<float>& a, const std::vector<float>& b,
                              const std::vector<float>& probe, double window = 0);

struct per_sample_run {
  std::vector<float> actions, logp, values, d_params;
};
// One device thread per environment calls cartpole_ac::act (rng stream = env index), then its backward with
// d_mu = mu, d_value = 1, d_log_std = 1, accumulated with atomics.
per_sample_run run_actor_critic_per_sample(const std::vector<float>& params, const std::vector<float>& obs,
                                           std::uint64_t seed);

}  // namespace nn_gpu

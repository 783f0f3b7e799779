#pragma once
// Host entry points into the cuBLASLt network path (lt_mlp.cuh), for the doctest file.

#include <string>
#include <vector>

#include <gmi/nn/activation.hpp>
#include <gmi/nn/mlp.hpp>
#include <gmi/nn/network_config.hpp>

namespace nn_gpu {

namespace nn = gmi::nn;
// The paper's three policies (bodies with ELU, a linear output) and odd sizes that exercise unaligned leading
// dimensions, the ReLU epilogue and an output activation.
using shadow_hand_net = nn::mlp<nn::layers<211, 512, 512, 512, 256, 20>, nn::elu>;
using humanoid_net = nn::mlp<nn::layers<108, 200, 400, 100, 21>, nn::elu>;
using ant_lt_net = nn::mlp<nn::layers<60, 256, 128, 64, 8>, nn::elu>;
using odd_tanh_net = nn::mlp<nn::layers<13, 37, 129, 5>, nn::tanh_act, nn::tanh_act>;
using odd_relu_net = nn::mlp<nn::layers<17, 130, 33, 3>, nn::relu>;
using cartpole_body_net = nn::mlp<nn::layers<4, 32, 32, 2>, nn::elu>;

enum class lt_net { shadow_hand, humanoid, ant, odd_tanh, odd_relu, cartpole_body };

struct lt_run {
  std::string path, backward_path;  // backward_path: lt_mlp's (its input-gradient chain), else empty
  std::vector<float> out, out_inference, d_params, d_x;
  // The same forward (with record) and backward captured in a CUDA graph and replayed, and the plan counts
  // before and after the capture (no new plans: the replay reuses the eager call's).
  std::vector<float> graph_out, graph_d_params, graph_d_x;
  std::size_t plans_before_graph = 0, plans_after_graph = 0;
  // lt_mlp only: the outputs of a forward_raw without an output buffer (read from the record, outputs_in), the
  // weight gradients of a backward_raw reusing that forward's bf16 weights, and the bias gradients the column-sum
  // kernels formed (for want of a BGRADB algorithm).
  std::vector<float> out_from_record, d_params_weights_ready;
  std::size_t bias_sums = 0;
  // Weight gradients formed as chunked products (network_config::weight_grad_chunks), over all backward calls.
  std::size_t split_products = 0;
};

// nn::detail::lt_column_sum (the bias gradient's fallback) of a [rows][w] matrix, run twice: both results.
std::vector<std::vector<float>> column_sum_twice(const std::vector<float>& m, std::size_t rows, int w);

// nn::detail::lt_dz_partials<elu> (the backward's dz pass with the bias gradient's first stage) of g and y
// ([rows][w]), with the fp32 and bf16 stores, then nn::detail::lt_column_partial over the stored fp32 dz: dz,
// dz16 (as floats), the fused pass's partials and the separate pass's.
struct dz_pass_run {
  std::vector<float> dz, dz16, partials, stored_partials;
};
dz_pass_run dz_pass_elu(const std::vector<float>& g, const std::vector<float>& y, std::size_t rows, int w);

// A SAC critic at Ant's sizes (ReLU, 256 wide) for the gradient-offset test.
using sac_critic_net = nn::mlp<nn::layers<35, 256, 256, 1>, nn::relu>;

// lt_mlp<sac_critic_net>'s forward and backward (fp32) of n samples with d_params written at float `offset` of a
// larger buffer (the device SAC trainer's critic-2 gradient slot), twice: d_params of both runs (the same bits
// expected) and the bias gradients the column-sum kernels formed.
struct offset_run {
  std::vector<float> d_params, d_params_again;
  std::size_t bias_sums = 0;
};
offset_run critic_backward_at(std::size_t offset, const std::vector<float>& params, const std::vector<float>& x,
                              const std::vector<float>& d_out);

// forward with a record, forward for inference, backward with d_x, then the captured replay. use_auto: through
// batch_mlp<..., auto_path> with cfg (the wiring), else lt_mlp directly.
lt_run run_lt(lt_net net, const nn::network_config& cfg, bool use_auto, const std::vector<float>& params,
              const std::vector<float>& x, const std::vector<float>& d_out);

}  // namespace nn_gpu

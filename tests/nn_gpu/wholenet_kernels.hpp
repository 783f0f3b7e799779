#pragma once
// Host entry points into the whole-network forward (wholenet.cuh), for the doctest file.

#include <cstddef>
#include <string>
#include <vector>

#include <gmi/nn/network_config.hpp>

#include "lt_kernels.hpp"

namespace nn_gpu {

struct wholenet_run {
  std::string path, lt_path;  // wholenet's, and lt_mlp's with kernels wholenet
  bool weights_in_smem = false;
  std::size_t smem_bytes = 0;
  std::vector<float> out;        // nn::wholenet::forward
  std::vector<float> out_lt;     // lt_mlp::forward_raw without a record (kernels wholenet)
  std::vector<float> out_graph;  // pack + run captured in a CUDA graph, replayed into zeroed outputs
  std::vector<float> out_again;  // run() again without pack(): the packing is kept
  // lt_mlp's backward after a run() with the fp32 record and (bf16) the bf16 input record: reading the kept bf16
  // inputs (inputs16_ready) and converting the fp32 record itself; kept16: whether a bf16 record was given.
  std::vector<float> d_params_kept16, d_params_converted;
  bool kept16 = false;
};

// The forward of x ([n][in]) through the whole-network kernel at precision p (tf32 or bf16).
wholenet_run run_wholenet(lt_net net, gmi::nn::precision p, const std::vector<float>& params,
                          const std::vector<float>& x);

// Constructs a wholenet of a network whose 32-row activation tile cannot fit a block (16-4096-4) at p: the
// config_error's message, or "" if it was accepted.
std::string wholenet_too_wide_error(gmi::nn::precision p);

}  // namespace nn_gpu

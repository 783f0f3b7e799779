#pragma once
// Host entry points into the own tensor-core products (fused_gemm.cuh) and the one-kernel Adam (adam.cuh), for
// the doctest file.

#include <cstddef>
#include <vector>

#include <gmi/nn/adam.hpp>

namespace nn_gpu {

enum class mma_type { tf32, bf16 };
enum class mma_epi { plain, bias_elu, times_elu_grad };

struct mma_case {
  mma_type type = mma_type::tf32;
  mma_epi epi = mma_epi::plain;
  int M = 0, N = 0, K = 0, lda = 0, ldb = 0;
};

struct mma_result {
  std::vector<float> d, d2, d16;  // d16: the bf16 copy widened to float
  bool vectorized = false;        // whether the launch took the 16-byte copies
};

// D = epi(A B^T) through nn::mma_gemm with a: [M][lda], b: [N][ldb] (read as bf16 where type is bf16: the values
// are converted on upload), bias: [N], y: [M][N].
mma_result run_mma_gemm(const mma_case& c, const std::vector<float>& a, const std::vector<float>& b,
                        const std::vector<float>& bias, const std::vector<float>& y);

struct adam_run_result {
  std::vector<float> params;  // after the steps
  double last_norm = 0;
  int launches_per_step = 0;
  bool one_kernel = false;
  std::vector<float> graph_params;  // the same steps captured in one CUDA graph and replayed, from the same start
};

// `grads.size() / params.size()` steps of adam<exec::cuda> on params with the given gradients in turn;
// one_kernel false asks for the three-kernel path.
adam_run_result run_adam_steps(const gmi::nn::adam_config& cfg, bool one_kernel, const std::vector<float>& params,
                               const std::vector<std::vector<float>>& grads);

}  // namespace nn_gpu

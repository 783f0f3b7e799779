#pragma once
// The PPO minibatch gradient for wide networks as batched matrix products (gmi::nn::lt_mlp, cuBLASLt): gather the
// minibatch's normalized observations into one matrix, forward the whole minibatch with an activation record,
// form each sample's loss gradient with respect to the network's outputs (mu, value) in one kernel that also
// keeps its log_std gradient and loss terms, backward the whole minibatch (weight and bias gradients summed over
// the samples by the products), then sum the log_std gradients and loss terms per column in sample order. The
// result is one gradient row, in the layout of the other paths. Every launch is capturable.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/nn/lt_mlp.cuh>
#include <gmi/nn/network_config.hpp>
#include <gmi/rl/ppo_steps.hpp>

namespace gmi::rl::detail {

// Minibatch sample k's normalized observation into x[k].
template <class Net>
__global__ static void ppo_lt_gather_kernel(ppo_minibatch_view<Net> mb, const std::uint64_t* round_base, int epoch,
                                            int epochs, float* x) {
  mb.shuffle_round = *round_base * static_cast<std::uint64_t>(epochs) + static_cast<std::uint64_t>(epoch);
  const std::uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= mb.count) return;
  const std::uint32_t j = mb.sample(k);
  mb.obs_norm.normalize(mb.obs + static_cast<std::size_t>(j) * Net::obs_dim, x + static_cast<std::size_t>(k) * Net::obs_dim);
}

// Writes a value (the per-sample loss terms go to their own row of `extra`, summed later in order).
struct ppo_lt_store {
  GMI_HD void operator()(float* where, float value) const { *where = value; }
};

// From the outputs y[k] = (policy outputs, value): d_out[k] = their gradients of sample k's share of the
// minibatch-mean loss, and extra[k] = (the gradient of the distribution's own parameters (log_std; none for a
// categorical), the sample's scaled loss terms).
template <class Net>
__global__ static void ppo_lt_loss_kernel(ppo_minibatch_view<Net> mb, const float* params,
                                          const std::uint64_t* round_base, int epoch, int epochs, const float* y,
                                          float* d_out, float* extra) {
  constexpr int D = Net::dist_dim, P = Net::dist_param_count, E = P + term_count;
  mb.shuffle_round = *round_base * static_cast<std::uint64_t>(epochs) + static_cast<std::uint64_t>(epoch);
  const std::uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= mb.count) return;
  const std::uint32_t j = mb.sample(k);
  const float scale = 1.0f / static_cast<float>(mb.count);
  const float* yk = y + static_cast<std::size_t>(k) * (D + 1);
  float out[D], d_o[D], d_dist[P > 0 ? P : 1], d_value;
  for (int a = 0; a < D; ++a) out[a] = yk[a];
  const ppo_sample_terms t = mb.loss_gradient(j, out, yk[D], params, scale, d_o, d_dist, &d_value);
  float* dk = d_out + static_cast<std::size_t>(k) * (D + 1);
  for (int a = 0; a < D; ++a) dk[a] = d_o[a];
  dk[D] = d_value;
  float* ek = extra + static_cast<std::size_t>(k) * E;
  for (int a = 0; a < P; ++a) ek[a] = d_dist[a];
  ppo_lt_store store;
  ppo_minibatch_view<Net>::add_terms(t, scale, ek + P, store);
}

// out[c] = sum over k < count of extra[k][c], in sample order (one thread per column: few columns, each a
// chain of independent loads).
__global__ static void ppo_lt_sum_extra_kernel(const float* extra, std::uint32_t count, int columns, float* out) {
  const int c = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (c >= columns) return;
  float s = 0.0f;
  for (std::uint32_t k = 0; k < count; ++k) s += extra[static_cast<std::size_t>(k) * columns + c];
  out[c] = s;
}

template <class Net>
class lt_gradient {
  using mlp = typename Net::net;
  static constexpr int D = Net::dist_dim, E = Net::dist_param_count + term_count;

 public:
  lt_gradient(std::size_t max_count, cudaStream_t s, const nn::network_config& cfg)
      : lt_(exec::cuda{.stream = s}, max_count, cfg),
        x_(max_count * Net::obs_dim),
        acts_(max_count * mlp::activation_size),
        y_(max_count * (D + 1)),
        d_out_(max_count * (D + 1)),
        extra_(max_count * E) {}

  [[nodiscard]] const char* path() const noexcept { return lt_.path(); }

  // row (Net::param_count + term_count floats) = the minibatch's gradient and loss terms.
  void enqueue(const ppo_minibatch_view<Net>& mb, const float* params, const std::uint64_t* round_base, int epoch,
               int epochs, float* row, cudaStream_t s) {
    lt_.set_stream(s);
    const std::size_t n = mb.count;
    const unsigned blocks = static_cast<unsigned>((n + 127) / 128);
    if (n == 0) {
      GMI_CUDA_TRY(cudaMemsetAsync(row, 0, sizeof(float) * (Net::param_count + term_count), s));
      return;
    }
    ppo_lt_gather_kernel<Net><<<blocks, 128, 0, s>>>(mb, round_base, epoch, epochs, x_.data());
    GMI_CUDA_TRY(cudaGetLastError());
    lt_.forward_raw(params, x_.data(), y_.data(), acts_.data(), n);
    ppo_lt_loss_kernel<Net><<<blocks, 128, 0, s>>>(mb, params, round_base, epoch, epochs, y_.data(), d_out_.data(),
                                                   extra_.data());
    GMI_CUDA_TRY(cudaGetLastError());
    lt_.backward_raw(params, x_.data(), acts_.data(), d_out_.data(), row, nullptr, n);
    ppo_lt_sum_extra_kernel<<<1, 128, 0, s>>>(extra_.data(), mb.count, E, row + mlp::param_count);
    GMI_CUDA_TRY(cudaGetLastError());
  }

 private:
  nn::lt_mlp<mlp> lt_;
  cuda::device_buffer<float> x_, acts_, y_, d_out_, extra_;
};

}  // namespace gmi::rl::detail

#pragma once
// The PPO minibatch gradient for wide networks as batched matrix products (gmi::nn::lt_mlp, cuBLASLt): gather the
// minibatch's normalized observations into one matrix, forward the whole minibatch with an activation record,
// form each sample's loss gradient with respect to the network's outputs (mu, value) in one kernel that also
// keeps its log_std gradient and loss terms, backward the whole minibatch (weight and bias gradients summed over
// the samples by the products), then sum the log_std gradients and loss terms per column (one block per column,
// a fixed tree). The result is one gradient row, in the layout of the other paths. Every launch is capturable.
// With network_config::kernels wholenet (TF32, bf16) the gather, forward and loss are one kernel (nn/wholenet.cuh)
// after one weight-packing launch; the backward stays cuBLASLt.

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

// Writes a value (the per-sample loss terms go to their own column of `extra`, summed later).
struct ppo_lt_store {
  GMI_HD void operator()(float* where, float value) const { *where = value; }
};

// From the outputs y[k] = (policy outputs, value): d_out[k] = their gradients of sample k's share of the
// minibatch-mean loss, and column c of extra (extra[c * ld + k], so that both this kernel's stores and the column
// sums' loads are coalesced) = (the gradient of the distribution's own parameters (log_std; none for a
// categorical), the sample's scaled loss terms)[c].
// Sample k (rollout sample j) of mb from its outputs yk: the per-sample part of ppo_lt_loss_kernel.
template <class Net>
__device__ inline void ppo_lt_loss_row(const ppo_minibatch_view<Net>& mb, const float* params, std::uint32_t k,
                                       std::uint32_t j, const float* yk, float* d_out, float* extra, std::size_t ld) {
  constexpr int D = Net::dist_dim, P = Net::dist_param_count;
  const float scale = 1.0f / static_cast<float>(mb.count);
  float out[D], d_o[D], d_dist[P > 0 ? P : 1], d_value, terms[term_count];
  for (int a = 0; a < D; ++a) out[a] = yk[a];
  const ppo_sample_terms t = mb.loss_gradient(j, out, yk[D], params, scale, d_o, d_dist, &d_value);
  float* dk = d_out + static_cast<std::size_t>(k) * (D + 1);
  for (int a = 0; a < D; ++a) dk[a] = d_o[a];
  dk[D] = d_value;
  for (int a = 0; a < P; ++a) extra[static_cast<std::size_t>(a) * ld + k] = d_dist[a];
  ppo_lt_store store;
  ppo_minibatch_view<Net>::add_terms(t, scale, terms, store);
  for (int a = 0; a < term_count; ++a) extra[static_cast<std::size_t>(P + a) * ld + k] = terms[a];
}

template <class Net>
__global__ static void ppo_lt_loss_kernel(ppo_minibatch_view<Net> mb, const float* params,
                                          const std::uint64_t* round_base, int epoch, int epochs, const float* y,
                                          float* d_out, float* extra, std::size_t ld) {
  mb.shuffle_round = *round_base * static_cast<std::uint64_t>(epochs) + static_cast<std::uint64_t>(epoch);
  const std::uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= mb.count) return;
  ppo_lt_loss_row<Net>(mb, params, k, mb.sample(k), y + static_cast<std::size_t>(k) * (Net::dist_dim + 1), d_out,
                       extra, ld);
}

// With kernels wholenet the gather, the forward (with its record) and the loss are one kernel (nn/wholenet.cuh):
// its input is minibatch sample k's normalized observation, its tail each sample's loss gradient from the tile's
// outputs in shared memory (the same per-sample code as ppo_lt_loss_kernel).
template <class Net>
struct ppo_lt_gather_in {
  ppo_minibatch_view<Net> mb;
  const std::uint64_t* round_base;
  int epoch, epochs;
  __device__ int row(int k) const {
    ppo_minibatch_view<Net> m = mb;
    m.shuffle_round = *round_base * static_cast<std::uint64_t>(epochs) + static_cast<std::uint64_t>(epoch);
    return static_cast<int>(m.sample(static_cast<std::uint32_t>(k)));
  }
  __device__ float operator()(int j, int c) const {
    return mb.obs_norm.normalize(c, mb.obs[static_cast<std::size_t>(j) * Net::obs_dim + c]);
  }
};
template <class Net>
struct ppo_lt_loss_tail {
  ppo_minibatch_view<Net> mb;
  const float* params;
  const std::uint64_t* round_base;
  int epoch, epochs;
  float* d_out;
  float* extra;
  std::size_t ld;
  __device__ void operator()(const float* o, int ldo, int row0, int rows) const {
    const int r = static_cast<int>(threadIdx.x);
    if (r >= rows) return;
    ppo_minibatch_view<Net> m = mb;
    m.shuffle_round = *round_base * static_cast<std::uint64_t>(epochs) + static_cast<std::uint64_t>(epoch);
    const auto k = static_cast<std::uint32_t>(row0 + r);
    ppo_lt_loss_row<Net>(m, params, k, m.sample(k), o + r * ldo, d_out, extra, ld);
  }
};

inline constexpr int ppo_lt_sum_block = 256;

// Block c: out[c] = the sum over k < count of extra[c * ld + k]: thread t sums k = t, t + 256, ... in order, then
// a fixed tree over the block (the same sums on every run). Columns from term_at on (the loss terms) also go to
// term_log[c - term_at] where given. One thread walking all 8192 samples of a column made this the slowest launch
// of a minibatch for the narrower wide networks.
__global__ static void ppo_lt_sum_extra_kernel(const float* extra, std::size_t ld, std::uint32_t count, float* out,
                                               int term_at, float* term_log) {
  __shared__ float part[ppo_lt_sum_block];
  const float* col = extra + static_cast<std::size_t>(blockIdx.x) * ld;
  float s = 0.0f;
  for (std::uint32_t k = threadIdx.x; k < count; k += ppo_lt_sum_block) s += col[k];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = ppo_lt_sum_block / 2; w > 0; w /= 2) {
    if (static_cast<int>(threadIdx.x) < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const int c = static_cast<int>(blockIdx.x);
    out[c] = part[0];
    if (term_log && c >= term_at) term_log[c - term_at] = part[0];
  }
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
        d_out_(max_count * (D + 1)),
        extra_(max_count * E),
        ld_(max_count) {}

  [[nodiscard]] const char* path() const noexcept { return lt_.path(); }
  // Bias gradients summed by kernels because cuBLASLt had no BGRADB algorithm (nn::lt_mlp::bias_sums).
  [[nodiscard]] std::size_t bias_sums() const noexcept { return lt_.bias_sums(); }

  // row (Net::param_count + term_count floats) = the minibatch's gradient and loss terms; the loss terms also to
  // term_log where given (so that the caller needs no copy of the row).
  void enqueue(const ppo_minibatch_view<Net>& mb, const float* params, const std::uint64_t* round_base, int epoch,
               int epochs, float* row, cudaStream_t s, float* term_log = nullptr) {
    lt_.set_stream(s);
    const std::size_t n = mb.count;
    const unsigned blocks = static_cast<unsigned>((n + 127) / 128);
    if (n == 0) {
      GMI_CUDA_TRY(cudaMemsetAsync(row, 0, sizeof(float) * (Net::param_count + term_count), s));
      if (term_log) GMI_CUDA_TRY(cudaMemsetAsync(term_log, 0, sizeof(float) * term_count, s));
      return;
    }
    if (auto* whole = lt_.whole()) {  // gather, forward with its record (and X) and the loss in one kernel
      whole->pack(params);
      whole->run(params, n, ppo_lt_gather_in<Net>{mb, round_base, epoch, epochs},
                 ppo_lt_loss_tail<Net>{mb, params, round_base, epoch, epochs, d_out_.data(), extra_.data(), ld_},
                 acts_.data(), x_.data(), lt_.record16_for(n));
    } else {
      ppo_lt_gather_kernel<Net><<<blocks, 128, 0, s>>>(mb, round_base, epoch, epochs, x_.data());
      GMI_CUDA_TRY(cudaGetLastError());
      // The outputs stay in the activation record (no copy into y_), read there by the loss kernel.
      lt_.forward_raw(params, x_.data(), nullptr, acts_.data(), n);
      ppo_lt_loss_kernel<Net><<<blocks, 128, 0, s>>>(mb, params, round_base, epoch, epochs,
                                                     nn::lt_mlp<mlp>::outputs_in(acts_.data(), n), d_out_.data(),
                                                     extra_.data(), ld_);
      GMI_CUDA_TRY(cudaGetLastError());
    }
    // The backward reuses the forward's bf16 weights where the cuBLASLt forward made them, and its bf16 layer
    // inputs (either forward keeps them at bf16): no conversion of the inputs.
    lt_.backward_raw(params, x_.data(), acts_.data(), d_out_.data(), row, nullptr, n, lt_.whole() == nullptr, true);
    ppo_lt_sum_extra_kernel<<<E, ppo_lt_sum_block, 0, s>>>(extra_.data(), ld_, mb.count, row + mlp::param_count,
                                                          Net::dist_param_count, term_log);
    GMI_CUDA_TRY(cudaGetLastError());
  }

 private:
  nn::lt_mlp<mlp> lt_;
  cuda::device_buffer<float> x_, acts_, d_out_, extra_;  // extra_: [E][ld_], column-major
  std::size_t ld_;
};

}  // namespace gmi::rl::detail

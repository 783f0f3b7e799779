#pragma once
// The PPO minibatch gradient a tile of samples per block, for networks too wide for the warp kernel
// (ppo_warp_gradient.cuh keeps each lane's weight-row gradients in registers, which stops at 160 of them: a
// 64-64 body over 24 or more inputs does not fit, and the one-thread-per-sample kernel such networks fell back to
// took ~0.2 ms for an 8192-sample step). Block b takes minibatch samples [b T, (b + 1) T): it stages the weights
// (where they fit; else it reads them from global memory) and the tile's normalized observations in shared memory and runs every layer as a small matrix product over the
// tile (block_product: each thread a few samples x a few outputs, each sum over its inputs in order), then the
// loss per sample, then backward layer by layer: the weight gradient dW = dZ^T H over the tile's samples (in
// sample order), the bias gradient, and dH = dZ W for the layer below. rows[b] = the tile's sum of gradients and
// loss terms; the caller adds the rows in order. The same sums on every run.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include <gmi/nn/activation.hpp>
#include <gmi/rl/ppo_steps.hpp>

namespace gmi::rl::detail {

template <class Net>
struct tile_gradient {
  using mlp = typename Net::net;
  using shape = typename mlp::layers;
  using act = typename mlp::activation;
  static constexpr int count = shape::count;  // linear layers; the last is the head (mu rows, then the value)
  static constexpr int head = count - 1;
  static constexpr int dist_dim = Net::dist_dim;            // the head's policy outputs, before the value
  static constexpr int dist_params = Net::dist_param_count;  // log_std's gradient per sample (none: categorical)
  static constexpr int obs_dim = Net::obs_dim;
  static constexpr int block = 256;
  static constexpr int row = Net::param_count + term_count;
  static constexpr std::size_t shared_limit = 200 * 1024;

  // Odd strides: threads that read rows o, o + 1, ... of a matrix at one column hit distinct banks.
  static constexpr int stride(int width) { return width | 1; }
  // Weights in shared memory: per layer W[out][stride(in)] then b[out].
  static constexpr int weights_before(int l) {
    int off = 0;
    for (int k = 0; k < l; ++k) off += shape::width(k + 1) * stride(shape::width(k)) + shape::width(k + 1);
    return off;
  }
  // The block's shared memory with `t` samples a tile, with or without the weights.
  static constexpr std::size_t bytes_of(int t, bool with_weights) {
    int f = with_weights ? weights_before(count) : 0;
    for (int k = 0; k <= count; ++k) f += t * stride(shape::width(k));
    f += 2 * t * stride(shape::max_width) + t * dist_params + t * term_count + t;
    return sizeof(float) * static_cast<std::size_t>(f);
  }
  // Weights in shared memory where they fit beside a 32-sample tile; else (Isaac-Gym-size networks) every block
  // reads them from global memory, the forward pass from a transposed copy (consecutive outputs, consecutive
  // addresses), with the largest tile of 32, 16 or 8 samples that fits.
  static constexpr bool shared_weights = bytes_of(32, true) <= shared_limit;
  static constexpr int tile = shared_weights || bytes_of(32, false) <= shared_limit ? 32
                              : bytes_of(16, false) <= shared_limit               ? 16
                                                                                  : 8;
  static constexpr int weight_floats = shared_weights ? weights_before(count) : 0;
  static constexpr int smem_weight(int l) { return weights_before(l); }
  static constexpr int smem_bias(int l) { return smem_weight(l) + shape::width(l + 1) * stride(shape::width(l)); }
  // Activations H_l [tile][stride(width(l))] for l = 0 (the normalized observations) .. count (the head's outputs).
  static constexpr int smem_h(int l) {
    int off = weight_floats;
    for (int k = 0; k < l; ++k) off += tile * stride(shape::width(k));
    return off;
  }
  static constexpr int dz_stride = stride(shape::max_width);
  static constexpr int smem_dz(int buffer) { return smem_h(count + 1) + buffer * tile * dz_stride; }
  static constexpr int smem_log_std = smem_dz(2);                        // [tile][dist_params]
  static constexpr int smem_terms = smem_log_std + tile * dist_params;   // [tile][term_count]
  static constexpr int smem_index = smem_terms + tile * term_count;      // [tile] rollout sample of each
  static constexpr int smem_floats = smem_index + tile;
  static constexpr std::size_t smem_bytes = sizeof(float) * static_cast<std::size_t>(smem_floats);
  static constexpr bool fits = count >= 2 && smem_bytes <= shared_limit &&
                               std::is_same_v<typename mlp::output_activation, nn::identity>;
};

// wt = every layer's weight matrix transposed (W[o][i] -> wt[i][o] at the layer's offset), what the tile kernel's
// forward pass reads where the weights do not fit in shared memory.
template <class Net>
__global__ static void ppo_transpose_weights_kernel(const float* params, float* wt) {
  using shape = typename Net::net::layers;
  const int q = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (q >= shape::param_count) return;
  int l = 0;
  while (q >= shape::weight_offset(l + 1)) ++l;
  if (q >= shape::bias_offset(l)) return;
  const int I = shape::width(l), O = shape::width(l + 1), r = q - shape::weight_offset(l);
  wt[shape::weight_offset(l) + (r % I) * O + r / I] = params[q];
}

// C(m, n) = init(m, n) + sum over k in [0, K) in order of a(m, k) b(n, k), for m < M, n < N, handed to
// store(m, n, value). Each thread takes RM x RN entries m = mi + r tm, n = ni + c tn: consecutive threads take
// consecutive n, so reads of b at consecutive n hit distinct banks when its stride is odd.
template <int M, int N, int K, class A, class B, class Init, class Store>
__device__ inline void block_product(A a, B b, Init init, Store store) {
  constexpr int RM = M >= 64 ? 4 : M >= 16 ? 2 : 1;
  constexpr int RN = N >= 64 ? 4 : N >= 16 ? 2 : 1;
  constexpr int tm = (M + RM - 1) / RM, tn = (N + RN - 1) / RN;
  for (int q = static_cast<int>(threadIdx.x); q < tm * tn; q += static_cast<int>(blockDim.x)) {
    const int mi = q / tn, ni = q % tn;
    int ms[RM], ns[RN];
#pragma unroll
    for (int r = 0; r < RM; ++r) ms[r] = mi + r * tm < M ? mi + r * tm : M - 1;
#pragma unroll
    for (int c = 0; c < RN; ++c) ns[c] = ni + c * tn < N ? ni + c * tn : N - 1;
    float acc[RM][RN];
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int c = 0; c < RN; ++c) acc[r][c] = init(ms[r], ns[c]);
#pragma unroll 4
    for (int k = 0; k < K; ++k) {
      float av[RM], bv[RN];
#pragma unroll
      for (int r = 0; r < RM; ++r) av[r] = a(ms[r], k);
#pragma unroll
      for (int c = 0; c < RN; ++c) bv[c] = b(ns[c], k);
#pragma unroll
      for (int r = 0; r < RM; ++r)
#pragma unroll
        for (int c = 0; c < RN; ++c) acc[r][c] = __fmaf_rn(av[r], bv[c], acc[r][c]);
    }
#pragma unroll
    for (int r = 0; r < RM; ++r)
#pragma unroll
      for (int c = 0; c < RN; ++c)
        if (mi + r * tm < M && ni + c * tn < N) store(mi + r * tm, ni + c * tn, acc[r][c]);
  }
}

// Hidden layers and the head, L = 0 .. count - 1: H_{L+1} = act(H_L W_L^T + b_L) (the head without act). Weights
// from shared memory, or from wt (transposed) and params.
template <class Net, int L>
__device__ inline void tile_forward(float* smem, const float* params, const float* wt) {
  using G = tile_gradient<Net>;
  constexpr int I = G::shape::width(L), O = G::shape::width(L + 1);
  constexpr int hs = G::stride(I), os = G::stride(O), ws = G::stride(I);
  const float* h = smem + G::smem_h(L);
  float* out = smem + G::smem_h(L + 1);
  auto a = [&](int s, int i) { return h[s * hs + i]; };
  auto store = [&](int s, int o, float v) { out[s * os + o] = L < G::head ? G::act::f(v) : v; };
  if constexpr (G::shared_weights) {
    const float* w = smem + G::smem_weight(L);
    const float* bias = smem + G::smem_bias(L);
    block_product<G::tile, O, I>(a, [&](int o, int i) { return w[o * ws + i]; }, [&](int, int o) { return bias[o]; },
                                 store);
  } else {
    const float* t = wt + G::shape::weight_offset(L);
    const float* bias = params + G::shape::bias_offset(L);
    block_product<G::tile, O, I>(a, [&](int o, int i) { return t[i * O + o]; }, [&](int, int o) { return bias[o]; },
                                 store);
  }
  __syncthreads();
  if constexpr (L + 1 < G::count) tile_forward<Net, L + 1>(smem, params, wt);
}

// Layer L's gradients from dZ_L (dz buffer `cur`) into the block's row; then, below the head's input, dZ_{L-1} =
// (dZ_L W_L) * act'(H_L) into the other buffer, and on down.
template <class Net, int L>
__device__ inline void tile_backward(float* smem, const float* params, float* out, int cur) {
  using G = tile_gradient<Net>;
  constexpr int I = G::shape::width(L), O = G::shape::width(L + 1);
  constexpr int hs = G::stride(I), ws = G::shared_weights ? G::stride(I) : I, ds = G::dz_stride;
  const float* h = smem + G::smem_h(L);
  const float* w = G::shared_weights ? smem + G::smem_weight(L) : params + G::shape::weight_offset(L);
  const float* dz = smem + G::smem_dz(cur);
  // dW[o][i] = sum over the tile's samples in order of dZ[s][o] H[s][i]
  block_product<O, I, G::tile>([&](int o, int s) { return dz[s * ds + o]; }, [&](int i, int s) { return h[s * hs + i]; },
                               [](int, int) { return 0.0f; },
                               [&](int o, int i, float v) { out[G::shape::weight_offset(L) + o * I + i] = v; });
  for (int o = static_cast<int>(threadIdx.x); o < O; o += static_cast<int>(blockDim.x)) {
    float sum = 0.0f;
    for (int s = 0; s < G::tile; ++s) sum += dz[s * ds + o];
    out[G::shape::bias_offset(L) + o] = sum;
  }
  if constexpr (L > 0) {
    float* below = smem + G::smem_dz(1 - cur);
    block_product<G::tile, I, O>([&](int s, int o) { return dz[s * ds + o]; }, [&](int i, int o) { return w[o * ws + i]; },
                                 [](int, int) { return 0.0f; },
                                 [&](int s, int i, float v) { below[s * ds + i] = v * G::act::grad_from_output(h[s * hs + i]); });
    __syncthreads();
    tile_backward<Net, L - 1>(smem, params, out, 1 - cur);
  }
}

template <class Net>
__global__ static void __launch_bounds__(tile_gradient<Net>::block)
    ppo_tile_gradient_kernel(ppo_minibatch_view<Net> mb, const float* params, const float* wt, float* rows,
                             const std::uint64_t* iteration, int epoch, int epochs) {
  using G = tile_gradient<Net>;
  constexpr int A = G::dist_params, D = G::dist_dim, T = G::tile;
  extern __shared__ float4 shared4[];  // float4: the base is 16-byte aligned
  float* smem = reinterpret_cast<float*>(shared4);
  const int tid = static_cast<int>(threadIdx.x);
  if constexpr (G::shared_weights) {
#pragma unroll
    for (int l = 0; l < G::count; ++l) {  // stage the weights with odd row strides
      const int I = G::shape::width(l), O = G::shape::width(l + 1), S = G::stride(I);
      for (int q = tid; q < O * I; q += G::block) smem[G::smem_weight(l) + (q / I) * S + q % I] = params[G::shape::weight_offset(l) + q];
      for (int q = tid; q < O; q += G::block) smem[G::smem_bias(l) + q] = params[G::shape::bias_offset(l) + q];
    }
  }
  mb.shuffle_round = *iteration * static_cast<std::uint64_t>(epochs) + static_cast<std::uint64_t>(epoch);
  const std::uint32_t first = static_cast<std::uint32_t>(blockIdx.x) * T;
  auto* index = reinterpret_cast<std::uint32_t*>(smem + G::smem_index);
  if (tid < T) index[tid] = mb.sample(first + static_cast<std::uint32_t>(tid), first + static_cast<std::uint32_t>(tid) < mb.count);
  __syncthreads();
  {
    constexpr int hs = G::stride(G::obs_dim);
    float* h0 = smem + G::smem_h(0);
    for (int q = tid; q < T * G::obs_dim; q += G::block) {
      const int s = q / G::obs_dim, i = q % G::obs_dim;
      h0[s * hs + i] = mb.obs_norm.normalize(i, mb.obs[static_cast<std::size_t>(index[s]) * G::obs_dim + i]);
    }
  }
  __syncthreads();
  tile_forward<Net, 0>(smem, params, wt);
  if (tid < T) {  // the loss of sample tid: dZ of the head (policy outputs, then the value), log_std's share, terms
    constexpr int ys = G::stride(G::shape::width(G::count));
    const bool active = first + static_cast<std::uint32_t>(tid) < mb.count;
    const float scale = active ? 1.0f / static_cast<float>(mb.count) : 0.0f;
    const float* y = smem + G::smem_h(G::count) + tid * ys;
    float* dy = smem + G::smem_dz(0) + tid * G::dz_stride;
    float* d_ls = smem + G::smem_log_std + tid * A;
    const ppo_sample_terms t = mb.loss_gradient(index[tid], y, y[D], params, scale, dy, d_ls, dy + D);
    float* terms = smem + G::smem_terms + tid * term_count;
    auto put = [](float* where, float value) { *where = value; };
    ppo_minibatch_view<Net>::add_terms(t, scale, terms, put);
  }
  __syncthreads();
  float* out = rows + static_cast<std::size_t>(blockIdx.x) * G::row;
  tile_backward<Net, G::head>(smem, params, out, 0);
  // log_std's gradient and the loss terms, summed over the tile in sample order
  constexpr int tail = A + term_count;
  for (int q = tid; q < tail; q += G::block) {
    const float* col = q < A ? smem + G::smem_log_std + q : smem + G::smem_terms + (q - A);
    const int step = q < A ? A : term_count;
    float sum = 0.0f;
    for (int s = 0; s < T; ++s) sum += col[s * step];
    out[G::mlp::param_count + q] = sum;
  }
}

}  // namespace gmi::rl::detail

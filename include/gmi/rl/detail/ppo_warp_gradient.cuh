#pragma once
// The PPO minibatch gradient with one warp per sample, two samples in flight: the 32 lanes share each hidden
// layer's outputs (lane o holds output o, o + 32, ...) and keep the gradient of those weight rows in registers
// across the samples of their warp; the head (mean and value, a few outputs) is held by input instead: lane i
// keeps column i of its gradient, and each output is one warp sum, which every lane gets, so the loss needs no
// broadcast. A warp takes its samples two at a time (one at the end of an odd count): the two share every weight
// load and give the scheduler two independent chains. Each layer's input vector is written once to the warp's
// scratch in shared memory and read back by every lane four floats at a time (a broadcast), and the weights are
// read four at a time (rows padded to a multiple of 4 whose quarter-warp reads hit distinct banks). Every sum
// keeps the order of one sample after the other: the same bits as taking the samples one by one.
// A block then adds its warps' registers into one row in shared memory, warp after warp (a fixed order: the same
// sums on every run), and writes that row; ppo_sum_rows_kernel adds the blocks' rows in order.
//
// It replaces one thread per sample (ppo.cuh's ppo_gradient_kernel), which kept a whole sample's forward and
// backward in one thread (~255 registers, 2 warps per SM at a minibatch of 8192) and summed every parameter over
// the warp by shuffles. Networks: gmi::nn::gaussian_actor_critic whose layers are at most 128 wide and whose
// weights fit in shared memory (fits); others keep the per-thread kernel.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include <gmi/nn/activation.hpp>
#include <gmi/rl/ppo_steps.hpp>

namespace gmi::rl::detail {

template <class Net>
struct warp_gradient {
  using mlp = typename Net::net;
  using shape = typename mlp::layers;
  using act = typename mlp::activation;
  static constexpr int count = shape::count;
  static constexpr int dist_dim = Net::dist_dim;            // the head's policy outputs, before the value
  static constexpr int dist_params = Net::dist_param_count;  // log_std's gradient (none: categorical)
  static constexpr int dist_slots = dist_params > 0 ? dist_params : 1;
  static constexpr int warps_per_block = 8;
  static constexpr int block = 32 * warps_per_block;
  static constexpr int row = Net::param_count + term_count;
  static constexpr int in_flight = 2;  // samples a warp works on at once

  static constexpr int slots(int n) { return (n + 31) / 32; }
  static constexpr int round4(int n) { return (n + 3) / 4 * 4; }
  static constexpr int max_slots = slots(shape::max_width);
  // Weights in shared memory: per layer W[out][wstride] then b[out] (padded to 4). wstride is 4 more than a
  // multiple of 8: the float4 reads of a quarter warp (lanes o..o+7, rows o..o+7) fall on distinct banks.
  static constexpr int wstride(int l) { return (shape::width(l) + 7) / 8 * 8 + 4; }
  static constexpr int smem_weight(int l) {
    int off = 0;
    for (int k = 0; k < l; ++k) off += shape::width(k + 1) * wstride(k) + round4(shape::width(k + 1));
    return off;
  }
  static constexpr int smem_bias(int l) { return smem_weight(l) + shape::width(l + 1) * wstride(l); }
  static constexpr int smem_floats = smem_weight(count);
  // The block's sum: per layer W[out][rstride] then b[out], rstride odd (lane o adding row o stays conflict-free),
  // then log_std and the loss terms.
  static constexpr int rstride(int l) { return shape::width(l) | 1; }
  static constexpr int red_weight(int l) {
    int off = 0;
    for (int k = 0; k < l; ++k) off += shape::width(k + 1) * (rstride(k) + 1);
    return off;
  }
  static constexpr int red_bias(int l) { return red_weight(l) + shape::width(l + 1) * rstride(l); }
  static constexpr int red_params = red_weight(count);
  static constexpr int red_floats = round4(red_params + (row - mlp::param_count));
  // Each warp's scratch, per sample in flight: the input vector of every hidden layer (the head's input stays
  // in the lanes), then one layer's dL/dz.
  static constexpr int vec = round4(shape::max_width);
  static constexpr int per_sample = count * vec;
  static constexpr int scratch_floats = warps_per_block * in_flight * per_sample;
  static constexpr std::size_t smem_bytes =
      sizeof(float) * (static_cast<std::size_t>(smem_floats) + red_floats + scratch_floats);
  static constexpr int head = count - 1;
  static constexpr int head_in = shape::width(head), head_out = shape::width(count);
  // Registers: per hidden layer, each lane's rows (slots(out) of them) of in weights and a bias; for the head,
  // each lane's columns (slots(in) of them) of out weights, and the out biases (lane 0's are the ones kept).
  static constexpr int acc_offset(int l) {
    int off = 0;
    for (int k = 0; k < l; ++k) off += slots(shape::width(k + 1)) * (shape::width(k) + 1);
    return off;
  }
  static constexpr int acc_size = acc_offset(head) + slots(head_in) * head_out + head_out;

  // Where row entry q sits in the block's sum.
  __device__ static int padded(int q) {
    if (q >= mlp::param_count) return red_params + (q - mlp::param_count);
    int l = 0;
    while (q >= shape::weight_offset(l + 1)) ++l;
    const int I = shape::width(l);
    if (q >= shape::bias_offset(l)) return red_bias(l) + (q - shape::bias_offset(l));
    const int r = q - shape::weight_offset(l);
    return red_weight(l) + (r / I) * rstride(l) + r % I;
  }
  static constexpr bool fits = count >= 2 && head_out <= 32 && shape::max_width <= 128 && acc_size <= 160 &&
                               smem_bytes <= 48 * 1024 && std::is_same_v<typename mlp::output_activation, nn::identity>;
};

// The sum over the warp, the same bits in every lane (each butterfly step adds the same two partial sums).
__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }

// acc[s] = fma(w[i], x_s[i], acc[s]) for i in [0, N) in order, x_s = x + s * step: w and x float4-aligned, each
// weight read once for all S samples.
template <int N, int S>
__device__ inline void dot_in_order(const float* w, const float* x, int step, float (&acc)[S]) {
#pragma unroll
  for (int i = 0; i + 4 <= N; i += 4) {
    const float4 wv = load4(w + i);
#pragma unroll
    for (int s = 0; s < S; ++s) {
      const float4 xv = load4(x + s * step + i);
      acc[s] = __fmaf_rn(wv.x, xv.x, acc[s]);
      acc[s] = __fmaf_rn(wv.y, xv.y, acc[s]);
      acc[s] = __fmaf_rn(wv.z, xv.z, acc[s]);
      acc[s] = __fmaf_rn(wv.w, xv.w, acc[s]);
    }
  }
#pragma unroll
  for (int i = N / 4 * 4; i < N; ++i) {
    const float wi = w[i];
#pragma unroll
    for (int s = 0; s < S; ++s) acc[s] = __fmaf_rn(wi, x[s * step + i], acc[s]);
  }
}

// The S samples a warp works on: each lane's slots of every layer's output, and the warp's scratch.
template <class Net, int S>
struct warp_samples {
  using W = warp_gradient<Net>;
  float h[S][W::count][W::max_slots];  // the input (unused), then each hidden layer's output
  float* scratch;                      // S x W::per_sample floats of this warp's scratch
  __device__ float* input(int s, int l) const { return scratch + s * W::per_sample + l * W::vec; }
  __device__ float* dz(int s) const { return scratch + s * W::per_sample + W::head * W::vec; }
};

// Hidden layers L.. up to the head: h[L + 1] = act(W h[L] + b), lane-distributed; the inputs of hidden layers
// also go to the scratch.
template <class Net, int S, int L>
__device__ inline void warp_forward(const float* w, warp_samples<Net, S>& x) {
  using W = warp_gradient<Net>;
  constexpr int I = W::shape::width(L), O = W::shape::width(L + 1), P = W::wstride(L);
  const int lane = static_cast<int>(threadIdx.x & 31);
#pragma unroll
  for (int so = 0; so < W::slots(O); ++so) {
    const int o = lane + 32 * so;
    const int oc = o < O ? o : O - 1;
    float acc[S];
#pragma unroll
    for (int s = 0; s < S; ++s) acc[s] = w[W::smem_bias(L) + oc];
    dot_in_order<I, S>(w + W::smem_weight(L) + oc * P, x.input(0, L), W::per_sample, acc);
#pragma unroll
    for (int s = 0; s < S; ++s) {
      x.h[s][L + 1][so] = o < O ? W::act::f(acc[s]) : 0.0f;
      if constexpr (L + 1 < W::head) {
        if (o < O) x.input(s, L + 1)[o] = x.h[s][L + 1][so];
      }
    }
  }
  if constexpr (L + 1 < W::head) {
    __syncwarp();
    warp_forward<Net, S, L + 1>(w, x);
  }
}

// The head's outputs y = W h + b, in every lane.
template <class Net, int S>
__device__ inline void warp_head_forward(const float* w, const warp_samples<Net, S>& x,
                                         float (&y)[S][warp_gradient<Net>::head_out]) {
  using W = warp_gradient<Net>;
  constexpr int L = W::head, I = W::head_in, P = W::wstride(L);
  const int lane = static_cast<int>(threadIdx.x & 31);
#pragma unroll
  for (int o = 0; o < W::head_out; ++o) {
    float part[S];
#pragma unroll
    for (int s = 0; s < S; ++s) part[s] = 0.0f;
#pragma unroll
    for (int si = 0; si < W::slots(I); ++si) {
      const int i = lane + 32 * si;
      if (i < I) {
        const float wi = w[W::smem_weight(L) + o * P + i];
#pragma unroll
        for (int s = 0; s < S; ++s) part[s] = __fmaf_rn(wi, x.h[s][L][si], part[s]);
      }
    }
#pragma unroll
    for (int s = 0; s < S; ++s) y[s][o] = warp_sum(part[s]) + w[W::smem_bias(L) + o];
  }
}

// The head's gradients from dL/dy (every lane) into g; returns dL/d(its input), lane-distributed, in below.
template <class Net, int S>
__device__ inline void warp_head_backward(const float* w, const warp_samples<Net, S>& x,
                                          const float (&dy)[S][warp_gradient<Net>::head_out],
                                          float (&g)[warp_gradient<Net>::acc_size],
                                          float (&below)[S][warp_gradient<Net>::max_slots]) {
  using W = warp_gradient<Net>;
  constexpr int L = W::head, I = W::head_in, O = W::head_out, P = W::wstride(L), A = W::acc_offset(L);
  const int lane = static_cast<int>(threadIdx.x & 31);
#pragma unroll
  for (int si = 0; si < W::slots(I); ++si) {
    const int i = lane + 32 * si;
    const int ic = i < I ? i : I - 1;
    float sum[S];
#pragma unroll
    for (int s = 0; s < S; ++s) sum[s] = 0.0f;
#pragma unroll
    for (int o = 0; o < O; ++o) {
      const float wi = w[W::smem_weight(L) + o * P + ic];
#pragma unroll
      for (int s = 0; s < S; ++s) {
        g[A + si * O + o] = __fmaf_rn(dy[s][o], x.h[s][L][si], g[A + si * O + o]);
        sum[s] = __fmaf_rn(wi, dy[s][o], sum[s]);
      }
    }
#pragma unroll
    for (int s = 0; s < S; ++s) below[s][si] = i < I ? sum[s] : 0.0f;
  }
#pragma unroll
  for (int o = 0; o < O; ++o) {
#pragma unroll
    for (int s = 0; s < S; ++s) g[A + W::slots(I) * O + o] += dy[s][o];
  }
}

// d: dL/d(output of hidden layer L), lane-distributed. Adds the samples' weight and bias gradients of layer L
// and below into g, sample after sample for every entry.
template <class Net, int S, int L>
__device__ inline void warp_backward(const float* w, const warp_samples<Net, S>& x,
                                     const float (&d)[S][warp_gradient<Net>::max_slots],
                                     float (&g)[warp_gradient<Net>::acc_size]) {
  using W = warp_gradient<Net>;
  constexpr int I = W::shape::width(L), O = W::shape::width(L + 1), P = W::wstride(L), A = W::acc_offset(L);
  const int lane = static_cast<int>(threadIdx.x & 31);
  float dz[S][W::max_slots];
#pragma unroll
  for (int s = 0; s < S; ++s) {
#pragma unroll
    for (int so = 0; so < W::slots(O); ++so) {
      dz[s][so] = d[s][so] * W::act::grad_from_output(x.h[s][L + 1][so]);
      if constexpr (L > 0) {
        const int o = lane + 32 * so;
        if (o < O) x.dz(s)[o] = dz[s][so];
      }
    }
  }
#pragma unroll
  for (int so = 0; so < W::slots(O); ++so) {
    float* gr = g + A + so * (I + 1);
#pragma unroll
    for (int i = 0; i + 4 <= I; i += 4) {
#pragma unroll
      for (int s = 0; s < S; ++s) {
        const float4 hv = load4(x.input(s, L) + i);
        gr[i] = __fmaf_rn(dz[s][so], hv.x, gr[i]);
        gr[i + 1] = __fmaf_rn(dz[s][so], hv.y, gr[i + 1]);
        gr[i + 2] = __fmaf_rn(dz[s][so], hv.z, gr[i + 2]);
        gr[i + 3] = __fmaf_rn(dz[s][so], hv.w, gr[i + 3]);
      }
    }
#pragma unroll
    for (int i = I / 4 * 4; i < I; ++i) {
#pragma unroll
      for (int s = 0; s < S; ++s) gr[i] = __fmaf_rn(dz[s][so], x.input(s, L)[i], gr[i]);
    }
#pragma unroll
    for (int s = 0; s < S; ++s) gr[I] += dz[s][so];
  }
  if constexpr (L > 0) {
    __syncwarp();  // every lane's dz is in the scratch
    float below[S][W::max_slots];
#pragma unroll
    for (int si = 0; si < W::slots(I); ++si) {
      const int i = lane + 32 * si;
      const int ic = i < I ? i : I - 1;
      float sum[S];
#pragma unroll
      for (int s = 0; s < S; ++s) sum[s] = 0.0f;
      const float* col = w + W::smem_weight(L) + ic;
#pragma unroll
      for (int o = 0; o + 4 <= O; o += 4) {
        const float w0 = col[o * P], w1 = col[(o + 1) * P], w2 = col[(o + 2) * P], w3 = col[(o + 3) * P];
#pragma unroll
        for (int s = 0; s < S; ++s) {
          const float4 dv = load4(x.dz(s) + o);
          sum[s] = __fmaf_rn(w0, dv.x, sum[s]);
          sum[s] = __fmaf_rn(w1, dv.y, sum[s]);
          sum[s] = __fmaf_rn(w2, dv.z, sum[s]);
          sum[s] = __fmaf_rn(w3, dv.w, sum[s]);
        }
      }
#pragma unroll
      for (int o = O / 4 * 4; o < O; ++o) {
#pragma unroll
        for (int s = 0; s < S; ++s) sum[s] = __fmaf_rn(col[o * P], x.dz(s)[o], sum[s]);
      }
#pragma unroll
      for (int s = 0; s < S; ++s) below[s][si] = i < I ? sum[s] : 0.0f;
    }
    __syncwarp();  // read before the next layer writes its dz
    warp_backward<Net, S, L - 1>(w, x, below, g);
  }
}

// Lane-held gradients of layer L and below into the block's sum in shared memory: store for warp 0, add for
// the others.
template <class Net, int L>
__device__ inline void warp_store_rows(const float (&g)[warp_gradient<Net>::acc_size], float* red, bool first) {
  using W = warp_gradient<Net>;
  constexpr int I = W::shape::width(L), O = W::shape::width(L + 1), A = W::acc_offset(L);
  const int lane = static_cast<int>(threadIdx.x & 31);
#pragma unroll
  for (int so = 0; so < W::slots(O); ++so) {
    const int o = lane + 32 * so;
    if (o < O) {
#pragma unroll
      for (int i = 0; i < I; ++i) {
        float& r = red[W::red_weight(L) + o * W::rstride(L) + i];
        r = first ? g[A + so * (I + 1) + i] : r + g[A + so * (I + 1) + i];
      }
      float& rb = red[W::red_bias(L) + o];
      rb = first ? g[A + so * (I + 1) + I] : rb + g[A + so * (I + 1) + I];
    }
  }
  if constexpr (L + 1 < W::head) {
    warp_store_rows<Net, L + 1>(g, red, first);
  } else {  // the head: lane i's columns, and lane 0's biases
    constexpr int H = W::head, HI = W::head_in, HO = W::head_out, HA = W::acc_offset(H);
#pragma unroll
    for (int si = 0; si < W::slots(HI); ++si) {
      const int i = lane + 32 * si;
      if (i < HI) {
#pragma unroll
        for (int o = 0; o < HO; ++o) {
          float& r = red[W::red_weight(H) + o * W::rstride(H) + i];
          r = first ? g[HA + si * HO + o] : r + g[HA + si * HO + o];
        }
      }
    }
    if (lane == 0) {
#pragma unroll
      for (int o = 0; o < HO; ++o) {
        float& r = red[W::red_bias(H) + o];
        r = first ? g[HA + W::slots(HI) * HO + o] : r + g[HA + W::slots(HI) * HO + o];
      }
    }
  }
}

// What a warp keeps across its samples: the gradient rows, log_std's gradient and the loss terms.
template <class Net>
struct warp_sums {
  float g[warp_gradient<Net>::acc_size];
  float log_std[warp_gradient<Net>::dist_slots];
  float terms[term_count];
};

// Minibatch samples k[0..S) (rollout samples perm(begin + k)): forward, loss, backward, added into sums in
// sample order.
template <class Net, int S>
__device__ inline void warp_add_samples(const ppo_minibatch_view<Net>& mb, const feistel_permutation& perm,
                                        const float* w, const float* params, float scale, float* scratch,
                                        const std::uint32_t (&k)[S], warp_sums<Net>& sums) {
  using W = warp_gradient<Net>;
  constexpr int A = W::dist_params, D = W::dist_dim;
  const int lane = static_cast<int>(threadIdx.x & 31);
  warp_samples<Net, S> x;
  x.scratch = scratch;
  typename ppo_minibatch_view<Net>::sample_inputs in[S];
#pragma unroll
  for (int s = 0; s < S; ++s) {
    const std::uint32_t j = perm(mb.begin + k[s]);
    in[s] = mb.inputs(j);
    for (int i = lane; i < Net::obs_dim; i += 32)
      x.input(s, 0)[i] = mb.obs_norm.normalize(i, mb.obs[static_cast<std::size_t>(j) * Net::obs_dim + i]);
  }
  __syncwarp();
  warp_forward<Net, S, 0>(w, x);
  float y[S][W::head_out];  // the policy outputs, then the value
  warp_head_forward<Net, S>(w, x, y);
  float dy[S][W::head_out], d_ls[S][W::dist_slots];
  ppo_sample_terms t[S];
#pragma unroll
  for (int s = 0; s < S; ++s) t[s] = mb.loss_gradient(in[s], y[s], y[s][D], params, scale, dy[s], d_ls[s], &dy[s][D]);
  float d[S][W::max_slots];
  warp_head_backward<Net, S>(w, x, dy, sums.g, d);
  warp_backward<Net, S, W::head - 1>(w, x, d, sums.g);
  auto add = [](float* where, float value) { *where += value; };
#pragma unroll
  for (int s = 0; s < S; ++s) {
#pragma unroll
    for (int a = 0; a < A; ++a) sums.log_std[a] += d_ls[s][a];
    ppo_minibatch_view<Net>::add_terms(t[s], scale, sums.terms, add);
  }
  __syncwarp();  // the scratch is read before the next samples overwrite it
}

// Block b covers minibatch samples [b * 8 * per_warp, (b + 1) * 8 * per_warp): warp w of it the per_warp samples
// from (b * 8 + w) * per_warp on. rows[b] = the block's sum of their gradients and loss terms.
template <class Net>
__global__ static void __launch_bounds__(warp_gradient<Net>::block)
    ppo_warp_gradient_kernel(ppo_minibatch_view<Net> mb, const float* params, float* rows,
                             const std::uint64_t* iteration, int epoch, int epochs, int per_warp) {
  using W = warp_gradient<Net>;
  constexpr int A = W::dist_params, S = W::in_flight;
  extern __shared__ float4 shared4[];  // float4: the base is 16-byte aligned
  float* w = reinterpret_cast<float*>(shared4);
  float* red = w + W::smem_floats;
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x / 32);
  float* scratch = red + W::red_floats + warp * S * W::per_sample;
#pragma unroll
  for (int l = 0; l < W::count; ++l) {  // stage the weights with padded rows
    const int I = W::shape::width(l), O = W::shape::width(l + 1), P = W::wstride(l);
    for (int q = static_cast<int>(threadIdx.x); q < O * I; q += W::block)
      w[W::smem_weight(l) + (q / I) * P + q % I] = params[W::shape::weight_offset(l) + q];
    for (int q = static_cast<int>(threadIdx.x); q < O; q += W::block)
      w[W::smem_bias(l) + q] = params[W::shape::bias_offset(l) + q];
  }
  __syncthreads();
  mb.shuffle_round = *iteration * static_cast<std::uint64_t>(epochs) + static_cast<std::uint64_t>(epoch);
  const feistel_permutation perm = mb.permutation();
  const float scale = 1.0f / static_cast<float>(mb.count);
  warp_sums<Net> sums;
#pragma unroll
  for (int q = 0; q < W::acc_size; ++q) sums.g[q] = 0.0f;
#pragma unroll
  for (int q = 0; q < A; ++q) sums.log_std[q] = 0.0f;
#pragma unroll
  for (int q = 0; q < term_count; ++q) sums.terms[q] = 0.0f;
  const std::uint32_t first = (static_cast<std::uint32_t>(blockIdx.x) * W::warps_per_block + warp) * per_warp;
  const std::uint32_t end = first + static_cast<std::uint32_t>(per_warp) < mb.count
                                ? first + static_cast<std::uint32_t>(per_warp)
                                : mb.count;  // the same in every lane: the warp stays converged
  std::uint32_t k = first;
  for (; k + S <= end; k += S) {
    std::uint32_t ks[S];
#pragma unroll
    for (int s = 0; s < S; ++s) ks[s] = k + static_cast<std::uint32_t>(s);
    warp_add_samples<Net, S>(mb, perm, w, params, scale, scratch, ks, sums);
  }
  for (; k < end; ++k) {
    const std::uint32_t ks[1] = {k};
    warp_add_samples<Net, 1>(mb, perm, w, params, scale, scratch, ks, sums);
  }
  for (int turn = 0; turn < W::warps_per_block; ++turn) {  // warp after warp: a fixed order of the adds
    if (warp == turn) {
      warp_store_rows<Net, 0>(sums.g, red, turn == 0);
      if (lane == 0) {
#pragma unroll
        for (int a = 0; a < A; ++a) {
          float& r = red[W::red_params + a];
          r = turn == 0 ? sums.log_std[a] : r + sums.log_std[a];
        }
#pragma unroll
        for (int q = 0; q < term_count; ++q) {
          float& r = red[W::red_params + A + q];
          r = turn == 0 ? sums.terms[q] : r + sums.terms[q];
        }
      }
    }
    __syncthreads();
  }
  float* out = rows + static_cast<std::size_t>(blockIdx.x) * W::row;
  for (int q = static_cast<int>(threadIdx.x); q < W::row; q += W::block) out[q] = red[W::padded(q)];
}

}  // namespace gmi::rl::detail

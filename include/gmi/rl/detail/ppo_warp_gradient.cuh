#pragma once
// The PPO minibatch gradient with one warp per sample: the 32 lanes share each hidden layer's outputs (lane o
// holds output o, o + 32, ...) and keep the gradient of those weight rows in registers across the samples of
// their warp; the head (mean and value, a few outputs) is held by input instead: lane i keeps column i of its
// gradient, and each output is one warp sum, which every lane gets, so the loss needs no broadcast. A block then adds its warps'
// registers into one row in shared memory, warp after warp (a fixed order: the same sums on every run), and
// writes that row; ppo_sum_rows_kernel adds the blocks' rows in order.
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
  static constexpr int act_dim = Net::act_dim;
  static constexpr int warps_per_block = 8;
  static constexpr int block = 32 * warps_per_block;
  static constexpr int row = Net::param_count + term_count;

  static constexpr int slots(int n) { return (n + 31) / 32; }
  static constexpr int max_slots = slots(shape::max_width);
  // Shared memory: per layer W[out][stride] (an odd stride, so lane o's row starts in bank o mod 32) then b[out].
  static constexpr int stride(int l) { return shape::width(l) | 1; }
  static constexpr int smem_weight(int l) {
    int off = 0;
    for (int k = 0; k < l; ++k) off += shape::width(k + 1) * (stride(k) + 1);
    return off;
  }
  static constexpr int smem_bias(int l) { return smem_weight(l) + shape::width(l + 1) * stride(l); }
  static constexpr int smem_floats = smem_weight(count);
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
  // The block's sum uses the weights' padded layout too (lane o adding row o stays conflict-free), then log_std
  // and the loss terms.
  static constexpr int red_floats = smem_floats + (row - mlp::param_count);
  static constexpr std::size_t smem_bytes = sizeof(float) * (static_cast<std::size_t>(smem_floats) + red_floats);

  // Where row entry q sits in the padded layout.
  __device__ static int padded(int q) {
    if (q >= mlp::param_count) return smem_floats + (q - mlp::param_count);
    int l = 0;
    while (q >= shape::weight_offset(l + 1)) ++l;
    const int I = shape::width(l);
    if (q >= shape::bias_offset(l)) return smem_bias(l) + (q - shape::bias_offset(l));
    const int r = q - shape::weight_offset(l);
    return smem_weight(l) + (r / I) * stride(l) + r % I;
  }
  static constexpr bool fits = count >= 2 && head_out <= 32 && shape::max_width <= 128 && acc_size <= 160 &&
                               smem_bytes <= 48 * 1024 && std::is_same_v<typename mlp::output_activation, nn::identity>;
};

// The value of a lane-distributed vector at index i (every lane gets it).
template <int Slots>
__device__ inline float lane_value(const float (&v)[Slots], int i) {
  return __shfl_sync(0xffffffffu, v[i / 32], i % 32);
}

// The sum over the warp, the same bits in every lane (each butterfly step adds the same two partial sums).
__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Hidden layers L.. up to the head: h[L + 1] = act(W h[L] + b), lane-distributed.
template <class Net, int L>
__device__ inline void warp_forward(const float* w, float (&h)[warp_gradient<Net>::count][warp_gradient<Net>::max_slots]) {
  using W = warp_gradient<Net>;
  constexpr int I = W::shape::width(L), O = W::shape::width(L + 1), P = W::stride(L);
  const int lane = static_cast<int>(threadIdx.x & 31);
#pragma unroll
  for (int so = 0; so < W::slots(O); ++so) {
    const int o = lane + 32 * so;
    const int oc = o < O ? o : O - 1;
    float acc = w[W::smem_bias(L) + oc];
#pragma unroll
    for (int i = 0; i < I; ++i) acc += w[W::smem_weight(L) + oc * P + i] * lane_value(h[L], i);
    h[L + 1][so] = o < O ? W::act::f(acc) : 0.0f;
  }
  if constexpr (L + 1 < W::head) warp_forward<Net, L + 1>(w, h);
}

// The head's outputs y = W h + b, in every lane.
template <class Net>
__device__ inline void warp_head_forward(const float* w, const float (&x)[warp_gradient<Net>::max_slots],
                                         float (&y)[warp_gradient<Net>::head_out]) {
  using W = warp_gradient<Net>;
  constexpr int L = W::head, I = W::head_in, P = W::stride(L);
  const int lane = static_cast<int>(threadIdx.x & 31);
#pragma unroll
  for (int o = 0; o < W::head_out; ++o) {
    float part = 0.0f;
#pragma unroll
    for (int si = 0; si < W::slots(I); ++si) {
      const int i = lane + 32 * si;
      if (i < I) part += w[W::smem_weight(L) + o * P + i] * x[si];
    }
    y[o] = warp_sum(part) + w[W::smem_bias(L) + o];
  }
}

// The head's gradients from dL/dy (every lane) into g; returns dL/d(its input), lane-distributed, in below.
template <class Net>
__device__ inline void warp_head_backward(const float* w, const float (&x)[warp_gradient<Net>::max_slots],
                                          const float (&dy)[warp_gradient<Net>::head_out],
                                          float (&g)[warp_gradient<Net>::acc_size],
                                          float (&below)[warp_gradient<Net>::max_slots]) {
  using W = warp_gradient<Net>;
  constexpr int L = W::head, I = W::head_in, O = W::head_out, P = W::stride(L), A = W::acc_offset(L);
  const int lane = static_cast<int>(threadIdx.x & 31);
#pragma unroll
  for (int si = 0; si < W::slots(I); ++si) {
    const int i = lane + 32 * si;
    const int ic = i < I ? i : I - 1;
    float s = 0.0f;
#pragma unroll
    for (int o = 0; o < O; ++o) {
      g[A + si * O + o] += dy[o] * x[si];
      s += w[W::smem_weight(L) + o * P + ic] * dy[o];
    }
    below[si] = i < I ? s : 0.0f;
  }
#pragma unroll
  for (int o = 0; o < O; ++o) g[A + W::slots(I) * O + o] += dy[o];
}

// d: dL/d(output of hidden layer L), lane-distributed. Adds this sample's weight and bias gradients of layer L
// and below into g.
template <class Net, int L>
__device__ inline void warp_backward(const float* w, const float (&h)[warp_gradient<Net>::count][warp_gradient<Net>::max_slots],
                                     const float (&d)[warp_gradient<Net>::max_slots], float (&g)[warp_gradient<Net>::acc_size]) {
  using W = warp_gradient<Net>;
  constexpr int I = W::shape::width(L), O = W::shape::width(L + 1), P = W::stride(L), A = W::acc_offset(L);
  const int lane = static_cast<int>(threadIdx.x & 31);
  float dz[W::max_slots];
#pragma unroll
  for (int so = 0; so < W::slots(O); ++so) {
    dz[so] = d[so] * W::act::grad_from_output(h[L + 1][so]);
  }
#pragma unroll
  for (int so = 0; so < W::slots(O); ++so) {
#pragma unroll
    for (int i = 0; i < I; ++i) g[A + so * (I + 1) + i] += dz[so] * lane_value(h[L], i);
    g[A + so * (I + 1) + I] += dz[so];
  }
  if constexpr (L > 0) {
    float below[W::max_slots];
#pragma unroll
    for (int si = 0; si < W::slots(I); ++si) {
      const int i = lane + 32 * si;
      const int ic = i < I ? i : I - 1;
      float s = 0.0f;
#pragma unroll
      for (int o = 0; o < O; ++o) s += w[W::smem_weight(L) + o * P + ic] * lane_value(dz, o);
      below[si] = i < I ? s : 0.0f;
    }
    warp_backward<Net, L - 1>(w, h, below, g);
  }
}

// Lane-held gradients of layer L and below into the block's sum in shared memory (padded layout): store for
// warp 0, add for the others.
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
        float& r = red[W::smem_weight(L) + o * W::stride(L) + i];
        r = first ? g[A + so * (I + 1) + i] : r + g[A + so * (I + 1) + i];
      }
      float& rb = red[W::smem_bias(L) + o];
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
          float& r = red[W::smem_weight(H) + o * W::stride(H) + i];
          r = first ? g[HA + si * HO + o] : r + g[HA + si * HO + o];
        }
      }
    }
    if (lane == 0) {
#pragma unroll
      for (int o = 0; o < HO; ++o) {
        float& r = red[W::smem_bias(H) + o];
        r = first ? g[HA + W::slots(HI) * HO + o] : r + g[HA + W::slots(HI) * HO + o];
      }
    }
  }
}

// Block b covers minibatch samples [b * 8 * per_warp, (b + 1) * 8 * per_warp): warp w of it the per_warp samples
// from (b * 8 + w) * per_warp on. rows[b] = the block's sum of their gradients and loss terms.
template <class Net>
__global__ static void __launch_bounds__(warp_gradient<Net>::block)
    ppo_warp_gradient_kernel(ppo_minibatch_view<Net> mb, const float* params, float* rows,
                             const std::uint64_t* iteration, int epoch, int epochs, int per_warp) {
  using W = warp_gradient<Net>;
  constexpr int A = W::act_dim;
  extern __shared__ float shared[];
  float* w = shared;
  float* red = shared + W::smem_floats;
#pragma unroll
  for (int l = 0; l < W::count; ++l) {  // stage the weights with padded rows
    const int I = W::shape::width(l), O = W::shape::width(l + 1), P = W::stride(l);
    for (int q = static_cast<int>(threadIdx.x); q < O * I; q += W::block)
      w[W::smem_weight(l) + (q / I) * P + q % I] = params[W::shape::weight_offset(l) + q];
    for (int q = static_cast<int>(threadIdx.x); q < O; q += W::block)
      w[W::smem_bias(l) + q] = params[W::shape::bias_offset(l) + q];
  }
  __syncthreads();
  mb.shuffle_round = *iteration * static_cast<std::uint64_t>(epochs) + static_cast<std::uint64_t>(epoch);
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x / 32);
  const float* log_std = Net::log_std(params);
  const float scale = 1.0f / static_cast<float>(mb.count);
  float g[W::acc_size];
#pragma unroll
  for (int q = 0; q < W::acc_size; ++q) g[q] = 0.0f;
  float g_log_std[A], terms[term_count];
#pragma unroll
  for (int q = 0; q < A; ++q) g_log_std[q] = 0.0f;
#pragma unroll
  for (int q = 0; q < term_count; ++q) terms[q] = 0.0f;
  const std::uint32_t first = (static_cast<std::uint32_t>(blockIdx.x) * W::warps_per_block + warp) * per_warp;
  for (int s = 0; s < per_warp; ++s) {
    const std::uint32_t k = first + static_cast<std::uint32_t>(s);
    if (k >= mb.count) break;  // the same k in every lane: the warp stays converged
    const std::uint32_t j = mb.sample(k);
    float h[W::count][W::max_slots];  // the input, then each hidden layer's output
#pragma unroll
    for (int si = 0; si < W::max_slots; ++si) {
      const int i = lane + 32 * si;
      h[0][si] = i < Net::obs_dim ? mb.obs_norm.normalize(i, mb.obs[static_cast<std::size_t>(j) * Net::obs_dim + i]) : 0.0f;
    }
    warp_forward<Net, 0>(w, h);
    float y[W::head_out];  // mu, then the value
    warp_head_forward<Net>(w, h[W::head], y);
    float dy[W::head_out], d_ls[A];
    const ppo_sample_terms t = mb.loss_gradient(j, y, y[A], log_std, scale, dy, d_ls, &dy[A]);
    float d[W::max_slots];
    warp_head_backward<Net>(w, h[W::head], dy, g, d);
    warp_backward<Net, W::head - 1>(w, h, d, g);
#pragma unroll
    for (int a = 0; a < A; ++a) g_log_std[a] += d_ls[a];
    auto add = [](float* where, float value) { *where += value; };
    ppo_minibatch_view<Net>::add_terms(t, scale, terms, add);
  }
  for (int turn = 0; turn < W::warps_per_block; ++turn) {  // warp after warp: a fixed order of the adds
    if (warp == turn) {
      warp_store_rows<Net, 0>(g, red, turn == 0);
      if (lane == 0) {
#pragma unroll
        for (int a = 0; a < A; ++a) {
          float& r = red[W::smem_floats + a];
          r = turn == 0 ? g_log_std[a] : r + g_log_std[a];
        }
#pragma unroll
        for (int q = 0; q < term_count; ++q) {
          float& r = red[W::smem_floats + A + q];
          r = turn == 0 ? terms[q] : r + terms[q];
        }
      }
    }
    __syncthreads();
  }
  float* out = rows + static_cast<std::size_t>(blockIdx.x) * W::row;
  for (int q = static_cast<int>(threadIdx.x); q < W::row; q += W::block) out[q] = red[W::padded(q)];
}

}  // namespace gmi::rl::detail

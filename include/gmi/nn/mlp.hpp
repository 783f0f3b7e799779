#pragma once
// A fully connected network whose sizes are template parameters: per-sample forward and backward written once
// for a host loop or one device thread (what a fused rollout kernel calls), and the batched host path
// (exec::host). The batched CUDA paths (shared-memory kernel, cuBLAS) are in mlp.cuh.

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/span.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/nn/activation.hpp>
#include <gmi/nn/detail/math.hpp>
#include <gmi/nn/layers.hpp>

namespace gmi::nn {

// d_params accumulation of the per-sample backward: plain +=. A kernel where several threads add into one
// gradient buffer passes an atomic adder instead (see accumulate_atomic in mlp.cuh).
struct accumulate_plain {
  template <class T>
  GMI_HD void operator()(T* where, T value) const {
    *where += value;
  }
};

// mlp<layers<4, 32, 32, 1>, elu>: Act after every hidden layer, OutAct after the last one (identity by default,
// as torch's Sequential of Linear/ELU ending in Linear). T is the scalar: float for kernels, double for tests.
template <class Layers, class Act, class OutAct = identity, class T = float>
struct mlp {
  static_assert(is_layers<Layers>, "gmi::nn::mlp: the first parameter must be gmi::nn::layers<In, ..., Out>");
  static_assert(Layers::count >= 1, "gmi::nn::mlp: layers<...> needs an input and an output size");
  static_assert(activation<Act> && activation<OutAct>,
                "gmi::nn::mlp: Act and OutAct must be activation tags (elu, relu, tanh_act, identity)");
  static_assert(std::is_floating_point_v<T>, "gmi::nn::mlp: T must be float or double");

  using layers = Layers;
  using activation = Act;
  using output_activation = OutAct;
  using scalar = T;
  template <class U>
  using rebind = mlp<Layers, Act, OutAct, U>;  // the same network in another scalar (tests run it in double)

  static constexpr int in = Layers::in;
  static constexpr int out = Layers::out;
  static constexpr int count = Layers::count;
  static constexpr int param_count = Layers::param_count;
  // One sample's record of layer outputs (forward writes it, backward reads it); also the size of the dz
  // scratch that backward needs.
  static constexpr int activation_size = Layers::activation_size;
  static constexpr int max_width = Layers::max_width;
  // Layers with more weights than this keep their output loop rolled: unrolling both loops of a 32x32 layer lets
  // the compiler hoist every weight load and spill kilobytes per thread (measured with -Xptxas -v: 4.2 KB stack
  // frame for 4-32-32 forward, 128 B with the limit at 256).
  static constexpr int full_unroll_limit = 256;

  // y = OutAct(W_last ... Act(W_0 x + b_0) ... + b_last). acts (may be nullptr) receives every layer's output,
  // for backward. Intermediate values live in two local arrays, registers when the sizes are small.
  GMI_HD static void forward(const T* params, const T* x, T* y, T* acts = nullptr) {
    T a[max_width];
    T b[max_width];
    forward_from<0>(params, x, a, b, y, acts);
  }

  // Given dL/dy, writes dz (dL/d pre-activation of every layer, activation_size values, same layout as acts)
  // and, if d_x != nullptr, dL/dx. Needs no input x: the parameter gradients are formed from dz afterwards.
  GMI_HD static void backward_deltas(const T* params, const T* acts, const T* d_y, T* dz, T* d_x = nullptr) {
    constexpr int L = count - 1;
    constexpr int O = Layers::width(count);
    constexpr int ao = Layers::activation_offset(L);
    GMI_NN_UNROLL_N(O <= 256 ? O : 4)
    for (int o = 0; o < O; ++o) dz[ao + o] = d_y[o] * OutAct::grad_from_output(acts[ao + o]);
    deltas_below<L>(params, acts, dz, d_x);
  }

  // d_params += dL/dparams of one sample, from its input, layer outputs and dz.
  template <class Add = accumulate_plain>
  GMI_HD static void accumulate_grads(const T* x, const T* acts, const T* dz, T* d_params, Add add = {}) {
    grads_from<0>(x, acts, dz, d_params, add);
  }

  // The whole per-sample backward: d_params += dL/dparams, d_x = dL/dx (if not nullptr).
  // dz_scratch: activation_size values.
  template <class Add = accumulate_plain>
  GMI_HD static void backward(const T* params, const T* x, const T* acts, const T* d_y, T* d_params, T* d_x,
                              T* dz_scratch, Add add = {}) {
    backward_deltas(params, acts, d_y, dz_scratch, d_x);
    accumulate_grads(x, acts, dz_scratch, d_params, add);
  }

 private:
  template <int L>
  using act_of = std::conditional_t<L == count - 1, OutAct, Act>;

  template <int L>
  GMI_HD static void forward_from(const T* params, const T* in_vec, T* buf, T* other, T* y, T* acts) {
    constexpr int I = Layers::width(L);
    constexpr int O = Layers::width(L + 1);
    // Above the limit: inputs unrolled while they fit in registers, outputs four at a time (independent chains).
    [[maybe_unused]] constexpr int unroll_o = I * O <= full_unroll_limit ? O : 4;
    [[maybe_unused]] constexpr int unroll_i = I * O <= full_unroll_limit || I <= 64 ? I : 4;
    const T* W = params + Layers::weight_offset(L);
    const T* bias = params + Layers::bias_offset(L);
    T* dst = (L == count - 1) ? y : buf;
    GMI_NN_UNROLL_N(unroll_o)
    for (int o = 0; o < O; ++o) {
      T acc = bias[o];
      GMI_NN_UNROLL_N(unroll_i)
      for (int i = 0; i < I; ++i) acc += W[o * I + i] * in_vec[i];
      dst[o] = act_of<L>::f(acc);
    }
    if (acts) {
      T* record = acts + Layers::activation_offset(L);
      GMI_NN_UNROLL_N(unroll_o)
      for (int o = 0; o < O; ++o) record[o] = dst[o];
    }
    if constexpr (L + 1 < count) forward_from<L + 1>(params, buf, other, buf, y, acts);
  }

  // dz of layer L is known: form dz of layer L - 1 (or d_x below layer 0).
  template <int L>
  GMI_HD static void deltas_below(const T* params, const T* acts, T* dz, T* d_x) {
    constexpr int I = Layers::width(L);
    constexpr int O = Layers::width(L + 1);
    [[maybe_unused]] constexpr int unroll_i = I * O <= full_unroll_limit ? I : 1;
    [[maybe_unused]] constexpr int unroll_o = I * O <= full_unroll_limit ? O : 4;
    const T* W = params + Layers::weight_offset(L);
    const T* dz_l = dz + Layers::activation_offset(L);
    if constexpr (L > 0) {
      constexpr int below = Layers::activation_offset(L - 1);
      GMI_NN_UNROLL_N(unroll_i)
      for (int i = 0; i < I; ++i) {
        T s = T(0);
        GMI_NN_UNROLL_N(unroll_o)
        for (int o = 0; o < O; ++o) s += W[o * I + i] * dz_l[o];
        dz[below + i] = s * Act::grad_from_output(acts[below + i]);
      }
      deltas_below<L - 1>(params, acts, dz, d_x);
    } else {
      if (!d_x) return;
      GMI_NN_UNROLL_N(unroll_i)
      for (int i = 0; i < I; ++i) {
        T s = T(0);
        GMI_NN_UNROLL_N(unroll_o)
        for (int o = 0; o < O; ++o) s += W[o * I + i] * dz_l[o];
        d_x[i] = s;
      }
    }
  }

  template <int L, class Add>
  GMI_HD static void grads_from(const T* x, const T* acts, const T* dz, T* d_params, Add& add) {
    constexpr int I = Layers::width(L);
    constexpr int O = Layers::width(L + 1);
    // Above the limit: inputs unrolled while they fit in registers, outputs four at a time (independent chains).
    [[maybe_unused]] constexpr int unroll_o = I * O <= full_unroll_limit ? O : 4;
    [[maybe_unused]] constexpr int unroll_i = I * O <= full_unroll_limit || I <= 64 ? I : 4;
    const T* in_vec = L == 0 ? x : acts + Layers::activation_offset(L == 0 ? 0 : L - 1);
    const T* dz_l = dz + Layers::activation_offset(L);
    T* dW = d_params + Layers::weight_offset(L);
    T* db = d_params + Layers::bias_offset(L);
    GMI_NN_UNROLL_N(unroll_o)
    for (int o = 0; o < O; ++o) {
      const T g = dz_l[o];
      GMI_NN_UNROLL_N(unroll_i)
      for (int i = 0; i < I; ++i) add(dW + o * I + i, g * in_vec[i]);
      add(db + o, g);
    }
    if constexpr (L + 1 < count) grads_from<L + 1>(x, acts, dz, d_params, add);
  }
};

template <class T>
inline constexpr bool is_mlp = false;
template <class L, class A, class O, class T>
inline constexpr bool is_mlp<mlp<L, A, O, T>> = true;

// Batched paths (mlp.cuh, lt_mlp.cuh). Precision of the cuBLAS gemm_path:
enum class gemm_precision {
  fp32,  // CUBLAS_COMPUTE_32F: plain fp32 products (CUDA cores)
  tf32,  // CUBLAS_COMPUTE_32F_FAST_TF32: fp32 in and out, tensor-core products with 10-bit mantissas
};
// auto_path: fused_path where the network fits in shared memory and is narrower than network_config::lt_min_width,
// else lt_path (chosen at construction from the network_config given there).
struct auto_path {};
struct fused_path {};  // one kernel: weights in shared memory, one thread per sample
template <gemm_precision P = gemm_precision::tf32>
struct gemm_path {     // one cuBLAS GEMM per layer plus small bias/activation kernels
  static constexpr gemm_precision precision = P;
};
struct lt_path {};     // cuBLASLt products with fused epilogues, precision from network_config (lt_mlp.cuh)

// batch_mlp<Net, Policy, Path>: forward and backward over a batch of samples (row-major [n][features]).
// Specialised for exec::host here and for exec::cuda in mlp.cuh.
template <class Net, class Policy, class Path = auto_path>
class batch_mlp {
  static_assert(!std::is_same_v<Policy, Policy>,
                "gmi::nn::batch_mlp: no batched path for this policy; use exec::host (mlp.hpp) or exec::cuda "
                "(include <gmi/nn/mlp.cuh>, compiled by nvcc)");
};

namespace detail {
template <class T, class S>
void require_size(const memory_span<T, S>& s, std::size_t want, const char* what) {
  gmi::require(s.size() == want, what, s.size(), "== " + std::to_string(want));
}
template <class T, class S>
std::size_t batch_of(const memory_span<T, S>& x, int width, const char* what) {
  gmi::require(x.size() % static_cast<std::size_t>(width) == 0, what, x.size(),
               "a multiple of the input width " + std::to_string(width));
  return x.size() / static_cast<std::size_t>(width);
}
}  // namespace detail

// The host path: samples in parallel on host threads; parameter gradients summed per parameter over the
// samples in index order (in double), so results do not depend on the thread count.
template <class Net, class Path>
class batch_mlp<Net, exec::host, Path> {
  static_assert(is_mlp<Net>, "gmi::nn::batch_mlp: Net must be a gmi::nn::mlp<...>");

 public:
  using net = Net;
  using T = typename Net::scalar;
  static constexpr const char* path_name = "host";

  explicit batch_mlp(exec::host policy = {}) : policy_(std::move(policy)) {}

  // Size of the activation record forward writes for n samples (backward reads it back).
  static constexpr std::size_t acts_size(std::size_t n) { return n * Net::activation_size; }

  // out[n][Net::out] from x[n][Net::in]; acts (empty for inference) receives acts_size(n) values.
  void forward(host_span<const T> params, host_span<const T> x, host_span<T> out, host_span<T> acts = {}) const {
    detail::require_size(params, Net::param_count, "mlp forward: params size");
    const std::size_t n = detail::batch_of(x, Net::in, "mlp forward: x size");
    detail::require_size(out, n * Net::out, "mlp forward: out size");
    if (!acts.empty()) detail::require_size(acts, acts_size(n), "mlp forward: acts size");
    const T* p = params.data();
    const T* xs = x.data();
    T* ys = out.data();
    T* as = acts.empty() ? nullptr : acts.data();
    exec::for_each(policy_, n, [=](std::size_t s) {
      Net::forward(p, xs + s * Net::in, ys + s * Net::out, as ? as + s * Net::activation_size : nullptr);
    });
  }

  // d_params = sum over the batch of dL/dparams (overwritten); d_x[n][Net::in] = dL/dx if not empty.
  void backward(host_span<const T> params, host_span<const T> x, host_span<const T> acts, host_span<const T> d_out,
                host_span<T> d_params, host_span<T> d_x = {}) {
    detail::require_size(params, Net::param_count, "mlp backward: params size");
    detail::require_size(d_params, Net::param_count, "mlp backward: d_params size");
    const std::size_t n = detail::batch_of(x, Net::in, "mlp backward: x size");
    detail::require_size(acts, acts_size(n), "mlp backward: acts size");
    detail::require_size(d_out, n * Net::out, "mlp backward: d_out size");
    if (!d_x.empty()) detail::require_size(d_x, n * Net::in, "mlp backward: d_x size");
    dz_.resize(acts_size(n));
    const T* p = params.data();
    const T* xs = x.data();
    const T* as = acts.data();
    const T* gs = d_out.data();
    T* dz = dz_.data();
    T* dx = d_x.empty() ? nullptr : d_x.data();
    constexpr int A = Net::activation_size;
    exec::for_each(policy_, n, [=](std::size_t s) {
      Net::backward_deltas(p, as + s * A, gs + s * Net::out, dz + s * A, dx ? dx + s * Net::in : nullptr);
    });
    T* dp = d_params.data();
    using L = typename Net::layers;
    exec::for_each(policy_, static_cast<std::size_t>(Net::param_count), [=](std::size_t pi) {
      const int q = static_cast<int>(pi);
      int l = 0;
      while (q >= L::weight_offset(l + 1)) ++l;
      const int I = L::width(l), O = L::width(l + 1), local = q - L::weight_offset(l);
      const T* dz_l = dz + L::activation_offset(l);
      double sum = 0;
      if (local < I * O) {
        const int o = local / I, i = local % I;
        const T* in_base = l == 0 ? xs : as + L::activation_offset(l - 1);
        const std::size_t stride = l == 0 ? Net::in : A;
        for (std::size_t s = 0; s < n; ++s) sum += double(dz_l[s * A + o]) * double(in_base[s * stride + i]);
      } else {
        const int o = local - I * O;
        for (std::size_t s = 0; s < n; ++s) sum += double(dz_l[s * A + o]);
      }
      dp[pi] = static_cast<T>(sum);
    });
  }

 private:
  exec::host policy_;
  std::vector<T> dz_;
};

}  // namespace gmi::nn

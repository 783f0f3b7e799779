#pragma once
// The batched CUDA paths of gmi::nn::mlp:
//  - auto_path: fused_path where it fits and the network is narrower than network_config::lt_min_width, else
//    lt_path, chosen at construction.
//  - lt_path: cuBLASLt products with fused epilogues in fp32, TF32 or bf16 (lt_mlp.cuh).
//  - fused_path (narrow networks whose weights fit in shared memory): one kernel per pass, weights staged in
//    shared memory, one thread per sample running the per-sample code; backward sums parameter gradients per
//    block in shared memory, then a second kernel sums the blocks in order (deterministic, no atomics). fp32.
//  - gemm_path<P> (wide layers): one cuBLAS GEMM per layer (bias and activation in a small kernel), TF32 tensor
//    cores by default (gemm_precision::tf32, fp32 in and out) or plain fp32 (gemm_precision::fp32).
// Needs nvcc.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>

#include <gmi/core/span.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/nn/detail/cublas.hpp>
#include <gmi/nn/lt_mlp.cuh>
#include <gmi/nn/mlp.hpp>
#include <gmi/nn/network_config.hpp>

namespace gmi::nn {

// For per-sample backward calls from many device threads into one gradient buffer.
struct accumulate_atomic {
  template <class T>
  GMI_HD void operator()(T* where, T value) const {
#if GMI_IN_DEVICE_CODE
    atomicAdd(where, value);
#else
    *where += value;
#endif
  }
};

// Copies n floats into shared memory with the whole block, then waits for it (weights before a per-sample call).
__device__ inline void block_load(float* dst, const float* GMI_RESTRICT src, int n) {
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) dst[i] = src[i];
  __syncthreads();
}

namespace detail {

// Shared-memory plan of the fused path. Row strides are odd so thread t's row starts in bank t mod 32.
template <class Net>
struct fused_plan {
  static constexpr int in_stride = Net::in | 1;
  static constexpr int act_stride = Net::activation_size | 1;
  static constexpr std::size_t smem_budget = 96 * 1024;  // of the 227 KiB an H100/H200 block may opt into
  static constexpr std::size_t forward_bytes = sizeof(float) * Net::param_count;
  static constexpr std::size_t backward_bytes(int block) {
    return sizeof(float) * (Net::param_count + static_cast<std::size_t>(block) * (in_stride + 2 * act_stride));
  }
  static constexpr int backward_block = backward_bytes(128) <= smem_budget  ? 128
                                        : backward_bytes(64) <= smem_budget ? 64
                                        : backward_bytes(32) <= smem_budget ? 32
                                                                            : 0;
  static constexpr int forward_block = 128;
  // Wider layers are GEMM-shaped: the per-thread loops would spill and tensor cores win.
  static constexpr bool fits = Net::max_width <= 128 && backward_block > 0 && forward_bytes <= smem_budget;
};


template <class Net>
__global__ static void __launch_bounds__(128)
    fused_forward_kernel(const float* GMI_RESTRICT params, const float* GMI_RESTRICT x, float* GMI_RESTRICT y,
                         float* GMI_RESTRICT acts, int n) {
  extern __shared__ float w[];
  block_load(w, params, Net::param_count);
  const int s = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (s >= n) return;
  float xin[Net::in];
  for (int i = 0; i < Net::in; ++i) xin[i] = x[static_cast<std::size_t>(s) * Net::in + i];
  Net::forward(w, xin, y + static_cast<std::size_t>(s) * Net::out,
               acts ? acts + static_cast<std::size_t>(s) * Net::activation_size : nullptr);
}

template <class Net, int B>
__global__ static void __launch_bounds__(B)
    fused_backward_kernel(const float* GMI_RESTRICT params, const float* GMI_RESTRICT x,
                          const float* GMI_RESTRICT acts, const float* GMI_RESTRICT d_out,
                          float* GMI_RESTRICT partials, float* GMI_RESTRICT d_x, int n) {
  using plan = fused_plan<Net>;
  using L = typename Net::layers;
  constexpr int P = Net::param_count, A = Net::activation_size, IS = plan::in_stride, AS = plan::act_stride;
  extern __shared__ float smem[];
  float* w = smem;
  float* xs = w + P;
  float* as = xs + B * IS;
  float* dz = as + B * AS;
  const int tid = static_cast<int>(threadIdx.x);
  const int base = static_cast<int>(blockIdx.x) * B;
  const int count = min(B, n - base);
  for (int k = tid; k < P; k += B) w[k] = params[k];
  for (int k = tid; k < count * Net::in; k += B)
    xs[(k / Net::in) * IS + k % Net::in] = x[static_cast<std::size_t>(base) * Net::in + k];
  for (int k = tid; k < count * A; k += B) as[(k / A) * AS + k % A] = acts[static_cast<std::size_t>(base) * A + k];
  __syncthreads();
  if (tid < count) {
    const std::size_t s = static_cast<std::size_t>(base + tid);
    Net::backward_deltas(w, as + tid * AS, d_out + s * Net::out, dz + tid * AS, d_x ? d_x + s * Net::in : nullptr);
  }
  __syncthreads();
  // Parameter-major: consecutive threads take consecutive inputs i of one output o (conflict-free reads).
  for (int p = tid; p < P; p += B) {
    int l = 0;
    while (l + 1 < Net::count && p >= L::weight_offset(l + 1)) ++l;
    const int I = L::width(l), local = p - L::weight_offset(l);
    const float* dz_l = dz + L::activation_offset(l);
    float sum = 0.0f;
    if (local < I * L::width(l + 1)) {
      const int o = local / I, i = local % I;
      const float* in_base = l == 0 ? xs : as + L::activation_offset(l - 1);
      const int stride = l == 0 ? IS : AS;
      for (int s = 0; s < count; ++s) sum += dz_l[s * AS + o] * in_base[s * stride + i];
    } else {
      const int o = local - I * L::width(l + 1);
      for (int s = 0; s < count; ++s) sum += dz_l[s * AS + o];
    }
    partials[static_cast<std::size_t>(blockIdx.x) * P + p] = sum;
  }
}

// out[p] = sum over blocks b (in order) of partials[b][p].
__global__ static void sum_partials_kernel(const float* GMI_RESTRICT partials, int blocks, int P,
                                           float* GMI_RESTRICT out) {
  const int p = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (p >= P) return;
  float sum = 0.0f;
  for (int b = 0; b < blocks; ++b) sum += partials[static_cast<std::size_t>(b) * P + p];
  out[p] = sum;
}

// y[s][o] = Act(y[s][o] + b[o]); also into copy (if not nullptr).
template <class Act>
__global__ static void bias_act_kernel(float* GMI_RESTRICT y, const float* GMI_RESTRICT b, std::size_t total, int w,
                                       float* GMI_RESTRICT copy) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += stride) {
    const float v = Act::f(y[k] + b[k % w]);
    y[k] = v;
    if (copy) copy[k] = v;
  }
}

// dz = g * Act'(y) (g and dz may alias).
template <class Act>
__global__ static void grad_act_kernel(const float* g, const float* GMI_RESTRICT y, float* dz, std::size_t total) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += stride)
    dz[k] = g[k] * Act::grad_from_output(y[k]);
}

__global__ static void fill_kernel(float* GMI_RESTRICT p, std::size_t total, float value) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += stride)
    p[k] = value;
}

inline unsigned elementwise_blocks(std::size_t total, int block) {
  return static_cast<unsigned>(std::min<std::size_t>((total + block - 1) / block, 4096));
}

}  // namespace detail

template <class Net, class Path>
class batch_mlp<Net, exec::cuda, Path> {
  static_assert(is_mlp<Net>, "gmi::nn::batch_mlp: Net must be a gmi::nn::mlp<...>");
  static_assert(std::is_same_v<typename Net::scalar, float>, "gmi::nn::batch_mlp<exec::cuda>: the CUDA paths run float");

 public:
  using net = Net;
  using path_type = Path;
  static constexpr bool is_fused = std::is_same_v<path_type, fused_path>;
  static_assert(!is_fused || detail::fused_plan<Net>::backward_block > 0,
                "gmi::nn::batch_mlp: fused_path asked for, but the network does not fit in shared memory; use "
                "gemm_path or auto_path");
  static constexpr const char* path_name = [] {
    if constexpr (is_fused) return "fused_fp32";
    else return path_type::precision == gemm_precision::tf32 ? "gemm_tf32" : "gemm_fp32";
  }();
  [[nodiscard]] const char* path() const noexcept { return path_name; }

  // max_batch: the largest n forward/backward will see (sizes the workspace).
  batch_mlp(exec::cuda policy, std::size_t max_batch) : policy_(policy), max_batch_(max_batch) {
    gmi::require(max_batch >= 1, "batch_mlp max_batch", max_batch, ">= 1");
    using plan = detail::fused_plan<Net>;
    if constexpr (is_fused) {
      const std::size_t blocks = (max_batch + plan::backward_block - 1) / plan::backward_block;
      work_ = cuda::device_buffer<float>(blocks * Net::param_count);
      const auto fwd = detail::fused_forward_kernel<Net>;
      const auto bwd = detail::fused_backward_kernel<Net, plan::backward_block>;
      GMI_CUDA_TRY(cudaFuncSetAttribute(fwd, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(plan::forward_bytes)));
      GMI_CUDA_TRY(cudaFuncSetAttribute(bwd, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(plan::backward_bytes(plan::backward_block))));
    } else {
      work_ = cuda::device_buffer<float>(2 * max_batch * Net::max_width);
      ones_ = cuda::device_buffer<float>(max_batch);
      fill_ones();
      blas_ = detail::cublas_handle(policy_.stream);
    }
  }

  static constexpr std::size_t acts_size(std::size_t n) { return n * Net::activation_size; }
  [[nodiscard]] std::size_t max_batch() const noexcept { return max_batch_; }

  // out[n][Net::out] from x[n][Net::in]; acts (empty for inference) keeps acts_size(n) values for backward, in
  // this path's own layout. Asynchronous on the policy's stream.
  void forward(device_span<const float> params, device_span<const float> x, device_span<float> out,
               device_span<float> acts = {}) {
    detail::require_size(params, Net::param_count, "mlp forward: params size");
    const std::size_t n = detail::batch_of(x, Net::in, "mlp forward: x size");
    check_batch(n);
    detail::require_size(out, n * Net::out, "mlp forward: out size");
    if (!acts.empty()) detail::require_size(acts, acts_size(n), "mlp forward: acts size");
    if (n == 0) return;
    float* a = acts.empty() ? nullptr : acts.data();
    if constexpr (is_fused) {
      using plan = detail::fused_plan<Net>;
      const unsigned blocks = static_cast<unsigned>((n + plan::forward_block - 1) / plan::forward_block);
      detail::fused_forward_kernel<Net><<<blocks, plan::forward_block, plan::forward_bytes, policy_.stream>>>(
          params.data(), x.data(), out.data(), a, static_cast<int>(n));
      GMI_CUDA_TRY(cudaGetLastError());
    } else {
      gemm_forward(params.data(), x.data(), out.data(), a, n);
    }
  }

  // d_params = sum over the batch of dL/dparams (overwritten); d_x = dL/dx if not empty. acts: from forward.
  void backward(device_span<const float> params, device_span<const float> x, device_span<const float> acts,
                device_span<const float> d_out, device_span<float> d_params, device_span<float> d_x = {}) {
    detail::require_size(params, Net::param_count, "mlp backward: params size");
    detail::require_size(d_params, Net::param_count, "mlp backward: d_params size");
    const std::size_t n = detail::batch_of(x, Net::in, "mlp backward: x size");
    check_batch(n);
    detail::require_size(acts, acts_size(n), "mlp backward: acts size");
    detail::require_size(d_out, n * Net::out, "mlp backward: d_out size");
    if (!d_x.empty()) detail::require_size(d_x, n * Net::in, "mlp backward: d_x size");
    float* dx = d_x.empty() ? nullptr : d_x.data();
    if (n == 0) {
      GMI_CUDA_TRY(cudaMemsetAsync(d_params.data(), 0, d_params.size_bytes(), policy_.stream));
      return;
    }
    if constexpr (is_fused) {
      using plan = detail::fused_plan<Net>;
      constexpr int B = plan::backward_block;
      const int blocks = static_cast<int>((n + B - 1) / B);
      detail::fused_backward_kernel<Net, B><<<blocks, B, plan::backward_bytes(B), policy_.stream>>>(
          params.data(), x.data(), acts.data(), d_out.data(), work_.data(), dx, static_cast<int>(n));
      GMI_CUDA_TRY(cudaGetLastError());
      detail::sum_partials_kernel<<<(Net::param_count + 255) / 256, 256, 0, policy_.stream>>>(
          work_.data(), blocks, Net::param_count, d_params.data());
      GMI_CUDA_TRY(cudaGetLastError());
    } else {
      gemm_backward(params.data(), x.data(), acts.data(), d_out.data(), d_params.data(), dx, n);
    }
  }

 private:
  using L = typename Net::layers;

  void check_batch(std::size_t n) const {
    gmi::require(n <= max_batch_, "mlp batch size", n, "<= max_batch " + std::to_string(max_batch_) + " given at construction");
  }

  void fill_ones() {
    detail::fill_kernel<<<detail::elementwise_blocks(max_batch_, 256), 256, 0, policy_.stream>>>(ones_.data(),
                                                                                                 max_batch_, 1.0f);
    GMI_CUDA_TRY(cudaGetLastError());
  }

  static constexpr cublasComputeType_t compute_type() {
    if constexpr (is_fused) return CUBLAS_COMPUTE_32F;
    else return path_type::precision == gemm_precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  }

  // Row-major C[rows][cols] = op(A) op(B) in cuBLAS's column-major terms (see the call sites).
  void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* A, int lda,
            const float* B, int ldb, float* C, int ldc) {
    const float alpha = 1.0f, beta = 0.0f;
    GMI_NN_CUBLAS_TRY(cublasGemmEx(blas_.get(), ta, tb, m, n, k, &alpha, A, CUDA_R_32F, lda, B, CUDA_R_32F, ldb,
                                   &beta, C, CUDA_R_32F, ldc, compute_type(), CUBLAS_GEMM_DEFAULT));
  }

  // Layer l: Y[n][O] = X[n][I] W^T + b. Column-major, Y^T (O x n) = W (op T of the I x O view) X^T (I x n).
  void gemm_forward(const float* params, const float* x, float* out, float* acts, std::size_t n) {
    const int N = static_cast<int>(n);
    const float* in = x;
    for (int l = 0; l < Net::count; ++l) {
      const int I = L::width(l), O = L::width(l + 1);
      const bool last = l == Net::count - 1;
      float* dst = acts ? acts + n * L::activation_offset(l) : (last ? out : work_.data() + (l % 2) * n * Net::max_width);
      gemm(CUBLAS_OP_T, CUBLAS_OP_N, O, N, I, params + L::weight_offset(l), I, in, I, dst, O);
      const std::size_t total = n * O;
      const unsigned blocks = detail::elementwise_blocks(total, 256);
      float* copy = (last && acts) ? out : nullptr;
      if (last)
        detail::bias_act_kernel<typename Net::output_activation>
            <<<blocks, 256, 0, policy_.stream>>>(dst, params + L::bias_offset(l), total, O, copy);
      else
        detail::bias_act_kernel<typename Net::activation>
            <<<blocks, 256, 0, policy_.stream>>>(dst, params + L::bias_offset(l), total, O, nullptr);
      GMI_CUDA_TRY(cudaGetLastError());
      in = dst;
    }
  }

  void gemm_backward(const float* params, const float* x, const float* acts, const float* d_out, float* d_params,
                     float* d_x, std::size_t n) {
    const int N = static_cast<int>(n);
    constexpr int last = Net::count - 1;
    auto buffer = [&](int l) { return work_.data() + (l % 2) * n * Net::max_width; };
    const float* dz = d_out;  // dL/dz of the current layer, [n][O]
    if constexpr (!std::is_same_v<typename Net::output_activation, identity>) {
      const std::size_t total = n * Net::out;
      detail::grad_act_kernel<typename Net::output_activation>
          <<<detail::elementwise_blocks(total, 256), 256, 0, policy_.stream>>>(
              d_out, acts + n * L::activation_offset(last), buffer(last), total);
      GMI_CUDA_TRY(cudaGetLastError());
      dz = buffer(last);
    }
    for (int l = last; l >= 0; --l) {
      const int I = L::width(l), O = L::width(l + 1);
      const float* in = l == 0 ? x : acts + n * L::activation_offset(l - 1);
      // dW (row-major [O][I]) = dZ^T X: column-major dW^T (I x O) = X^T (I x n) * dZ (n x O).
      gemm(CUBLAS_OP_N, CUBLAS_OP_T, I, O, N, in, I, dz, O, d_params + L::weight_offset(l), I);
      // db[O] = dZ^T 1: column-major dZ^T is O x n.
      const float one = 1.0f, zero = 0.0f;
      GMI_NN_CUBLAS_TRY(cublasSgemv(blas_.get(), CUBLAS_OP_N, O, N, &one, dz, O, ones_.data(), 1, &zero,
                                    d_params + L::bias_offset(l), 1));
      if (l > 0 || d_x) {
        // dX[n][I] = dZ W: column-major dX^T (I x n) = W^T (I x O, W's row-major storage) * dZ^T (O x n).
        float* dst = l > 0 ? buffer(l - 1) : d_x;
        gemm(CUBLAS_OP_N, CUBLAS_OP_N, I, N, O, params + L::weight_offset(l), I, dz, O, dst, I);
        if (l > 0) {
          const std::size_t total = n * I;
          detail::grad_act_kernel<typename Net::activation>
              <<<detail::elementwise_blocks(total, 256), 256, 0, policy_.stream>>>(
                  dst, acts + n * L::activation_offset(l - 1), dst, total);
          GMI_CUDA_TRY(cudaGetLastError());
        }
        dz = dst;
      }
    }
  }

  exec::cuda policy_;
  std::size_t max_batch_;
  cuda::device_buffer<float> work_;  // fused: per-block gradient partials; gemm: two [n][max_width] buffers
  cuda::device_buffer<float> ones_;  // gemm: the ones vector of the bias-gradient GEMV
  detail::cublas_handle blas_;
};

// lt_path: lt_mlp behind the batch_mlp interface; the precision comes from the network_config.
template <class Net>
class batch_mlp<Net, exec::cuda, lt_path> {
 public:
  using net = Net;
  using path_type = lt_path;
  static constexpr bool is_fused = false;
  static constexpr const char* path_name = "lt";

  batch_mlp(exec::cuda policy, std::size_t max_batch, const network_config& cfg = {}) : lt_(policy, max_batch, cfg) {}
  static constexpr std::size_t acts_size(std::size_t n) { return n * Net::activation_size; }
  [[nodiscard]] std::size_t max_batch() const noexcept { return lt_.max_batch(); }
  [[nodiscard]] const char* path() const noexcept { return lt_.path(); }
  void forward(device_span<const float> params, device_span<const float> x, device_span<float> out,
               device_span<float> acts = {}) {
    lt_.forward(params, x, out, acts);
  }
  void backward(device_span<const float> params, device_span<const float> x, device_span<const float> acts,
                device_span<const float> d_out, device_span<float> d_params, device_span<float> d_x = {}) {
    lt_.backward(params, x, acts, d_out, d_params, d_x);
  }
  [[nodiscard]] lt_mlp<Net>& lt() noexcept { return lt_; }

 private:
  lt_mlp<Net> lt_;
};

// auto_path: the shared-memory kernels for narrow networks, cuBLASLt for wide ones (network_config::lt_min_width).
template <class Net>
class batch_mlp<Net, exec::cuda, auto_path> {
  static constexpr bool fused_fits = detail::fused_plan<Net>::fits;
  using fused_type = std::conditional_t<fused_fits, batch_mlp<Net, exec::cuda, fused_path>, lt_mlp<Net>>;

 public:
  using net = Net;
  using path_type = auto_path;
  // What a default network_config picks.
  static constexpr const char* path_name =
      uses_lt(network_config{}, Net::max_width, fused_fits) ? "lt" : "fused_fp32";

  batch_mlp(exec::cuda policy, std::size_t max_batch, const network_config& cfg = {}) {
    validate(cfg);
    if (uses_lt(cfg, Net::max_width, fused_fits)) lt_.emplace(policy, max_batch, cfg);
    else if constexpr (fused_fits) fused_.emplace(policy, max_batch);
  }
  static constexpr std::size_t acts_size(std::size_t n) { return n * Net::activation_size; }
  [[nodiscard]] bool is_lt() const noexcept { return lt_.has_value(); }
  [[nodiscard]] std::size_t max_batch() const noexcept { return lt_ ? lt_->max_batch() : fused_->max_batch(); }
  [[nodiscard]] const char* path() const noexcept { return lt_ ? lt_->path() : "fused_fp32"; }
  void forward(device_span<const float> params, device_span<const float> x, device_span<float> out,
               device_span<float> acts = {}) {
    if (lt_) lt_->forward(params, x, out, acts);
    else if constexpr (fused_fits) fused_->forward(params, x, out, acts);
  }
  void backward(device_span<const float> params, device_span<const float> x, device_span<const float> acts,
                device_span<const float> d_out, device_span<float> d_params, device_span<float> d_x = {}) {
    if (lt_) lt_->backward(params, x, acts, d_out, d_params, d_x);
    else if constexpr (fused_fits) fused_->backward(params, x, acts, d_out, d_params, d_x);
  }

 private:
  std::optional<lt_mlp<Net>> lt_;
  std::optional<fused_type> fused_;  // the fused kernels where they fit (otherwise never engaged)
};

}  // namespace gmi::nn

#pragma once
// The batched forward and backward of a gmi::nn::mlp as cuBLASLt products with fused epilogues (lt_linear.cuh),
// in fp32, TF32 or bf16 (network_config::precision). Forward: per layer one product with the bias (and ReLU)
// in its epilogue; activations without an epilogue (ELU, tanh) in one elementwise pass that also writes the
// bf16 copy the next layer reads. Backward: per layer the weight gradient with the bias gradient in its epilogue
// (BGRADB; a column-sum kernel where cuBLASLt has none for the types), the input gradient, then one pass that
// forms the layer below's dz and the first stage of its bias gradient's column sums (network_config::fuse_dz_sums).
// Activation records use the layout of mlp.cuh's gemm_path: layer l's outputs at acts + n * activation_offset(l),
// [n][width]. bf16: weights and layer inputs are converted per call from the fp32
// master copies (a forward with a record keeps its bf16 inputs for the backward's weight gradients, so the backward
// after it converts nothing); products accumulate in fp32 and write fp32. With network_config::kernels mma (TF32, bf16) each
// layer's forward and input-gradient product is instead one own tensor-core kernel (fused_gemm.cuh) with the
// activation / the dz = dX * Act'(y) in its epilogue; the weight gradients stay cuBLASLt. Every call is capturable
// in a CUDA graph. With kernels wholenet (TF32, bf16) a forward without an activation record is one kernel for the
// whole network (wholenet.cuh); forwards with a record and the backward run as with cublaslt. With
// network_config::backward wholenet (TF32, bf16) the backward's input-gradient chain is one kernel
// (wholenet_backward.cuh) and the weight gradients are cuBLASLt products over the dz it kept.

#include <cuda_bf16.h>
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
#include <gmi/nn/activation.hpp>
#include <gmi/nn/detail/lt_column_sums.cuh>
#include <gmi/nn/detail/lt_layout.hpp>
#include <gmi/nn/fused_gemm.cuh>
#include <gmi/nn/lt_linear.cuh>
#include <gmi/nn/mlp.hpp>
#include <gmi/nn/network_config.hpp>
#include <gmi/nn/wholenet.cuh>
#include <gmi/nn/wholenet_backward.cuh>

namespace gmi::nn {

namespace detail {

// The bf16 weights of every layer from the fp32 parameters (biases stay fp32, read from params).
template <class L>
__global__ static void lt_weights_to_bf16_kernel(const float* __restrict__ params, __nv_bfloat16* __restrict__ w16) {
  const int stride = static_cast<int>(gridDim.x * blockDim.x);
  for (int p = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); p < L::param_count; p += stride) {
    int l = 0;
    while (l + 1 < L::count && p >= L::weight_offset(l + 1)) ++l;
    const int I = L::width(l), local = p - L::weight_offset(l);
    if (local >= I * L::width(l + 1)) continue;  // a bias
    w16[lt_layout_of<L>::w16_offset(l) + static_cast<std::size_t>(local / I) * bf16_ld(I) + local % I] =
        __float2bfloat16_rn(params[p]);
  }
}

// The own kernels' weights (layer_kernels::mma): w (layer l at w16_offset, [out][bf16_ld(in)]; nullptr: not
// wanted) and wt (at wt_offset, [in][bf16_ld(out)]) in T (fp32 for TF32 products, bf16) from the fp32 parameters.
// One block per 32 x 32 tile of a layer's weights (lt_weight_tiles in all), 32 x 8 threads: the tile goes through
// shared memory so that both the reads and the transposed writes are coalesced.
template <class L>
constexpr int lt_weight_tiles_before(int l) {
  int t = 0;
  for (int k = 0; k < l; ++k) t += ((L::width(k + 1) + 31) / 32) * ((L::width(k) + 31) / 32);
  return t;
}
template <class L>
inline constexpr int lt_weight_tiles = lt_weight_tiles_before<L>(L::count);

template <class L, class T>
__global__ static void lt_weights_mma_kernel(const float* __restrict__ params, T* __restrict__ w, T* __restrict__ wt) {
  __shared__ float tile[32][33];
  const int b = static_cast<int>(blockIdx.x);
  int l = 0;
  while (l + 1 < L::count && b >= lt_weight_tiles_before<L>(l + 1)) ++l;
  const int I = L::width(l), O = L::width(l + 1), local = b - lt_weight_tiles_before<L>(l);
  const int o0 = (local / ((I + 31) / 32)) * 32, i0 = (local % ((I + 31) / 32)) * 32;
  const float* W = params + L::weight_offset(l);
  const int tx = static_cast<int>(threadIdx.x);
  auto cvt = [](float v) {
    if constexpr (std::is_same_v<T, float>) return v;
    else return __float2bfloat16_rn(v);
  };
  for (int r = static_cast<int>(threadIdx.y); r < 32; r += 8) {
    const int o = o0 + r, i = i0 + tx;
    if (o < O && i < I) {
      const float v = W[static_cast<std::size_t>(o) * I + i];
      tile[r][tx] = v;
      if (w) w[lt_layout_of<L>::w16_offset(l) + static_cast<std::size_t>(o) * bf16_ld(I) + i] = cvt(v);
    }
  }
  __syncthreads();
  for (int r = static_cast<int>(threadIdx.y); r < 32; r += 8) {
    const int i = i0 + r, o = o0 + tx;
    if (o < O && i < I) wt[lt_layout_of<L>::wt_offset(l) + static_cast<std::size_t>(i) * bf16_ld(O) + o] = cvt(tile[tx][r]);
  }
}

// dst[r][c] (row stride ld) = bf16(src[r][c]) for a [rows][w] fp32 matrix.
__global__ static void lt_to_bf16_kernel(const float* __restrict__ src, std::size_t rows, int w,
                                         __nv_bfloat16* __restrict__ dst, int ld) {
  const std::size_t total = rows * static_cast<std::size_t>(w);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += stride) {
    std::size_t r;
    int c;
    lt_row_col(k, w, total, r, c);
    dst[r * ld + c] = __float2bfloat16_rn(src[k]);
  }
}

// After a layer's product: y = Act(y + bias) (bias may be nullptr: already added; apply_act false: already
// applied), and the result also into copy (fp32, same layout) and next16 (bf16, row stride ld16) where given.
template <class Act>
__global__ static void lt_forward_post_kernel(float* __restrict__ y, const float* __restrict__ bias, bool apply_act,
                                              std::size_t rows, int w, float* __restrict__ copy,
                                              __nv_bfloat16* __restrict__ next16, int ld16) {
  const std::size_t total = rows * static_cast<std::size_t>(w);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t k = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += stride) {
    std::size_t r;
    int c;
    lt_row_col(k, w, total, r, c);
    float v = y[k];
    if (bias) v += bias[c];
    if (apply_act) v = Act::f(v);
    y[k] = v;
    if (copy) copy[k] = v;
    if (next16) next16[r * ld16 + c] = __float2bfloat16_rn(v);
  }
}

// dw[e] = the chunks' partial weight gradients part[c * stride + e] summed in chunk order (the split weight
// gradient, network_config::weight_grad_chunks): the same sums on every run. With db, also stage two of the bias
// gradient in the same launch: db[c] = lt_column_finish_kernel's sum of bias_part (bias_chunks x w), same order.
__global__ static void lt_chunk_sum_kernel(const float* __restrict__ part, int chunks, std::size_t stride,
                                           std::size_t count, float* __restrict__ dw,
                                           const float* __restrict__ bias_part = nullptr, std::size_t bias_chunks = 0,
                                           int w = 0, float* __restrict__ db = nullptr) {
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x, all = count + (db ? w : 0);
  for (std::size_t e = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < all; e += step) {
    float t = 0.0f;
    if (e < count) {
      for (int c = 0; c < chunks; ++c) t += part[c * stride + e];
      dw[e] = t;
    } else {
      for (std::size_t g = 0; g < bias_chunks; ++g) t += bias_part[g * w + (e - count)];
      db[e - count] = t;
    }
  }
}

// A partial weight gradient's stride in the split buffer: a multiple of 64 floats, so each stays 256-byte aligned.
inline constexpr std::size_t lt_chunk_stride(int in, int out) {
  return (static_cast<std::size_t>(in) * out + 63) / 64 * 64;
}

}  // namespace detail

// lt_mlp<Net>: forward and backward of a whole mlp batch through cuBLASLt. Interface as batch_mlp<exec::cuda>.
template <class Net>
class lt_mlp {
  static_assert(is_mlp<Net>, "gmi::nn::lt_mlp: Net must be a gmi::nn::mlp<...>");
  static_assert(std::is_same_v<typename Net::scalar, float>, "gmi::nn::lt_mlp: the CUDA paths run float");
  using L = typename Net::layers;
  using Act = typename Net::activation;
  using OutAct = typename Net::output_activation;
  using lay = detail::lt_layout_of<L>;

 public:
  using net = Net;

  lt_mlp(exec::cuda policy, std::size_t max_batch, const network_config& cfg = {})
      : policy_(policy), max_batch_(max_batch), cfg_(cfg),
        gemm_(static_cast<std::size_t>(cfg.lt_workspace_mib) << 20) {
    validate(cfg);
    gmi::require(max_batch >= 1, "lt_mlp max_batch", max_batch, ">= 1");
    if (cfg.kernels == layer_kernels::wholenet) whole_.emplace(policy, cfg.precision);
    if (cfg.backward == backward_kernels::wholenet) whole_back_.emplace(policy, cfg.precision, max_batch);
    work_ = cuda::device_buffer<float>(2 * max_batch * Net::max_width);
    partial_ = cuda::device_buffer<float>(detail::lt_sum_chunks(max_batch) * Net::max_width);
    {  // the split weight gradients' partials: sized for the most chunks any batch up to max_batch can take
      int dev = 0;
      GMI_CUDA_TRY(cudaGetDevice(&dev));
      GMI_CUDA_TRY(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, dev));
      long long pow2 = 1;
      while (2 * pow2 <= static_cast<long long>(max_batch)) pow2 *= 2;
      std::size_t most = 0;
      for (int l = 0; l < Net::count; ++l) {
        const int c = weight_grad_chunks(cfg_, L::width(l), L::width(l + 1), pow2, sms_);
        if (c > 1) most = std::max(most, c * detail::lt_chunk_stride(L::width(l), L::width(l + 1)));
      }
      if (most > 0) wpart_ = cuda::device_buffer<float>(most);
    }
    if (cfg_.precision == precision::bf16) {
      // The own kernels' backward keeps a third bf16 buffer: its product reads one dz while writing the next.
      w16_ = cuda::device_buffer<__nv_bfloat16>(lay::w16_size);
      h16_ = cuda::device_buffer<__nv_bfloat16>((mma_ ? 3 : 2) * max_batch * lay::max_ld16);
      rec16_ = cuda::device_buffer<__nv_bfloat16>(max_batch * lay::in16_size);
      w16_.fill_bytes(0, policy_.stream);
      h16_.fill_bytes(0, policy_.stream);
      rec16_.fill_bytes(0, policy_.stream);
      if (mma_) {
        wt16_ = cuda::device_buffer<__nv_bfloat16>(lay::wt_size);
        wt16_.fill_bytes(0, policy_.stream);
      }
    } else if (mma_) {  // TF32: the forward reads the fp32 weights in place; the backward a transposed copy
      wt32_ = cuda::device_buffer<float>(lay::wt_size);
      wt32_.fill_bytes(0, policy_.stream);
    }
  }

  static constexpr std::size_t acts_size(std::size_t n) { return n * Net::activation_size; }
  [[nodiscard]] std::size_t max_batch() const noexcept { return max_batch_; }
  [[nodiscard]] const network_config& config() const noexcept { return cfg_; }
  [[nodiscard]] precision mode() const noexcept { return cfg_.precision; }
  // "lt_fp32", "lt_tf32" or "lt_bf16" (cuBLASLt), "mma_tf32" or "mma_bf16" (the own kernels, fused_gemm.cuh).
  [[nodiscard]] const char* path() const noexcept {
    if (whole_) return whole_->path();
    if (mma_) return cfg_.precision == precision::tf32 ? "mma_tf32" : "mma_bf16";
    return cfg_.precision == precision::fp32 ? "lt_fp32" : cfg_.precision == precision::tf32 ? "lt_tf32" : "lt_bf16";
  }
  // The backward's input-gradient chain: "whole_tf32" / "whole_bf16" (network_config::backward wholenet), else
  // "mma_*" (kernels mma) or "lt_*".
  [[nodiscard]] const char* backward_path() const noexcept {
    if (whole_back_) return whole_back_->path();
    return whole_ ? (cfg_.precision == precision::tf32 ? "lt_tf32" : "lt_bf16") : path();
  }
  // Whether the layers run the own tensor-core kernels (network_config::kernels mma at tf32 or bf16).
  [[nodiscard]] bool uses_mma() const noexcept { return mma_; }
  // The stream later calls enqueue on (the plans do not depend on it).
  void set_stream(cudaStream_t s) noexcept {
    policy_.stream = s;
    if (whole_) whole_->set_stream(s);
    if (whole_back_) whole_back_->set_stream(s);
  }
  // The whole-network kernel (kernels wholenet), for callers that feed it their own input and output functors;
  // nullptr otherwise.
  [[nodiscard]] wholenet<Net>* whole() noexcept { return whole_ ? &*whole_ : nullptr; }
  // Plans made so far (one per distinct product shape and pointer alignment).
  [[nodiscard]] std::size_t plans() const noexcept { return gemm_.plans(); }
  // Bias gradients formed by the column-sum kernels so far (0 while every BGRADB epilogue had an algorithm).
  [[nodiscard]] std::size_t bias_sums() const noexcept { return bias_sums_; }
  // Weight gradients formed as chunked products and summed by lt_chunk_sum_kernel so far (weight_grad_chunks).
  [[nodiscard]] std::size_t split_products() const noexcept { return split_products_; }
  // The bf16 input record for a forward of n rows run by the caller (wholenet's record16); the next backward_raw
  // with inputs16_ready reads its layers' bf16 inputs there. nullptr (and nothing kept) unless bf16 and
  // network_config::keep_bf16_inputs.
  __nv_bfloat16* record16_for(std::size_t n) {
    rec16_rows_ = cfg_.precision == precision::bf16 && cfg_.keep_bf16_inputs ? n : 0;
    return rec16_rows_ ? rec16_.data() : nullptr;
  }
  // Where a forward with an activation record leaves the network's outputs ([n][out]): its last layer's record.
  static float* outputs_in(float* acts, std::size_t n) { return acts + n * L::activation_offset(Net::count - 1); }

  void forward(device_span<const float> params, device_span<const float> x, device_span<float> out,
               device_span<float> acts = {}) {
    detail::require_size(params, Net::param_count, "mlp forward: params size");
    const std::size_t n = detail::batch_of(x, Net::in, "mlp forward: x size");
    check_batch(n);
    detail::require_size(out, n * Net::out, "mlp forward: out size");
    if (!acts.empty()) detail::require_size(acts, acts_size(n), "mlp forward: acts size");
    if (n == 0) return;
    forward_raw(params.data(), x.data(), out.data(), acts.empty() ? nullptr : acts.data(), n);
  }

  void backward(device_span<const float> params, device_span<const float> x, device_span<const float> acts,
                device_span<const float> d_out, device_span<float> d_params, device_span<float> d_x = {}) {
    detail::require_size(params, Net::param_count, "mlp backward: params size");
    detail::require_size(d_params, Net::param_count, "mlp backward: d_params size");
    const std::size_t n = detail::batch_of(x, Net::in, "mlp backward: x size");
    check_batch(n);
    detail::require_size(acts, acts_size(n), "mlp backward: acts size");
    detail::require_size(d_out, n * Net::out, "mlp backward: d_out size");
    if (!d_x.empty()) detail::require_size(d_x, n * Net::in, "mlp backward: d_x size");
    if (n == 0) {
      GMI_CUDA_TRY(cudaMemsetAsync(d_params.data(), 0, d_params.size_bytes(), policy_.stream));
      return;
    }
    backward_raw(params.data(), x.data(), acts.data(), d_out.data(), d_params.data(), d_x.empty() ? nullptr : d_x.data(),
                 n);
  }

  // The same without size checks, for callers that checked once (the PPO gradient path): n <= max_batch. With
  // acts, out may be nullptr: the outputs then stay only in the record (outputs_in), saving a copy.
  void forward_raw(const float* params, const float* x, float* out, float* acts, std::size_t n) {
    if (whole_ && !acts) {  // one kernel (and the weight packing)
      whole_->forward(params, x, out, n);
      return;
    }
    const bool bf16 = cfg_.precision == precision::bf16;
    const int N = static_cast<int>(n);
    // bf16 with a record: each layer's bf16 input stays in rec16_ for the backward (no conversion pass there).
    auto in16 = [&](int l) { return acts ? rec16_.data() + n * lay::in16_offset(l) : h16(l); };
    rec16_rows_ = bf16 && acts && cfg_.keep_bf16_inputs ? n : 0;
    if (bf16) {
      convert_weights(params);
      to_bf16(x, n, Net::in, in16(0));
    }
    const float* in = x;
    for (int l = 0; l < Net::count; ++l) {
      const int I = L::width(l), O = L::width(l + 1);
      const bool last = l == Net::count - 1;
      float* dst = acts ? acts + n * L::activation_offset(l) : (last ? out : buffer(l, n));
      float* bias = const_cast<float*>(params + L::bias_offset(l));
      if (mma_) {  // one product with bias + activation (and the copies) in its epilogue
        float* copy = (last && acts && out != dst) ? out : nullptr;
        __nv_bfloat16* next16 = (bf16 && !last) ? in16(l + 1) : nullptr;
        if (last) mma_forward<OutAct>(l, params, in, in16(l), N, dst, copy, next16, bias);
        else mma_forward<Act>(l, params, in, in16(l), N, dst, copy, next16, bias);
        in = dst;
        continue;
      }
      const bool relu_here = last ? std::is_same_v<OutAct, relu> : std::is_same_v<Act, relu>;
      const bool identity_here = last ? std::is_same_v<OutAct, identity> : std::is_same_v<Act, identity>;
      lt_shape s{.trans_a = true, .trans_b = false, .m = O, .n = N, .k = I, .lda = bf16 ? detail::bf16_ld(I) : I,
                 .ldb = bf16 ? detail::bf16_ld(I) : I, .ldd = O, .prec = cfg_.precision,
                 .epilogue = relu_here ? lt_epilogue::relu_bias : lt_epilogue::bias};
      const void* A = bf16 ? static_cast<const void*>(w16_.data() + lay::w16_offset(l))
                           : static_cast<const void*>(params + L::weight_offset(l));
      const void* B = bf16 ? static_cast<const void*>(in16(l)) : static_cast<const void*>(in);
      bool fused = gemm_.run(s, A, B, dst, bias, policy_.stream);
      if (!fused) {
        s.epilogue = lt_epilogue::none;
        gemm_.run(s, A, B, dst, nullptr, policy_.stream);
      }
      const bool act_done = fused && (relu_here || identity_here);
      float* copy = (last && acts && out != dst) ? out : nullptr;
      __nv_bfloat16* next16 = (bf16 && !last) ? in16(l + 1) : nullptr;
      if (!act_done || copy || next16) {
        const std::size_t total = n * static_cast<std::size_t>(O);
        const float* b = fused ? nullptr : bias;
        if (last)
          detail::lt_forward_post_kernel<OutAct><<<detail::lt_blocks(total, 256), 256, 0, policy_.stream>>>(
              dst, b, !act_done, n, O, copy, next16, detail::bf16_ld(O));
        else
          detail::lt_forward_post_kernel<Act><<<detail::lt_blocks(total, 256), 256, 0, policy_.stream>>>(
              dst, b, !act_done, n, O, copy, next16, detail::bf16_ld(O));
        GMI_CUDA_TRY(cudaGetLastError());
      }
      in = dst;
    }
  }

  // bf16_weights_ready: the last forward_raw converted these same params (its bf16 weights are reused; TF32 with
  // the own kernels converts here in any case: its forward reads the fp32 weights in place) and, where it kept a
  // record of these n rows, ran on these x and acts: its bf16 layer inputs are reused too (no to_bf16 passes).
  // inputs16_ready alone: only the inputs (record16_for's, the caller's forward on these x and acts).
  void backward_raw(const float* params, const float* x, const float* acts, const float* d_out, float* d_params,
                    float* d_x, std::size_t n, bool bf16_weights_ready = false, bool inputs16_ready = false) {
    const bool bf16 = cfg_.precision == precision::bf16;
    const int N = static_cast<int>(n);
    constexpr int last = Net::count - 1;
    // The chain kernel packs its own weights; the weight gradients read none.
    if (whole_back_) whole_back_->run(params, acts, d_out, d_x, n);
    else if (bf16 ? !bf16_weights_ready : mma_) convert_weights(params);
    const bool kept16 = bf16 && (bf16_weights_ready || inputs16_ready) && rec16_rows_ == n;  // the forward's bf16 inputs (rec16_)
    int dz_slot = 1;  // the own kernels' backward: dz16 alternates between h16 slots 1 and 2
    __nv_bfloat16* in16 = bf16 ? h16(0) : nullptr;  // the layer's input in bf16
    __nv_bfloat16* dz16 = bf16 ? h16(1) : nullptr;  // the layer's dz in bf16
    const float* dz = d_out;
    bool sums_ready = false;  // partial_ holds stage one of dz's column sums (the dz pass formed it)
    if (!whole_back_ && (bf16 || !std::is_same_v<OutAct, identity>)) {
      dz = dz_pass<OutAct>(d_out, acts + n * L::activation_offset(last), n, Net::out, buffer(last, n), dz16);
      sums_ready = cfg_.fuse_dz_sums;
    }
    for (int l = last; l >= 0; --l) {
      const int I = L::width(l), O = L::width(l + 1);
      const float* in = l == 0 ? x : acts + n * L::activation_offset(l - 1);
      // The chain kernel's dz of this layer (TF32: fp32; bf16: bf16 and its tiles' column sums, tiles in order).
      const float* tile_sums = whole_back_ ? whole_back_->tile_sums(l, n) : nullptr;
      const float* sums = tile_sums ? tile_sums : partial_.data();
      const std::size_t sum_chunks = tile_sums ? whole_back_->tiles(n) : detail::lt_sum_chunks(n);
      if (whole_back_) {
        dz = whole_back_->dz(l, n);
        dz16 = const_cast<__nv_bfloat16*>(whole_back_->dz16(l, n));
      }
      if (kept16) in16 = rec16_.data() + n * lay::in16_offset(l);
      else if (bf16) to_bf16(in, n, I, in16);
      // dW^T (I x O, column-major) = X^T (I x n) dZ (n x O); the bias gradient = the sum of dZ over the samples.
      float* dW = d_params + L::weight_offset(l);
      float* db = d_params + L::bias_offset(l);
      lt_shape s{.trans_a = false, .trans_b = true, .m = I, .n = O, .k = N, .lda = bf16 ? detail::bf16_ld(I) : I,
                 .ldb = bf16 ? detail::bf16_ld(O) : O, .ldd = I, .prec = cfg_.precision,
                 .epilogue = lt_epilogue::bias_grad_b};
      const void* A = bf16 ? static_cast<const void*>(in16) : static_cast<const void*>(in);
      const void* B = bf16 ? static_cast<const void*>(dz16) : static_cast<const void*>(dz);
      // Each chunk of rows its own product (chunks x the blocks of one long-k product), then the sums in order;
      // one product where cuBLASLt has no algorithm for the batch (its chunks less aligned than the whole).
      const int chunks = weight_grad_chunks(cfg_, I, O, N, sms_);
      const std::size_t stride = detail::lt_chunk_stride(I, O), count = static_cast<std::size_t>(I) * O;
      lt_shape c = s;
      c.epilogue = lt_epilogue::none;
      c.k = N / chunks;
      c.batch = chunks;
      c.stride_a = static_cast<long long>(c.k) * c.lda;
      c.stride_b = static_cast<long long>(c.k) * c.ldb;
      c.stride_d = static_cast<long long>(stride);
      if (chunks > 1 && gemm_.can_implement(c, A, B, wpart_.data())) {
        // The bias gradient's column partials (unless the dz pass formed them), the product, then one launch
        // sums both.
        if (!sums_ready && !tile_sums) detail::lt_column_partial(dz, n, O, partial_.data(), policy_.stream);
        gemm_.run(c, A, B, wpart_.data(), nullptr, policy_.stream);
        detail::lt_chunk_sum_kernel<<<detail::lt_blocks(count + O, 256), 256, 0, policy_.stream>>>(
            wpart_.data(), chunks, stride, count, dW, sums, sum_chunks, O, db);
        GMI_CUDA_TRY(cudaGetLastError());
        ++split_products_;
      } else if (!gemm_.run(s, A, B, dW, db, policy_.stream)) {
        s.epilogue = lt_epilogue::none;
        gemm_.run(s, A, B, dW, nullptr, policy_.stream);
        if (tile_sums) {  // the bias gradient alone: the tiles' sums in order
          detail::lt_chunk_sum_kernel<<<detail::lt_blocks(O, 256), 256, 0, policy_.stream>>>(
              nullptr, 0, 0, 0, nullptr, tile_sums, sum_chunks, O, db);
          GMI_CUDA_TRY(cudaGetLastError());
        } else if (sums_ready) {
          detail::lt_column_finish(partial_.data(), n, O, db, policy_.stream);
        } else {
          detail::lt_column_sum(dz, n, O, partial_.data(), db, policy_.stream);
        }
        ++bias_sums_;
      }
      sums_ready = false;
      if (whole_back_ || (l == 0 && !d_x)) continue;  // the chain kernel formed dX and every dz
      if (mma_) {  // dX W product with the layer below's dz = dX * Act'(y) in its epilogue
        float* dst = l > 0 ? buffer(l - 1, n) : d_x;
        __nv_bfloat16* next16 = (bf16 && l > 0) ? h16_slot(3 - dz_slot) : nullptr;
        mma_backward(l, dz, dz16, N, dst, next16, l > 0 ? acts + n * L::activation_offset(l - 1) : nullptr);
        dz = dst;
        if (next16) {
          dz_slot = 3 - dz_slot;
          dz16 = next16;
        }
        continue;
      }
      // dX^T (I x n) = W^T (I x O: W's row-major storage read column-major) dZ^T (O x n).
      float* dst = l > 0 ? buffer(l - 1, n) : d_x;
      lt_shape t{.trans_a = false, .trans_b = false, .m = I, .n = N, .k = O, .lda = bf16 ? detail::bf16_ld(I) : I,
                 .ldb = bf16 ? detail::bf16_ld(O) : O, .ldd = I, .prec = cfg_.precision, .epilogue = lt_epilogue::none};
      const void* W = bf16 ? static_cast<const void*>(w16_.data() + lay::w16_offset(l))
                           : static_cast<const void*>(params + L::weight_offset(l));
      gemm_.run(t, W, B, dst, nullptr, policy_.stream);
      if (l > 0) {
        dz = dz_pass<Act>(dst, acts + n * L::activation_offset(l - 1), n, I, dst, dz16);
        sums_ready = cfg_.fuse_dz_sums;
      }
    }
  }

 private:
  void check_batch(std::size_t n) const {
    gmi::require(n <= max_batch_, "mlp batch size", n,
                 "<= max_batch " + std::to_string(max_batch_) + " given at construction");
  }
  // Layer l's forward through fused_gemm.cuh: dst = A(in W^T + bias), also into copy and next16 where given.
  template <class A>
  void mma_forward(int l, const float* params, const float* in, const __nv_bfloat16* in16, int N, float* dst,
                   float* copy, __nv_bfloat16* next16, const float* bias) {
    const int I = L::width(l), O = L::width(l + 1);
    const mma_bias_act<A> epi{bias};
    if (cfg_.precision == precision::bf16) {
      mma_gemm_args<__nv_bfloat16> g{.a = in16, .b = w16_.data() + lay::w16_offset(l), .M = N, .N = O, .K = I,
                                     .lda = detail::bf16_ld(I), .ldb = detail::bf16_ld(I), .d = dst, .ldd = O,
                                     .d2 = copy, .ldd2 = O, .d16 = next16, .ld16 = detail::bf16_ld(O)};
      mma_gemm(g, epi, policy_.stream);
    } else {
      mma_gemm_args<float> g{.a = in, .b = params + L::weight_offset(l), .M = N, .N = O, .K = I, .lda = I, .ldb = I,
                             .d = dst, .ldd = O, .d2 = copy, .ldd2 = O, .d16 = next16,
                             .ld16 = detail::bf16_ld(O)};
      mma_gemm(g, epi, policy_.stream);
    }
  }
  // Layer l's input gradient dZ W through fused_gemm.cuh into dst ([n][in]); with y_below (the layer below's
  // outputs) times Act'(y_below), also into next16 (bf16) where given.
  void mma_backward(int l, const float* dz, const __nv_bfloat16* dz16, int N, float* dst, __nv_bfloat16* next16,
                    const float* y_below) {
    const int I = L::width(l), O = L::width(l + 1);
    auto launch = [&](auto epi) {
      if (cfg_.precision == precision::bf16) {
        mma_gemm_args<__nv_bfloat16> g{.a = dz16, .b = wt16_.data() + lay::wt_offset(l), .M = N, .N = I, .K = O,
                                       .lda = detail::bf16_ld(O), .ldb = detail::bf16_ld(O), .d = dst, .ldd = I,
                                       .d16 = next16, .ld16 = detail::bf16_ld(I)};
        mma_gemm(g, epi, policy_.stream);
      } else {
        mma_gemm_args<float> g{.a = dz, .b = wt32_.data() + lay::wt_offset(l), .M = N, .N = I, .K = O, .lda = O,
                               .ldb = detail::bf16_ld(O), .d = dst, .ldd = I};
        mma_gemm(g, epi, policy_.stream);
      }
    };
    if (y_below) launch(mma_times_grad<Act>{y_below, I});
    else launch(mma_plain{});
  }

  // dz = g * Act'(y) ([n][w]) into dz32 (may alias g) and dz16; returns where the fp32 dz is (nullptr: nowhere).
  // network_config::fuse_dz_sums: the pass also forms stage one of dz's column sums (the bias gradient) in
  // partial_, and a bf16 backward without the own kernels, whose products read only dz16 and whose bias gradients
  // then come from partial_ (or the product's BGRADB epilogue on dz16), stores no fp32 dz.
  template <class A>
  const float* dz_pass(const float* g, const float* y, std::size_t n, int w, float* dz32, __nv_bfloat16* dz16) {
    const int ld16 = detail::bf16_ld(w);
    if (!cfg_.fuse_dz_sums) {
      detail::lt_dz<A>(g, y, n, w, dz32, dz16, ld16, policy_.stream);
      return dz32;
    }
    if (dz16 && !mma_) dz32 = nullptr;
    detail::lt_dz_partials<A>(g, y, n, w, dz32, dz16, ld16, partial_.data(), policy_.stream);
    return dz32;
  }
  // Two [n][max_width] fp32 buffers, alternating by layer.
  float* buffer(int l, std::size_t n) { return work_.data() + static_cast<std::size_t>(l % 2) * n * Net::max_width; }
  // Two [n][bf16_ld(max_width)] bf16 buffers: forward alternates them by layer; backward keeps a layer's input in
  // the first and its dz in the second.
  __nv_bfloat16* h16(int l) { return h16_slot(l % 2); }
  __nv_bfloat16* h16_slot(int k) { return h16_.data() + static_cast<std::size_t>(k) * max_batch_ * lay::max_ld16; }

  void convert_weights(const float* params) {
    if (mma_) {
      const dim3 grid(static_cast<unsigned>(detail::lt_weight_tiles<L>)), block(32, 8);
      if (cfg_.precision == precision::bf16)
        detail::lt_weights_mma_kernel<L, __nv_bfloat16><<<grid, block, 0, policy_.stream>>>(params, w16_.data(),
                                                                                          wt16_.data());
      else
        detail::lt_weights_mma_kernel<L, float><<<grid, block, 0, policy_.stream>>>(params, nullptr, wt32_.data());
      GMI_CUDA_TRY(cudaGetLastError());
      return;
    }
    detail::lt_weights_to_bf16_kernel<L>
        <<<detail::lt_blocks(Net::param_count, 256), 256, 0, policy_.stream>>>(params, w16_.data());
    GMI_CUDA_TRY(cudaGetLastError());
  }
  void to_bf16(const float* src, std::size_t n, int w, __nv_bfloat16* dst) {
    detail::lt_to_bf16_kernel<<<detail::lt_blocks(n * w, 256), 256, 0, policy_.stream>>>(src, n, w, dst,
                                                                                          detail::bf16_ld(w));
    GMI_CUDA_TRY(cudaGetLastError());
  }

  exec::cuda policy_;
  std::size_t max_batch_;
  network_config cfg_;
  bool mma_ = cfg_.kernels == layer_kernels::mma && cfg_.precision != precision::fp32;
  lt_gemm gemm_;
  cuda::device_buffer<float> work_, partial_;  // partial_: the bias gradients' column sums where BGRADB is missing
  std::size_t bias_sums_ = 0, split_products_ = 0;
  int sms_ = 1;
  cuda::device_buffer<float> wpart_;  // the split weight gradients' partials (weight_grad_chunks)
  cuda::device_buffer<__nv_bfloat16> w16_, h16_, wt16_;  // wt16_: the own kernels' transposed bf16 weights
  cuda::device_buffer<__nv_bfloat16> rec16_;             // bf16 layer inputs of the last forward with a record
  std::size_t rec16_rows_ = 0;                           // its rows (0: none kept)
  cuda::device_buffer<float> wt32_;                        // the own kernels' transposed TF32 weights
  std::optional<wholenet<Net>> whole_;                     // kernels wholenet: the forward without a record
  std::optional<wholenet_backward<Net>> whole_back_;       // backward wholenet: the input-gradient chain
};

}  // namespace gmi::nn

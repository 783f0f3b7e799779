#pragma once
// One matrix product with a fused epilogue through cuBLASLt, planned once per shape: lt_gemm keeps a cache from
// (shape, types, epilogue, pointer alignments) to the matmul descriptor, the matrix layouts and the algorithm the
// heuristic picked, and one workspace allocated at construction. A call only sets the pointers and launches, so
// calls can be captured in a CUDA graph (the first call of a new shape queries the heuristic on the host, which
// a capture allows). Where the heuristic has no algorithm for a fused epilogue (bias gradients in some type
// combinations), the plan records that and the caller does that part itself. Column-major, as cuBLAS.

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <tuple>
#include <utility>

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/nn/lt_align.hpp>
#include <gmi/nn/network_config.hpp>

namespace gmi::nn {

namespace detail {

inline void cublaslt_check(cublasStatus_t s, const char* expr, std::source_location where) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw gmi::cuda_error(static_cast<int>(s), std::string(expr) + ": cuBLASLt status " + std::to_string(int(s)), where);
  }
}
#define GMI_NN_CUBLASLT_TRY(expr) ::gmi::nn::detail::cublaslt_check((expr), #expr, ::std::source_location::current())

// Owning wrappers of the cuBLASLt descriptor types (deleter = the matching destroy call).
struct lt_desc_deleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const noexcept { cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* d) const noexcept { cublasLtMatrixLayoutDestroy(d); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* d) const noexcept { cublasLtMatmulPreferenceDestroy(d); }
};
using lt_matmul_desc = std::unique_ptr<cublasLtMatmulDescOpaque_t, lt_desc_deleter>;
using lt_layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, lt_desc_deleter>;
using lt_preference = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, lt_desc_deleter>;

class cublaslt_handle {
 public:
  cublaslt_handle() { GMI_NN_CUBLASLT_TRY(cublasLtCreate(&h_)); }
  cublaslt_handle(const cublaslt_handle&) = delete;
  cublaslt_handle& operator=(const cublaslt_handle&) = delete;
  ~cublaslt_handle() { cublasLtDestroy(h_); }
  [[nodiscard]] cublasLtHandle_t get() const noexcept { return h_; }

 private:
  cublasLtHandle_t h_ = nullptr;
};

inline std::uint32_t alignment_of(const void* p) { return pointer_alignment(p); }

inline cudaDataType_t data_type(precision p) { return p == precision::bf16 ? CUDA_R_16BF : CUDA_R_32F; }
inline cublasComputeType_t compute_type(precision p) {
  return p == precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

}  // namespace detail

// What one product fuses after D = op(A) op(B).
enum class lt_epilogue {
  none,            // D as it is
  bias,            // D + bias (bias: one value per row of D)
  relu_bias,       // max(D + bias, 0)
  bias_grad_b,     // D as it is; bias = the sum of op(B) over the k dimension (one value per column of D)
};

// One GEMM's shape in cuBLAS terms: D (m x n, ldd) = op_a(A) op_b(B); A and B in `prec`'s input type, D fp32.
// batch > 1: that many products at once, the i-th reading A + i * stride_a and B + i * stride_b (elements of the
// input type) and writing D + i * stride_d (floats); planned for the least aligned matrix of the batch.
struct lt_shape {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldd = 0;
  precision prec = precision::fp32;
  lt_epilogue epilogue = lt_epilogue::none;
  int batch = 1;
  long long stride_a = 0, stride_b = 0, stride_d = 0;
  auto tie() const {
    return std::tie(trans_a, trans_b, m, n, k, lda, ldb, ldd, prec, epilogue, batch, stride_a, stride_b, stride_d);
  }
};

class lt_gemm {
 public:
  explicit lt_gemm(std::size_t workspace_bytes = std::size_t{32} << 20)
      : workspace_(workspace_bytes > 0 ? workspace_bytes : 1), workspace_bytes_(workspace_bytes) {}

  // Whether the heuristic offers an algorithm for this shape with these pointer alignments (plans it if so).
  bool can_implement(const lt_shape& s, const void* a, const void* b, const void* d) {
    return plan_for(s, a, b, d).ok;
  }

  // D = op(A) op(B) with the epilogue on `stream`. bias: the epilogue's vector (read for bias/relu_bias, written
  // for bias_grad_b). Returns false, launching nothing, when no algorithm implements the shape with its epilogue
  // or the bias is aligned to less than lt_bias_alignment (the caller then asks again with lt_epilogue::none and
  // does the epilogue itself); a shape without an epilogue that has no algorithm throws.
  bool run(const lt_shape& s, const void* a, const void* b, float* d, float* bias, cudaStream_t stream) {
    // The heuristic does not know the bias's alignment (lt_align.hpp): an under-aligned one is the caller's.
    gmi::require(s.batch == 1 || s.epilogue == lt_epilogue::none, "lt_gemm batched epilogue", int(s.epilogue),
                 "none (0) when batch > 1");
    if (s.epilogue != lt_epilogue::none && !lt_bias_epilogue_fits(bias)) return false;
    plan& p = plan_for(s, a, b, d);
    if (!p.ok) {
      if (s.epilogue != lt_epilogue::none) return false;
      throw gmi::cuda_error(static_cast<int>(CUBLAS_STATUS_NOT_SUPPORTED),
                            "lt_gemm: no cuBLASLt algorithm for m " + std::to_string(s.m) + " n " + std::to_string(s.n) +
                                " k " + std::to_string(s.k) + " in " + precision_name(s.prec));
    }
    if (s.epilogue != lt_epilogue::none) {
      GMI_NN_CUBLASLT_TRY(cublasLtMatmulDescSetAttribute(p.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                         sizeof(bias)));
    }
    const float alpha = 1.0f, beta = 0.0f;
    check_launch(cublasLtMatmul(lt_.get(), p.desc.get(), &alpha, a, p.a.get(), b, p.b.get(), &beta, d, p.d.get(), d,
                                p.d.get(), &p.algo, workspace_.data(), workspace_bytes_, stream),
                 s);
    return true;
  }

  // D = op(A) op(B) + C (C: the layout of D, may not alias it; no epilogue), for recurrences such as a linear
  // system's substeps. Throws when no algorithm implements the shape.
  void run_accumulate(const lt_shape& s, const void* a, const void* b, const float* c, float* d, cudaStream_t stream) {
    gmi::require(s.epilogue == lt_epilogue::none, "lt_gemm run_accumulate epilogue", int(s.epilogue), "none (0)");
    // Planned for the less aligned of C and D: the plan assumes one alignment for both.
    const void* planned_d = detail::alignment_of(c) < detail::alignment_of(d) ? static_cast<const void*>(c) : d;
    plan& p = plan_for(s, a, b, planned_d);
    if (!p.ok)
      throw gmi::cuda_error(static_cast<int>(CUBLAS_STATUS_NOT_SUPPORTED),
                            "lt_gemm: no cuBLASLt algorithm for m " + std::to_string(s.m) + " n " + std::to_string(s.n) +
                                " k " + std::to_string(s.k) + " in " + precision_name(s.prec) + " with C");
    const float alpha = 1.0f, beta = 1.0f;
    check_launch(cublasLtMatmul(lt_.get(), p.desc.get(), &alpha, a, p.a.get(), b, p.b.get(), &beta, c, p.d.get(), d,
                                p.d.get(), &p.algo, workspace_.data(), workspace_bytes_, stream),
                 s);
  }

  [[nodiscard]] std::size_t plans() const noexcept { return plans_.size(); }

 private:
  struct plan {
    bool ok = false;
    detail::lt_matmul_desc desc;
    detail::lt_layout a, b, d;
    cublasLtMatmulAlgo_t algo{};
  };
  using key = std::tuple<bool, bool, int, int, int, int, int, int, precision, lt_epilogue, int, long long, long long,
                         long long, std::uint32_t, std::uint32_t, std::uint32_t>;

  // A failed cublasLtMatmul names its product (status 13, execution failed, is often an earlier kernel's fault on
  // the stream, surfacing here).
  static void check_launch(cublasStatus_t st, const lt_shape& s,
                           std::source_location where = std::source_location::current()) {
    if (st == CUBLAS_STATUS_SUCCESS) return;
    throw gmi::cuda_error(static_cast<int>(st),
                          "cublasLtMatmul (lt_gemm m " + std::to_string(s.m) + " n " + std::to_string(s.n) + " k " +
                              std::to_string(s.k) + ", epilogue " + std::to_string(int(s.epilogue)) + ", " +
                              precision_name(s.prec) + "): cuBLASLt status " + std::to_string(int(st)),
                          where);
  }

  static detail::lt_layout layout(cudaDataType_t t, int rows, int cols, int ld, int batch = 1, long long stride = 0) {
    cublasLtMatrixLayout_t l = nullptr;
    GMI_NN_CUBLASLT_TRY(cublasLtMatrixLayoutCreate(&l, t, static_cast<std::uint64_t>(rows),
                                                   static_cast<std::uint64_t>(cols), ld));
    detail::lt_layout owned(l);
    if (batch > 1) {
      const std::int32_t count = batch;
      const std::int64_t offset = stride;
      GMI_NN_CUBLASLT_TRY(
          cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
      GMI_NN_CUBLASLT_TRY(
          cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offset, sizeof(offset)));
    }
    return owned;
  }

  plan& plan_for(const lt_shape& s, const void* a, const void* b, const void* d) {
    std::uint32_t al_a = detail::alignment_of(a), al_b = detail::alignment_of(b), al_d = detail::alignment_of(d);
    if (s.batch > 1) {  // every matrix of the batch as aligned as the least aligned: the stride's bytes count too
      const auto bytes = [](long long stride, std::size_t elem) {
        return pointer_alignment(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(stride) * elem));
      };
      const std::size_t in_bytes = s.prec == precision::bf16 ? 2 : 4;
      al_a = std::min(al_a, bytes(s.stride_a, in_bytes));
      al_b = std::min(al_b, bytes(s.stride_b, in_bytes));
      al_d = std::min(al_d, bytes(s.stride_d, sizeof(float)));
    }
    const key k = std::tuple_cat(s.tie(), std::make_tuple(al_a, al_b, al_d));
    auto it = plans_.find(k);
    if (it != plans_.end()) return it->second;
    plan p;
    cublasLtMatmulDesc_t desc = nullptr;
    GMI_NN_CUBLASLT_TRY(cublasLtMatmulDescCreate(&desc, detail::compute_type(s.prec), CUDA_R_32F));
    p.desc.reset(desc);
    const cublasOperation_t ta = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    GMI_NN_CUBLASLT_TRY(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    GMI_NN_CUBLASLT_TRY(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    if (s.epilogue == lt_epilogue::bias) epi = CUBLASLT_EPILOGUE_BIAS;
    if (s.epilogue == lt_epilogue::relu_bias) epi = CUBLASLT_EPILOGUE_RELU_BIAS;
    if (s.epilogue == lt_epilogue::bias_grad_b) epi = CUBLASLT_EPILOGUE_BGRADB;
    GMI_NN_CUBLASLT_TRY(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
    if (s.epilogue != lt_epilogue::none) {
      const cudaDataType_t bias_type = CUDA_R_32F;  // fp32 biases and bias gradients in every precision
      GMI_NN_CUBLASLT_TRY(
          cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
    }
    const cudaDataType_t in = detail::data_type(s.prec);
    p.a = s.trans_a ? layout(in, s.k, s.m, s.lda, s.batch, s.stride_a)
                    : layout(in, s.m, s.k, s.lda, s.batch, s.stride_a);
    p.b = s.trans_b ? layout(in, s.n, s.k, s.ldb, s.batch, s.stride_b)
                    : layout(in, s.k, s.n, s.ldb, s.batch, s.stride_b);
    p.d = layout(CUDA_R_32F, s.m, s.n, s.ldd, s.batch, s.stride_d);
    cublasLtMatmulPreference_t pref = nullptr;
    GMI_NN_CUBLASLT_TRY(cublasLtMatmulPreferenceCreate(&pref));
    detail::lt_preference owned(pref);
    const std::uint64_t ws = workspace_bytes_;
    GMI_NN_CUBLASLT_TRY(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    GMI_NN_CUBLASLT_TRY(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof(al_a)));
    GMI_NN_CUBLASLT_TRY(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof(al_b)));
    GMI_NN_CUBLASLT_TRY(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_d, sizeof(al_d)));
    GMI_NN_CUBLASLT_TRY(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_d, sizeof(al_d)));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt_.get(), desc, p.a.get(), p.b.get(), p.d.get(),
                                                             p.d.get(), pref, 1, &result, &found);
    p.ok = st == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS;
    if (p.ok) p.algo = result.algo;
    else if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED) GMI_NN_CUBLASLT_TRY(st);
    return plans_.emplace(k, std::move(p)).first->second;
  }

  detail::cublaslt_handle lt_;
  cuda::device_buffer<std::byte> workspace_;
  std::size_t workspace_bytes_;
  std::map<key, plan> plans_;
};

}  // namespace gmi::nn

#pragma once
// The run-time choices of how a network's batched passes run on the GPU: the precision of the matrix products
// and the width at which the cuBLASLt layers (lt_mlp.cuh) take over from the one-thread-per-sample kernels.
// Host-only, so configuration code and its tests need no nvcc.

#include <string>
#include <string_view>

#include <gmi/core/error.hpp>

namespace gmi::nn {

// Precision of the matrix products of the cuBLASLt path. Accumulation and the stored weights stay fp32 in all.
enum class precision {
  fp32,  // CUBLAS_COMPUTE_32F: plain fp32 products on CUDA cores
  tf32,  // CUBLAS_COMPUTE_32F_FAST_TF32: fp32 storage, tensor-core products with 10-bit mantissas
  bf16,  // bf16 copies of weights and layer inputs, fp32 accumulation and outputs, fp32 master weights
};

inline constexpr const char* precision_name(precision p) {
  return p == precision::fp32 ? "fp32" : p == precision::tf32 ? "tf32" : "bf16";
}

// "fp32" | "tf32" | "bf16"; anything else is a config_error naming the flag.
inline precision parse_precision(std::string_view s, std::string_view what = "network precision") {
  if (s == "fp32") return precision::fp32;
  if (s == "tf32") return precision::tf32;
  if (s == "bf16") return precision::bf16;
  throw gmi::config_error(gmi::got_need(what, std::string(s), "fp32, tf32 or bf16"));
}

// Which kernels run the wide path's layers at tf32 / bf16 (fp32 always takes cuBLASLt).
enum class layer_kernels {
  cublaslt,  // cuBLASLt products (bias / ReLU epilogues), ELU and dz = dX * Act'(y) as separate passes
  mma,       // own tensor-core products (fused_gemm.cuh) with bias + activation and the dz product in registers
  wholenet,  // the forward without an activation record (serving, collection) as one kernel (wholenet.cuh); the
             // rest as cublaslt
  automatic,  // "auto": the serving and PPO tiers pick cublaslt or wholenet by rl/wide_rule.hpp's measured rule;
              // a network built directly (lt_mlp) takes cublaslt
};

inline constexpr const char* layer_kernels_name(layer_kernels k) {
  return k == layer_kernels::cublaslt ? "cublaslt"
         : k == layer_kernels::mma    ? "mma"
         : k == layer_kernels::wholenet ? "wholenet"
                                        : "auto";
}

// "cublaslt" | "mma" | "wholenet" | "auto"; anything else is a config_error naming the flag.
inline layer_kernels parse_layer_kernels(std::string_view s, std::string_view what = "network kernels") {
  if (s == "cublaslt") return layer_kernels::cublaslt;
  if (s == "mma") return layer_kernels::mma;
  if (s == "wholenet") return layer_kernels::wholenet;
  if (s == "auto") return layer_kernels::automatic;
  throw gmi::config_error(gmi::got_need(what, std::string(s), "cublaslt, mma, wholenet or auto"));
}

// Which kernels run the backward's input-gradient chain (dX = dZ W and dz = dX * Act'(y) below each layer) at tf32
// / bf16; the weight gradients stay cuBLASLt products in all.
enum class backward_kernels {
  cublaslt,   // per layer a cuBLASLt dX product and a dz pass (or the own product with kernels mma)
  wholenet,   // the whole chain as one kernel, dz kept on chip between layers (wholenet_backward.cuh)
  automatic,  // "auto": cublaslt until a GPU run shows wholenet faster (bench/wide/device_wide10.sh)
};

inline constexpr const char* backward_kernels_name(backward_kernels k) {
  return k == backward_kernels::cublaslt ? "cublaslt" : k == backward_kernels::wholenet ? "wholenet" : "auto";
}

// "cublaslt" | "wholenet" | "auto"; anything else is a config_error naming the flag.
inline backward_kernels parse_backward_kernels(std::string_view s, std::string_view what = "network backward") {
  if (s == "cublaslt") return backward_kernels::cublaslt;
  if (s == "wholenet") return backward_kernels::wholenet;
  if (s == "auto") return backward_kernels::automatic;
  throw gmi::config_error(gmi::got_need(what, std::string(s), "cublaslt, wholenet or auto"));
}

struct network_config {
  // fp32 until the learning suite shows tf32/bf16 reach the same returns.
  nn::precision precision = nn::precision::fp32;
  // A network whose widest layer has at least this many units runs its batched passes through cuBLASLt; a
  // narrower one keeps the shared-memory kernels where they fit. The default is the width where those
  // kernels stop fitting (mlp.cuh's fused_plan); bench/wide measures where the crossover is.
  int lt_min_width = 129;
  // cuBLASLt workspace, allocated once per network (split-K and some Hopper kernels need it).
  int lt_workspace_mib = 32;
  // The layers' kernels at tf32 / bf16: by default the rule of rl/wide_rule.hpp (default_layer_kernels), which
  // follows bench/wide/device_wholenet.sh's wholenet-against-cublaslt measurements.
  layer_kernels kernels = layer_kernels::automatic;
  // The weight gradients' products (dW = X^T dZ over the batch: a long k, a small m x n): 1 runs each as one
  // cuBLASLt product with the bias gradient in its epilogue; k >= 2 splits the batch into at most k chunks of rows
  // (a power of two, by weight_grad_chunks below), one strided-batched product writes each chunk's partial dW and
  // one kernel sums the partials in chunk order (the same sums on every run); 0 (auto): 16 at bf16, 1 otherwise.
  int weight_grad_chunks = 0;
  // bf16: a forward with an activation record (lt_mlp's, or the whole-network kernel's in PPO's minibatch) keeps
  // every layer's bf16 input for the backward's weight gradients, which then convert nothing; false: the backward
  // converts the fp32 record per layer (the path before; the same bits, one pass per layer more).
  bool keep_bf16_inputs = true;
  // The backward's dz pass (dz = dX * Act'(y) below each layer) also forms the first stage of the bias gradient's
  // column sums (nn/detail/lt_column_sums.cuh), so a chunked weight gradient or one without a BGRADB epilogue reads
  // no dz again, and a bf16 cuBLASLt backward stores no fp32 dz (its products read the bf16 copy); the same bits.
  // false (the default): a dz pass, then a column-sum pass where needed. Fused measured 0.93-1.02x of separate
  // passes in PPO training on one H200 (bench/results/wide/*-ba47b45-wide2*): the fused pass's column partials
  // cost more than the pass they save at these widths.
  bool fuse_dz_sums = false;
  // The backward's input-gradient chain at tf32 / bf16 (fp32 refuses wholenet): auto takes cublaslt.
  backward_kernels backward = backward_kernels::automatic;
};

// Largest cap of weight_grad_chunks.
inline constexpr int max_weight_grad_chunks = 64;

// The chunks of rows that one layer's weight gradient (in x out weights, n rows) is split into: the largest power
// of two up to the config's cap (auto: 16 at bf16, 1 otherwise) that divides n into chunks of at least 256 rows,
// doubling only while the product's 128 x 128 tiles times the chunks stay under one wave of `sms` blocks.
inline constexpr int weight_grad_chunks(const network_config& c, int in, int out, long long n, int sms) {
  const int cap = c.weight_grad_chunks > 0 ? c.weight_grad_chunks : (c.precision == precision::bf16 ? 16 : 1);
  const long long tiles = static_cast<long long>((in + 127) / 128) * ((out + 127) / 128);
  int s = 1;
  while (2 * s <= cap && tiles * s < sms && n % (2 * s) == 0 && n / (2 * s) >= 256) s *= 2;
  return s;
}

// Throws config_error ("got X, need Y") on the first bad field.
inline void validate(const network_config& c) {
  const int p = static_cast<int>(c.precision);
  gmi::require(p >= 0 && p <= 2, "network precision", p, "fp32 (0), tf32 (1) or bf16 (2)");
  gmi::require(c.lt_min_width >= 1, "network lt_min_width", c.lt_min_width, ">= 1");
  gmi::require(c.lt_workspace_mib >= 0 && c.lt_workspace_mib <= 1024, "network lt_workspace_mib", c.lt_workspace_mib,
               "0 to 1024");
  const int k = static_cast<int>(c.kernels);
  gmi::require(k >= 0 && k <= 3, "network kernels", k, "cublaslt (0), mma (1), wholenet (2) or auto (3)");
  const int b = static_cast<int>(c.backward);
  gmi::require(b >= 0 && b <= 2, "network backward", b, "cublaslt (0), wholenet (1) or auto (2)");
  gmi::require(c.weight_grad_chunks >= 0 && c.weight_grad_chunks <= max_weight_grad_chunks,
               "network weight_grad_chunks", c.weight_grad_chunks, "0 (auto) to 64");
}

// Whether a network whose widest layer is max_width runs through cuBLASLt, given whether the shared-memory
// kernels can hold it at all.
inline constexpr bool uses_lt(const network_config& c, int max_width, bool small_kernels_fit) {
  return !small_kernels_fit || max_width >= c.lt_min_width;
}

}  // namespace gmi::nn

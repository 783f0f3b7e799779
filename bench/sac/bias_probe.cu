// The mechanism of issue 39's batch-4096 failure, on its own: the weight-gradient products of an Ant critic's
// backward (layers 35 -> 256 -> 256 -> 1) through cuBLASLt with the BGRADB epilogue, fp32, k = the batch, each
// writing dW and its bias gradient into one buffer at a float offset (the device SAC trainer's critic-2 gradient
// sat at offset 75265 of its gradient buffer). Planned as nn::lt_gemm plans (A, B, C, D alignments told to the
// heuristic, the bias's not), but called directly, without lt_gemm's 16-byte bias check, to show what that check
// avoids. One case a process (a fault is sticky): `gmi.bench.sac_bias_probe K OFFSET`; prints one JSON line per
// product: the algorithm's config (id, tile, split-K) and the stream's status after it.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gmi/nn/lt_align.hpp>

namespace {

#define PROBE_LT(expr)                                                                  \
  do {                                                                                  \
    const cublasStatus_t st_ = (expr);                                                  \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                 \
      std::fprintf(stderr, "gmi.bench.sac_bias_probe: %s: status %d\n", #expr, int(st_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

struct product {
  int in, out;  // the layer's widths: dW^T is in x out, the bias gradient out floats
};

// One BGRADB product: dW^T (in x out, ld in) = X^T (in x k) dZ (k x out), bias gradient into db.
void run(cublasLtHandle_t lt, const product& p, int k, const float* x, const float* dz, float* dw, float* db,
         void* ws, std::size_t ws_bytes, cudaStream_t s, std::size_t offset) {
  cublasLtMatmulDesc_t desc = nullptr;
  PROBE_LT(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_T;
  const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BGRADB;
  const cudaDataType_t bias_type = CUDA_R_32F;
  PROBE_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  PROBE_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  PROBE_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  PROBE_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  PROBE_LT(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, p.in, k, p.in));
  PROBE_LT(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, p.out, k, p.out));
  PROBE_LT(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, p.in, p.out, p.in));
  cublasLtMatmulPreference_t pref = nullptr;
  PROBE_LT(cublasLtMatmulPreferenceCreate(&pref));
  const std::uint64_t wsb = ws_bytes;
  const std::uint32_t al_a = gmi::nn::pointer_alignment(x), al_b = gmi::nn::pointer_alignment(dz),
                      al_d = gmi::nn::pointer_alignment(dw);
  PROBE_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
  PROBE_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof al_a));
  PROBE_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof al_b));
  PROBE_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_d, sizeof al_d));
  PROBE_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_d, sizeof al_d));
  cublasLtMatmulHeuristicResult_t h{};
  int found = 0;
  const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &h, &found);
  std::string result;
  int algo_id = -1, tile = -1, splitk = -1;
  if (hs != CUBLAS_STATUS_SUCCESS || found == 0) {
    result = "no_algorithm";
  } else {
    std::size_t got = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&h.algo, CUBLASLT_ALGO_CONFIG_ID, &algo_id, sizeof algo_id, &got);
    cublasLtMatmulAlgoConfigGetAttribute(&h.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &got);
    cublasLtMatmulAlgoConfigGetAttribute(&h.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &got);
    PROBE_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &db, sizeof db));
    const float alpha = 1.0f, beta = 0.0f;
    const cublasStatus_t ms = cublasLtMatmul(lt, desc, &alpha, x, la, dz, lb, &beta, dw, ld, dw, ld, &h.algo, ws,
                                             ws_bytes, s);
    const cudaError_t e = cudaStreamSynchronize(s);
    result = ms != CUBLAS_STATUS_SUCCESS ? "cublasLtMatmul status " + std::to_string(int(ms))
             : e != cudaSuccess          ? std::string(cudaGetErrorName(e))
                                         : "ok";
  }
  std::printf("{\"bench\": \"sac_bias_probe\", \"k\": %d, \"offset\": %zu, \"in\": %d, \"out\": %d, "
              "\"bias_align\": %u, \"d_align\": %u, \"algo_id\": %d, \"tile\": %d, \"splitk\": %d, "
              "\"result\": \"%s\"}\n",
              k, offset, p.in, p.out, gmi::nn::pointer_alignment(db), al_d, algo_id, tile, splitk, result.c_str());
  std::fflush(stdout);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(desc);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "gmi.bench.sac_bias_probe: got %d arguments, need 2: K (rows, 1..65536) OFFSET (floats)\n",
                 argc - 1);
    return 2;
  }
  char *end_k = nullptr, *end_off = nullptr;
  const long k_arg = std::strtol(argv[1], &end_k, 10), off = std::strtol(argv[2], &end_off, 10);
  if (*end_k != '\0' || *end_off != '\0' || k_arg < 1 || k_arg > 65536 || off < 0 || off > (1L << 20)) {
    std::fprintf(stderr, "gmi.bench.sac_bias_probe: got K %s OFFSET %s, need K in 1..65536, OFFSET in 0..1048576\n",
                 argv[1], argv[2]);
    return 2;
  }
  const int k = static_cast<int>(k_arg);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "gmi.bench.sac_bias_probe: no CUDA device: skipped\n");
    return 77;
  }
  const product layers[] = {{35, 256}, {256, 256}, {256, 1}};  // the Ant critic's layers, 256 wide
  std::size_t params = 0;
  for (const product& p : layers) params += std::size_t(p.in) * p.out + p.out;
  float *x = nullptr, *dz = nullptr, *g = nullptr;
  void* ws = nullptr;
  const std::size_t ws_bytes = std::size_t{32} << 20;
  cudaMalloc(&x, std::size_t(k) * 256 * sizeof(float));
  cudaMalloc(&dz, std::size_t(k) * 256 * sizeof(float));
  cudaMalloc(&g, (params + std::size_t(off)) * sizeof(float));
  cudaMalloc(&ws, ws_bytes);
  cudaMemset(x, 0, std::size_t(k) * 256 * sizeof(float));
  cudaMemset(dz, 0, std::size_t(k) * 256 * sizeof(float));
  cublasLtHandle_t lt = nullptr;
  PROBE_LT(cublasLtCreate(&lt));
  cudaStream_t s = nullptr;
  cudaStreamCreate(&s);
  std::size_t at = std::size_t(off);
  for (const product& p : layers) {  // dW then the bias gradient, layer after layer (mlp's parameter layout)
    run(lt, p, k, x, dz, g + at, g + at + std::size_t(p.in) * p.out, ws, ws_bytes, s, std::size_t(off));
    at += std::size_t(p.in) * p.out + p.out;
  }
  return 0;
}

#pragma once
// A whole MLP forward as one kernel (network_config::kernels wholenet): a block takes a tile of 32 rows, keeps
// its activations in shared memory between layers (bf16, or fp32 rounded to TF32), and runs every layer as
// mma.sync products (fused_gemm.cuh's fragments and instructions) with bias + activation in the epilogue. The
// weights are packed once per call (one launch) into the order of the mma B fragments, 16 bytes per lane; where
// the packed network and the activation tiles fit the block's shared memory, each block copies the weights in
// (cp.async, one group per layer, so layer 0 starts before the rest landed) and loops over row tiles; otherwise the
// fragments are read from global memory (L2) in the same order. The input of the first layer comes from a
// functor (plain rows, or observations normalized on the way), the last layer's fp32 outputs go to a functor (a
// plain store, or the serving step's sampling: rl/batched_wholenet.cuh). Every launch is capturable.

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/nn/detail/lt_layout.hpp>
#include <gmi/nn/fused_gemm.cuh>
#include <gmi/nn/mlp.hpp>
#include <gmi/nn/network_config.hpp>

namespace gmi::nn {

namespace detail {

inline constexpr int wn_rows = 32;      // rows of a tile (one warp's 32 x 32 product unit is the whole tile height)
inline constexpr int wn_threads = 256;  // 8 warps; a warp takes every 8th chunk of 32 output columns
inline constexpr int wn_frag = 512;     // bytes of one packed fragment: 16 columns x 32 bytes of K, 16 per lane
inline constexpr int wn_static_smem = wn_rows * 4;  // the kernel's static shared memory: each row's input row
// The most shared memory any CUDA device gives one block (227 KiB on sm_90 and sm_100): a network whose packed
// weights and tiles need more never takes the weights-in-shared-memory kernel, so that variant is not compiled.
inline constexpr std::size_t wn_max_block_smem = 227 * 1024;

constexpr int wn_pad32(int w) { return (w + 31) / 32 * 32; }

// Sizes of the packed weights and the shared memory of L's layers with operands of T (float: TF32, or bf16).
template <class L, class T>
struct wholenet_layout {
  static constexpr int E = static_cast<int>(sizeof(T));
  static constexpr int kstep = 32 / E;  // K elements per mma step: 16 bf16, 8 TF32
  static constexpr int ksteps(int l) { return (L::width(l) + kstep - 1) / kstep; }
  static constexpr int nblocks(int l) { return wn_pad32(L::width(l + 1)) / 16; }  // 16-column fragment blocks
  static constexpr std::size_t layer_bytes(int l) {
    return static_cast<std::size_t>(nblocks(l)) * ksteps(l) * wn_frag;
  }
  static constexpr std::size_t offset(int l) {
    std::size_t o = 0;
    for (int k = 0; k < l; ++k) o += layer_bytes(k);
    return o;
  }
  static constexpr std::size_t weight_bytes = offset(L::count);
  // One activation row: the widest layer input, padded to 32 columns, and 16 bytes more so that the 8 rows an
  // ldmatrix reads start in different banks (the row is an odd number of 16-byte units).
  static constexpr int row_bytes = [] {
    int m = 0;
    for (int i = 0; i < L::count; ++i) m = std::max(m, wn_pad32(L::width(i)) * E);
    return m + 16;
  }();
  static constexpr int out_ld = wn_pad32(L::out);  // the last layer's fp32 outputs, [32][out_ld]
  static constexpr std::size_t act_bytes = 2 * static_cast<std::size_t>(wn_rows) * row_bytes;
  static constexpr std::size_t out_bytes = static_cast<std::size_t>(wn_rows) * out_ld * sizeof(float);
  // The dynamic shared memory; the kernel adds wn_static_smem of its own.
  static constexpr std::size_t smem_bytes(bool weights_in_smem) {
    return (weights_in_smem ? weight_bytes : 0) + act_bytes + out_bytes;
  }
  // Whether some device could hold the weights in one block's shared memory (see wn_max_block_smem).
  static constexpr bool weights_may_fit = smem_bytes(true) + wn_static_smem <= wn_max_block_smem;
};

__device__ inline float wn_tf32(float v) { return __uint_as_float(to_tf32(__float_as_uint(v))); }

// Element c of an activation row in T (TF32-rounded for float: the mma reads the bits as they are).
template <class T>
__device__ inline void wn_put(unsigned char* row, int c, float v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) reinterpret_cast<__nv_bfloat16*>(row)[c] = __float2bfloat16_rn(v);
  else reinterpret_cast<float*>(row)[c] = wn_tf32(v);
}
// Elements c, c + 1 (c even).
template <class T>
__device__ inline void wn_put2(unsigned char* row, int c, float v0, float v1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    *reinterpret_cast<__nv_bfloat162*>(row + 2 * c) = __floats2bfloat162_rn(v0, v1);
  else
    *reinterpret_cast<float2*>(row + 4 * c) = make_float2(wn_tf32(v0), wn_tf32(v1));
}

// The packed weights: word w of layer l's fragment (block nb of 16 columns, K step ks) for lane `lane`, register q:
// q = 0, 1 the columns nb * 16 + lane / 4, q = 2, 3 eight columns further; q = 0, 2 K bytes ks * 32 + (lane % 4) * 4,
// q = 1, 3 sixteen bytes further: the m16n8k16 (bf16) / m16n8k8 (TF32) B fragments of two 8-column tiles, as
// fused_gemm.cuh's ldmatrix gives them. Zero past the layer's rows and columns.
// Word w of the packed layout of L (wholenet_layout<L, T>) from at(l, n, k): layer l's weight of output column n
// and input k (only called for n < L::width(l + 1), k < L::width(l); zero elsewhere). The forward's pack reads W,
// the backward's (wholenet_backward.cuh) W transposed.
template <class L, class T, class At>
__device__ inline unsigned wn_packed_word(std::size_t w, At at) {
  using lay = wholenet_layout<L, T>;
  const std::size_t byte = w * 4;
  int l = 0;
  while (l + 1 < L::count && byte >= lay::offset(l + 1)) ++l;
  const std::size_t local = byte - lay::offset(l);
  const int frag = static_cast<int>(local / wn_frag), within = static_cast<int>(local % wn_frag);
  const int lane = within / 16, q = (within % 16) / 4;
  const int nb = frag / lay::ksteps(l), ks = frag % lay::ksteps(l);
  const int n = nb * 16 + (q / 2) * 8 + lane / 4;
  const int kbyte = ks * 32 + (q % 2) * 16 + (lane % 4) * 4;
  const int I = L::width(l), O = L::width(l + 1);
  auto get = [&](int k) { return n < O && k < I ? at(l, n, k) : 0.0f; };
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const int k = kbyte / 2;
    const __nv_bfloat162 pair = __floats2bfloat162_rn(get(k), get(k + 1));
    return *reinterpret_cast<const unsigned*>(&pair);
  } else {
    return to_tf32(__float_as_uint(get(kbyte / 4)));
  }
}

// The packed weights: word w of layer l's fragment (block nb of 16 columns, K step ks) for lane `lane`, register q:
// q = 0, 1 the columns nb * 16 + lane / 4, q = 2, 3 eight columns further; q = 0, 2 K bytes ks * 32 + (lane % 4) * 4,
// q = 1, 3 sixteen bytes further: the m16n8k16 (bf16) / m16n8k8 (TF32) B fragments of two 8-column tiles, as
// fused_gemm.cuh's ldmatrix gives them. Zero past the layer's rows and columns.
template <class L, class T>
__global__ static void wholenet_pack_kernel(const float* __restrict__ params, unsigned* __restrict__ packed) {
  constexpr std::size_t words = wholenet_layout<L, T>::weight_bytes / 4;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  auto at = [&](int l, int n, int k) { return params[L::weight_offset(l) + static_cast<std::size_t>(n) * L::width(l) + k]; };
  for (std::size_t w = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < words; w += stride)
    packed[w] = wn_packed_word<L, T>(w, at);
}

// One warp's 32 x 32 chunk of a layer's outputs: acc = the tile's activations (shared memory at in_addr, rows of
// RowBytes) times the chunk's packed fragments (wb: the chunk's first fragment plus lane * 16; in shared memory or
// read through the read-only cache), KS mma steps of K. a_row, a_col: the lane's ldmatrix row and byte column.
template <class T, int KS, int RowBytes, bool WSmem>
__device__ inline void wn_chunk_product(unsigned in_addr, const unsigned char* wb, int a_row, int a_col,
                                        float (&acc)[2][4][4]) {
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;
#pragma unroll 4
  for (int ks = 0; ks < KS; ++ks) {
    unsigned a[2][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
      ldmatrix_x4(in_addr + static_cast<unsigned>((i * 16 + a_row) * RowBytes + ks * 32 + a_col), a[i]);
    uint4 b0, b1;
    const uint4* p0 = reinterpret_cast<const uint4*>(wb + static_cast<std::size_t>(ks) * wn_frag);
    const uint4* p1 = reinterpret_cast<const uint4*>(wb + static_cast<std::size_t>(KS + ks) * wn_frag);
    if constexpr (WSmem) {
      b0 = *p0;
      b1 = *p1;
    } else {
      b0 = __ldg(p0);
      b1 = __ldg(p1);
    }
    const unsigned b[2][4] = {{b0.x, b0.y, b0.z, b0.w}, {b1.x, b1.y, b1.z, b1.w}};
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) mma_16x8<T>(acc[i][j], a[i], b[j / 2][(j % 2) * 2], b[j / 2][(j % 2) * 2 + 1]);
  }
}

template <class F, int... l>
__device__ inline void wn_each_layer(F&& f, std::integer_sequence<int, l...>) {
  (f(std::integral_constant<int, l>{}), ...);
}

// The forward of rows [0, n): in.row(r) says where row r's inputs are (once per row: a minibatch's shuffled
// sample), in(src, col) gives its input values (col < L::in); tail(outs, ld, row0, rows) is called by every thread
// of the block with a tile's fp32 outputs in shared memory ([32][ld], rows valid rows). record (or null) receives
// the activation record in fp32 as lt_mlp's: layer l's outputs at record + n * activation_offset(l), [n][width];
// x_record (or null) the inputs as in() gave them, [n][L::in] (a backward's X); record16 (or null) every layer's
// input in bf16 in lt_mlp's input record layout (detail::lt_layout_of::in16_offset: a bf16 backward's X, rounded as
// its own conversion would round the fp32 record, so it needs none).
// Launch bounds: with the weights in shared memory one block fills an SM's shared memory anyway; reading them from
// global memory, two blocks per SM (at most 128 registers a thread) hide more of the loads' latency.
template <class L, class Act, class OutAct, class T, bool WSmem, class In, class Tail>
__global__ static void __launch_bounds__(wn_threads, WSmem ? 1 : 2)
    wholenet_kernel(const unsigned char* __restrict__ packed, const float* __restrict__ params, int n, In in,
                    Tail tail, float* __restrict__ record, float* __restrict__ x_record,
                    __nv_bfloat16* __restrict__ record16) {
  __shared__ int src[wn_rows];
  using lay = wholenet_layout<L, T>;
  extern __shared__ __align__(128) unsigned char wn_smem[];
  unsigned char* const act0 = wn_smem + (WSmem ? lay::weight_bytes : 0);
  unsigned char* const act1 = act0 + wn_rows * lay::row_bytes;
  float* const outs = reinterpret_cast<float*>(act1 + wn_rows * lay::row_bytes);
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  constexpr auto layers = std::make_integer_sequence<int, L::count>{};

  if constexpr (WSmem) {  // one cp.async group per layer
    wn_each_layer(
        [&](auto lc) {
          constexpr int l = decltype(lc)::value;
          const unsigned dst = smem_addr(wn_smem + lay::offset(l));
          const unsigned char* from = packed + lay::offset(l);
          for (int k = tid; k < static_cast<int>(lay::layer_bytes(l) / 16); k += wn_threads)
            cp_async<16>(dst + static_cast<unsigned>(k * 16), from + static_cast<std::size_t>(k) * 16, 16);
          cp_async_commit();
        },
        layers);
  }

  // ldmatrix addresses of A (16 rows x 32 bytes per x4), as in fused_gemm.cuh; the epilogue's (row, column) pairs.
  const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 16;
  const int gq = lane / 4, tq = lane % 4;
  const int tiles = (n + wn_rows - 1) / wn_rows;
  for (int tile = static_cast<int>(blockIdx.x); tile < tiles; tile += static_cast<int>(gridDim.x)) {
    const int row0 = tile * wn_rows, rows = min(wn_rows, n - row0);
    if (tid < rows) src[tid] = in.row(row0 + tid);
    __syncthreads();
    constexpr int K0 = lay::ksteps(0) * lay::kstep;
    for (int k = tid; k < wn_rows * K0; k += wn_threads) {
      const int r = k / K0, c = k % K0;
      const float v = r < rows && c < L::in ? in(src[r], c) : 0.0f;
      if (x_record && r < rows && c < L::in) x_record[static_cast<std::size_t>(row0 + r) * L::in + c] = v;
      if (record16 && r < rows && c < L::in)
        record16[static_cast<std::size_t>(row0 + r) * bf16_ld(L::in) + c] = __float2bfloat16_rn(v);
      wn_put<T>(act0 + r * lay::row_bytes, c, v);
    }
    __syncthreads();

    wn_each_layer(
        [&](auto lc) {
          constexpr int l = decltype(lc)::value;
          constexpr int N = L::width(l + 1), KS = lay::ksteps(l), NC = wn_pad32(N) / 32;
          constexpr bool last = l == L::count - 1;
          if constexpr (WSmem) {
            cp_async_wait<L::count - 1 - l>();
            __syncthreads();  // every thread's copies of this layer landed
          }
          const unsigned in_addr = smem_addr(l % 2 == 0 ? act0 : act1);
          unsigned char* const out_buf = l % 2 == 0 ? act1 : act0;
          const unsigned char* const wl = (WSmem ? static_cast<const unsigned char*>(wn_smem) : packed) + lay::offset(l);
          const float* const bias = params + L::bias_offset(l);
          float* const rec = record ? record + static_cast<std::size_t>(n) * L::activation_offset(l) : nullptr;
          __nv_bfloat16* const rec16 =
              record16 && !last ? record16 + static_cast<std::size_t>(n) * lt_layout_of<L>::in16_offset(l + 1) : nullptr;
          for (int nc = warp; nc < NC; nc += wn_threads / 32) {
            float acc[2][4][4];
            wn_chunk_product<T, KS, lay::row_bytes, WSmem>(
                in_addr, wl + static_cast<std::size_t>(nc * 2) * KS * wn_frag + lane * 16, a_row, a_col, acc);
            // c0, c1 at (row g, columns 2t, 2t + 1), c2, c3 at row g + 8.
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
              for (int j = 0; j < 4; ++j)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                  const int r = i * 16 + gq + h * 8, c = nc * 32 + j * 8 + tq * 2;
                  using A = std::conditional_t<last, OutAct, Act>;
                  const float y0 = c < N ? A::f(acc[i][j][2 * h] + __ldg(bias + c)) : 0.0f;
                  const float y1 = c + 1 < N ? A::f(acc[i][j][2 * h + 1] + __ldg(bias + c + 1)) : 0.0f;
                  if (rec && r < rows) {
                    float* const at = rec + static_cast<std::size_t>(row0 + r) * N + c;
                    if (c < N) at[0] = y0;
                    if (c + 1 < N) at[1] = y1;
                  }
                  if (rec16 && r < rows) {
                    __nv_bfloat16* const at = rec16 + static_cast<std::size_t>(row0 + r) * bf16_ld(N) + c;
                    if (c < N) at[0] = __float2bfloat16_rn(y0);
                    if (c + 1 < N) at[1] = __float2bfloat16_rn(y1);
                  }
                  if constexpr (last) {
                    if (c < N) outs[r * lay::out_ld + c] = y0;
                    if (c + 1 < N) outs[r * lay::out_ld + c + 1] = y1;
                  } else {  // columns past N stay zero: the next layer's padded K
                    wn_put2<T>(out_buf + r * lay::row_bytes, c, y0, y1);
                  }
                }
          }
          __syncthreads();  // the layer's outputs complete before the next reads them
        },
        layers);

    tail(static_cast<const float*>(outs), lay::out_ld, row0, rows);
    __syncthreads();  // the tail read outs; the next tile overwrites act0
  }
}

// The plain ends: rows of a row-major [n][ld] matrix in, a [n][w] matrix out.
struct wholenet_rows_in {
  const float* x;
  int ld;
  __device__ int row(int r) const { return r; }
  __device__ float operator()(int r, int c) const { return x[static_cast<std::size_t>(r) * ld + c]; }
};
struct wholenet_rows_out {
  float* out;
  int w;
  __device__ void operator()(const float* o, int ld, int row0, int rows) const {
    for (int k = static_cast<int>(threadIdx.x); k < rows * w; k += static_cast<int>(blockDim.x))
      out[static_cast<std::size_t>(row0 + k / w) * w + k % w] = o[(k / w) * ld + k % w];
  }
};

}  // namespace detail

// Shared memory of one block of the whole-network kernel for Net at p (tf32 or bf16), with or without the
// weights; what `wholenet` compares with the device's per-block limit.
template <class Net>
constexpr std::size_t wholenet_smem_bytes(precision p, bool weights_in_smem) {
  using L = typename Net::layers;
  return p == precision::bf16 ? detail::wholenet_layout<L, __nv_bfloat16>::smem_bytes(weights_in_smem)
                              : detail::wholenet_layout<L, float>::smem_bytes(weights_in_smem);
}

// Whether Net's packed weights and tiles at p (tf32 or bf16) could fit one block's shared memory on some device
// (detail::wn_max_block_smem): only then is the weights-in-shared-memory kernel compiled and taken where it fits.
template <class Net>
constexpr bool wholenet_weights_may_fit(precision p) {
  using L = typename Net::layers;
  return p == precision::bf16 ? detail::wholenet_layout<L, __nv_bfloat16>::weights_may_fit
                              : detail::wholenet_layout<L, float>::weights_may_fit;
}

// Whether wholenet<Net> can be built at p on the current device: tf32 or bf16, and one block's 32-row tile of
// activations fits the device's per-block shared memory (what the constructor requires).
template <class Net>
bool wholenet_fits(precision p) {
  if (p == precision::fp32) return false;
  int dev = 0, optin = 0;
  GMI_CUDA_TRY(cudaGetDevice(&dev));
  GMI_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return wholenet_smem_bytes<Net>(p, false) + detail::wn_static_smem <= static_cast<std::size_t>(optin);
}

// wholenet<Net>: the forward of a gmi::nn::mlp as one kernel at TF32 or bf16. Construction refuses fp32 and a
// network whose activation tiles do not fit one block's shared memory (one line each).
template <class Net>
class wholenet {
  static_assert(is_mlp<Net>, "gmi::nn::wholenet: Net must be a gmi::nn::mlp<...>");
  using L = typename Net::layers;
  using Act = typename Net::activation;
  using OutAct = typename Net::output_activation;

 public:
  wholenet(exec::cuda policy, precision p) : policy_(policy), prec_(p) {
    gmi::require(p != precision::fp32, "network kernels wholenet: precision", precision_name(p), "tf32 or bf16");
    int dev = 0, optin = 0, sms = 0;
    GMI_CUDA_TRY(cudaGetDevice(&dev));
    GMI_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    GMI_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    sms_ = policy.sm_count > 0 ? std::min(policy.sm_count, sms) : sms;
    const std::size_t limit = static_cast<std::size_t>(optin) - detail::wn_static_smem;
    const std::size_t need = wholenet_smem_bytes<Net>(p, false);
    gmi::require(need <= limit, "network kernels wholenet: shared memory of a 32-row tile", need,
                 "<= " + std::to_string(limit) + " bytes (the device's per-block limit)");
    in_smem_ = wholenet_weights_may_fit<Net>(p) && wholenet_smem_bytes<Net>(p, true) <= limit;
    packed_ = cuda::device_buffer<unsigned>(packed_bytes() / 4);
    packed_.fill_bytes(0, policy_.stream);
  }

  // "whole_tf32" or "whole_bf16".
  [[nodiscard]] const char* path() const noexcept { return prec_ == precision::tf32 ? "whole_tf32" : "whole_bf16"; }
  // Whether each block holds the packed weights in shared memory (else it reads them from global memory).
  [[nodiscard]] bool weights_in_smem() const noexcept { return in_smem_; }
  [[nodiscard]] std::size_t packed_bytes() const noexcept {
    return prec_ == precision::bf16 ? detail::wholenet_layout<L, __nv_bfloat16>::weight_bytes
                                    : detail::wholenet_layout<L, float>::weight_bytes;
  }
  void set_stream(cudaStream_t s) noexcept { policy_.stream = s; }
  // Launches per forward: the weight packing (where asked for) and the kernel.
  static constexpr int launches(bool pack_weights) { return pack_weights ? 2 : 1; }

  // Packs the weights of params (Net::param_count floats) for the following runs: one launch.
  void pack(const float* params) {
    const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(1024, (packed_bytes() / 4 + 255) / 256));
    if (prec_ == precision::bf16)
      detail::wholenet_pack_kernel<L, __nv_bfloat16><<<blocks, 256, 0, policy_.stream>>>(params, packed_.data());
    else
      detail::wholenet_pack_kernel<L, float><<<blocks, 256, 0, policy_.stream>>>(params, packed_.data());
    GMI_CUDA_TRY(cudaGetLastError());
  }

  // The forward of n rows from the last pack() (biases read from params): in, tail, record (null: none; else
  // Net::activation_size * n floats), x_record (null or n * Net::in floats) and record16 (null or n *
  // lt_layout_of::in16_size bf16) as wholenet_kernel's.
  template <class In, class Tail>
  void run(const float* params, std::size_t n, In in, Tail tail, float* record = nullptr, float* x_record = nullptr,
           __nv_bfloat16* record16 = nullptr) {
    if (n == 0) return;
    gmi::require(n <= (std::size_t{1} << 30), "wholenet rows", n, "<= 2^30");
    if (prec_ == precision::bf16) launch<__nv_bfloat16>(params, static_cast<int>(n), in, tail, record, x_record, record16);
    else launch<float>(params, static_cast<int>(n), in, tail, record, x_record, record16);
  }

  // out ([n][Net::out]) = the forward of x ([n][Net::in]): pack and run, two launches.
  void forward(const float* params, const float* x, float* out, std::size_t n) {
    pack(params);
    run(params, n, detail::wholenet_rows_in{x, Net::in}, detail::wholenet_rows_out{out, Net::out});
  }

 private:
  template <class T, class In, class Tail>
  void launch(const float* params, int n, In in, Tail tail, float* record, float* x_record, __nv_bfloat16* record16) {
    const std::size_t bytes = detail::wholenet_layout<L, T>::smem_bytes(in_smem_);
    auto kernel = detail::wholenet_kernel<L, Act, OutAct, T, false, In, Tail>;
    if constexpr (detail::wholenet_layout<L, T>::weights_may_fit)  // else in_smem_ is false: no such kernel
      if (in_smem_) kernel = detail::wholenet_kernel<L, Act, OutAct, T, true, In, Tail>;
    // Set up once per kernel (an instantiation per In and Tail), so a later call inside a graph capture only launches.
    int per_sm = 0;
    for (const auto& [k, b] : ready_)
      if (k == reinterpret_cast<const void*>(kernel)) per_sm = b;
    if (per_sm == 0) {
      GMI_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
      GMI_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, detail::wn_threads, bytes));
      gmi::require(per_sm >= 1, "wholenet blocks per SM", per_sm, ">= 1 at " + std::to_string(bytes) + " bytes");
      ready_.emplace_back(reinterpret_cast<const void*>(kernel), per_sm);
    }
    const int tiles = (n + detail::wn_rows - 1) / detail::wn_rows;
    const int grid = std::max(1, std::min(tiles, sms_ * per_sm));
    kernel<<<grid, detail::wn_threads, bytes, policy_.stream>>>(
        reinterpret_cast<const unsigned char*>(packed_.data()), params, n, in, tail, record, x_record, record16);
    GMI_CUDA_TRY(cudaGetLastError());
  }

  exec::cuda policy_;
  precision prec_;
  int sms_ = 1;
  bool in_smem_ = false;
  cuda::device_buffer<unsigned> packed_;
  std::vector<std::pair<const void*, int>> ready_;  // kernels set up so far and their blocks per SM
};

}  // namespace gmi::nn

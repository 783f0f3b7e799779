#pragma once
// The input-gradient chain of an MLP's backward as one kernel (network_config::backward wholenet): a block takes a
// tile of 32 rows, forms the output layer's dz = d_out * OutAct'(y) and then, layer by layer from the top, dX = dz W
// with mma.sync (the whole-network forward's fragments, wholenet.cuh) and the layer below's dz = dX * Act'(y) in
// registers, keeping each dz on chip (bf16, or fp32 rounded to TF32) as the next product's input; every layer's dz
// is also stored (fp32 at TF32, bf16 at bf16) for the weight gradients, which stay cuBLASLt products (lt_mlp.cuh:
// long-K GEMMs over the batch, with the bias gradient in their epilogue); at bf16 the kernel also sums each tile's
// dz per column (a fixed shuffle tree), so the bias gradients are those sums in tile order, finished in the chunked
// weight gradients' summing launch, and no fp32 dz is stored or read again. Per backward that is one pack
// of the transposed weights and one kernel instead of L - 1 dX products and L - 1 dz passes (or L with d_x). The
// rows are independent, so the results do not depend on the grid: the same bits on every run. Every launch is
// capturable.

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/nn/detail/lt_layout.hpp>
#include <gmi/nn/mlp.hpp>
#include <gmi/nn/network_config.hpp>
#include <gmi/nn/wholenet.cuh>

namespace gmi::nn {

namespace detail {

// L's layers from the top: the backward's layer j is L's layer count - 1 - j, from width(j) = L::width(count - j)
// (its dz) to width(j + 1) (the input gradient of the layer's inputs). Only what wholenet_layout reads.
template <class L>
struct wn_reversed {
  static constexpr int count = L::count;
  static constexpr int width(int i) { return L::width(L::count - i); }
  static constexpr int in = L::out;
  static constexpr int out = L::in;
};

// Where layer l's dz sits in the bf16 dz record of n rows: n * dz16_offset(l), [n][bf16_ld(width(l + 1))].
template <class L>
constexpr std::size_t wn_dz16_offset(int l) {
  std::size_t off = 0;
  for (int k = 0; k < l; ++k) off += static_cast<std::size_t>(bf16_ld(L::width(k + 1)));
  return off;
}

// The transposed weights in the forward's fragment order (wholenet_pack_kernel): the backward's layer j takes
// B[i][o] = W_l[o][i], l = count - 1 - j.
template <class L, class T>
__global__ static void wholenet_pack_t_kernel(const float* __restrict__ params, unsigned* __restrict__ packed) {
  using R = wn_reversed<L>;
  constexpr std::size_t words = wholenet_layout<R, T>::weight_bytes / 4;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  auto at = [&](int j, int i, int o) {
    const int l = L::count - 1 - j;
    return params[L::weight_offset(l) + static_cast<std::size_t>(o) * L::width(l) + i];
  };
  for (std::size_t w = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < words; w += stride)
    packed[w] = wn_packed_word<R, T>(w, at);
}

// The chain over rows [0, n): acts is the forward's activation record (lt_mlp's layout), d_out ([n][out]) the
// gradient of the outputs. dz (or null; fp32, the activation record's layout) receives every layer's dz, dz16 (or
// null) the same in bf16 (wn_dz16_offset), d_x (or null) the input gradient dz_0 W_0 ([n][in]), part (or null)
// each tile's column sums of every layer's dz (the bias gradients' first stage: layer l's at part + tiles *
// activation_offset(l), [tiles][width], each the sum of the tile's rows in a fixed order).
template <class L, class Act, class OutAct, class T>
__global__ static void __launch_bounds__(wn_threads, 2)
    wholenet_backward_kernel(const unsigned char* __restrict__ packed, int n, const float* __restrict__ acts,
                             const float* __restrict__ d_out, float* __restrict__ dz, __nv_bfloat16* __restrict__ dz16,
                             float* __restrict__ d_x, float* __restrict__ part) {
  using R = wn_reversed<L>;
  using lay = wholenet_layout<R, T>;
  extern __shared__ __align__(128) unsigned char wn_smem[];
  unsigned char* const act0 = wn_smem;
  unsigned char* const act1 = act0 + wn_rows * lay::row_bytes;
  const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
  const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 16;
  const int gq = lane / 4, tq = lane % 4;
  const std::size_t N = static_cast<std::size_t>(n);
  // Layer l's dz of row r, column c: stored fp32 (and bf16), returned for the tile.
  auto store = [&](int l, int w, std::size_t r, int c, float v) {
    if (dz) dz[N * L::activation_offset(l) + r * w + c] = v;
    if (dz16) dz16[N * wn_dz16_offset<L>(l) + r * bf16_ld(w) + c] = __float2bfloat16_rn(v);
  };
  constexpr auto layers = std::make_integer_sequence<int, L::count>{};
  const int tiles = (n + wn_rows - 1) / wn_rows;
  for (int tile = static_cast<int>(blockIdx.x); tile < tiles; tile += static_cast<int>(gridDim.x)) {
    const int row0 = tile * wn_rows, rows = min(wn_rows, n - row0);
    {  // the output layer's dz
      constexpr int O = L::out, K0 = lay::ksteps(0) * lay::kstep;
      const float* const y = acts + N * L::activation_offset(L::count - 1);
      for (int k = tid; k < wn_rows * K0; k += wn_threads) {
        const int r = k / K0, c = k % K0;
        float v = 0.0f;
        if (r < rows && c < O) {
          const std::size_t at = static_cast<std::size_t>(row0 + r) * O + c;
          v = d_out[at] * OutAct::grad_from_output(y[at]);
          store(L::count - 1, O, static_cast<std::size_t>(row0 + r), c, v);
        }
        wn_put<T>(act0 + r * lay::row_bytes, c, v);
      }
      if (part) {  // the output layer's column sums over the tile's rows, in row order
        const float* const y = acts + N * L::activation_offset(L::count - 1);
        for (int c = tid; c < O; c += wn_threads) {
          float t = 0.0f;
          for (int r = 0; r < rows; ++r) {
            const std::size_t at = static_cast<std::size_t>(row0 + r) * O + c;
            t += d_out[at] * OutAct::grad_from_output(y[at]);
          }
          part[static_cast<std::size_t>(tiles) * L::activation_offset(L::count - 1) + static_cast<std::size_t>(tile) * O + c] = t;
        }
      }
    }
    __syncthreads();

    wn_each_layer(
        [&](auto jc) {
          constexpr int j = decltype(jc)::value, l = L::count - 1 - j;
          constexpr int W = L::width(l), KS = lay::ksteps(j), NC = wn_pad32(W) / 32;
          if (l == 0 && !d_x) return;  // uniform over the block
          const unsigned in_addr = smem_addr(j % 2 == 0 ? act0 : act1);
          unsigned char* const out_buf = j % 2 == 0 ? act1 : act0;
          const float* const y = l > 0 ? acts + N * L::activation_offset(l > 0 ? l - 1 : 0) : nullptr;
          for (int nc = warp; nc < NC; nc += wn_threads / 32) {
            float acc[2][4][4];
            wn_chunk_product<T, KS, lay::row_bytes, false>(
                in_addr, packed + lay::offset(j) + static_cast<std::size_t>(nc * 2) * KS * wn_frag + lane * 16, a_row,
                a_col, acc);
            // c0, c1 at (row g, columns 2t, 2t + 1), c2, c3 at row g + 8.
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              const int c = nc * 32 + q * 8 + tq * 2;
              float s[2] = {0.0f, 0.0f};  // the tile's column sums of dz: this lane's rows, then over the warp
#pragma unroll
              for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                  const int r = i * 16 + gq + h * 8;
                  const std::size_t row = static_cast<std::size_t>(row0 + r);
                  float v[2] = {acc[i][q][2 * h], acc[i][q][2 * h + 1]};
#pragma unroll
                  for (int e = 0; e < 2; ++e) {
                    if (r >= rows || c + e >= W) {
                      v[e] = 0.0f;  // padding: the next product's K past W, and rows past n
                    } else if constexpr (l == 0) {
                      d_x[row * W + c + e] = v[e];
                    } else {
                      v[e] *= Act::grad_from_output(y[row * W + c + e]);
                      store(l - 1, W, row, c + e, v[e]);
                    }
                    s[e] += v[e];
                  }
                  if constexpr (l > 0) wn_put2<T>(out_buf + r * lay::row_bytes, c, v[0], v[1]);
                }
              if constexpr (l > 0) {
                if (part) {  // uniform over the block; the 8 lanes of a column pair (lane bits 2 to 4) in a fixed tree
#pragma unroll
                  for (int m = 4; m < 32; m *= 2)
#pragma unroll
                    for (int e = 0; e < 2; ++e) s[e] += __shfl_xor_sync(0xffffffffu, s[e], m);
                  float* const p = part + static_cast<std::size_t>(tiles) * L::activation_offset(l - 1) +
                                   static_cast<std::size_t>(tile) * W;
                  if (gq == 0 && c < W) p[c] = s[0];
                  if (gq == 0 && c + 1 < W) p[c + 1] = s[1];
                }
              }
            }
          }
          __syncthreads();  // this layer's dz complete before the next product reads it
        },
        layers);
  }
}

}  // namespace detail

// Shared memory of one block of the backward kernel for Net at p (tf32 or bf16): two 32-row tiles of dz.
template <class Net>
constexpr std::size_t wholenet_backward_smem_bytes(precision p) {
  using R = detail::wn_reversed<typename Net::layers>;
  return p == precision::bf16 ? detail::wholenet_layout<R, __nv_bfloat16>::act_bytes
                              : detail::wholenet_layout<R, float>::act_bytes;
}

// wholenet_backward<Net>: the backward's input-gradient chain as one kernel, for up to max_batch rows, at TF32 or
// bf16; it keeps every layer's dz for the caller's weight gradients. Construction refuses fp32 and a network whose
// tiles do not fit one block's shared memory (one line each).
template <class Net>
class wholenet_backward {
  static_assert(is_mlp<Net>, "gmi::nn::wholenet_backward: Net must be a gmi::nn::mlp<...>");
  using L = typename Net::layers;
  using R = detail::wn_reversed<L>;

 public:
  wholenet_backward(exec::cuda policy, precision p, std::size_t max_batch) : policy_(policy), prec_(p) {
    gmi::require(p != precision::fp32, "network backward wholenet: precision", precision_name(p), "tf32 or bf16");
    int dev = 0, optin = 0, sms = 0;
    GMI_CUDA_TRY(cudaGetDevice(&dev));
    GMI_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    GMI_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    sms_ = policy.sm_count > 0 ? std::min(policy.sm_count, sms) : sms;
    const std::size_t need = wholenet_backward_smem_bytes<Net>(p);
    gmi::require(need <= static_cast<std::size_t>(optin), "network backward wholenet: shared memory of a 32-row tile",
                 need, "<= " + std::to_string(optin) + " bytes (the device's per-block limit)");
    packed_ = cuda::device_buffer<unsigned>(packed_bytes() / 4);
    packed_.fill_bytes(0, policy_.stream);
    max_batch_ = max_batch;
    if (p == precision::bf16) {  // the weight gradients read dz16; the bias gradients finish from the tiles' sums
      dz16_ = cuda::device_buffer<__nv_bfloat16>(max_batch * detail::wn_dz16_offset<L>(L::count));
      part_ = cuda::device_buffer<float>(tiles(max_batch) * Net::activation_size);
    } else {
      dz_ = cuda::device_buffer<float>(max_batch * Net::activation_size);
    }
  }

  [[nodiscard]] const char* path() const noexcept { return prec_ == precision::tf32 ? "whole_tf32" : "whole_bf16"; }
  [[nodiscard]] std::size_t packed_bytes() const noexcept {
    return prec_ == precision::bf16 ? detail::wholenet_layout<R, __nv_bfloat16>::weight_bytes
                                    : detail::wholenet_layout<R, float>::weight_bytes;
  }
  void set_stream(cudaStream_t s) noexcept { policy_.stream = s; }
  // Launches per backward chain: the packing of the transposed weights and the kernel.
  static constexpr int launches = 2;

  // Packs params' transposed weights, then the chain over n rows (acts: the forward's record of these rows, d_out:
  // [n][out], d_x: null or [n][in]); afterwards dz(l, n) and dz16(l, n) hold each layer's dz.
  void run(const float* params, const float* acts, const float* d_out, float* d_x, std::size_t n) {
    if (n == 0) return;
    gmi::require(n <= max_batch_, "wholenet backward rows", n, "<= " + std::to_string(max_batch_) + " (max_batch)");
    if (prec_ == precision::bf16) launch<__nv_bfloat16>(params, acts, d_out, d_x, static_cast<int>(n));
    else launch<float>(params, acts, d_out, d_x, static_cast<int>(n));
  }
  // Layer l's dz of the last run: fp32 [n][width(l + 1)] at TF32 (else null), bf16 with rows of
  // bf16_ld(width(l + 1)) at bf16 (else null).
  [[nodiscard]] const float* dz(int l, std::size_t n) const {
    return prec_ == precision::bf16 ? nullptr : dz_.data() + n * static_cast<std::size_t>(L::activation_offset(l));
  }
  [[nodiscard]] const __nv_bfloat16* dz16(int l, std::size_t n) const {
    return prec_ == precision::bf16 ? dz16_.data() + n * detail::wn_dz16_offset<L>(l) : nullptr;
  }
  // At bf16: layer l's dz summed per tile of 32 rows ([tiles(n)][width(l + 1)]; the bias gradient is their sum in
  // tile order), else null.
  [[nodiscard]] const float* tile_sums(int l, std::size_t n) const {
    return prec_ == precision::bf16 ? part_.data() + tiles(n) * static_cast<std::size_t>(L::activation_offset(l)) : nullptr;
  }
  static constexpr std::size_t tiles(std::size_t n) { return (n + detail::wn_rows - 1) / detail::wn_rows; }

 private:
  template <class T>
  void launch(const float* params, const float* acts, const float* d_out, float* d_x, int n) {
    const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(1024, (packed_bytes() / 4 + 255) / 256));
    detail::wholenet_pack_t_kernel<L, T><<<blocks, 256, 0, policy_.stream>>>(params, packed_.data());
    GMI_CUDA_TRY(cudaGetLastError());
    const std::size_t bytes = detail::wholenet_layout<R, T>::act_bytes;
    auto kernel = detail::wholenet_backward_kernel<L, typename Net::activation, typename Net::output_activation, T>;
    if (per_sm_ == 0) {  // once, so that a later call inside a graph capture only launches
      GMI_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
      GMI_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_, kernel, detail::wn_threads, bytes));
      gmi::require(per_sm_ >= 1, "wholenet backward blocks per SM", per_sm_, ">= 1 at " + std::to_string(bytes) + " bytes");
    }
    const int grid = std::max(1, std::min(static_cast<int>(tiles(static_cast<std::size_t>(n))), sms_ * per_sm_));
    kernel<<<grid, detail::wn_threads, bytes, policy_.stream>>>(reinterpret_cast<const unsigned char*>(packed_.data()),
                                                                 n, acts, d_out, dz_.data(), dz16_.data(), d_x,
                                                                 part_.data());
    GMI_CUDA_TRY(cudaGetLastError());
  }

  exec::cuda policy_;
  precision prec_;
  int sms_ = 1, per_sm_ = 0;
  cuda::device_buffer<unsigned> packed_;
  std::size_t max_batch_ = 0;
  cuda::device_buffer<float> dz_, part_;  // part_: bf16's per-tile column sums
  cuda::device_buffer<__nv_bfloat16> dz16_;
};

}  // namespace gmi::nn

#pragma once
// One matrix product with its epilogue in registers, on the tensor cores through warp-level mma.sync:
// D[M][N] = epi(A[M][K] B[N][K]^T), A and B row-major with K contiguous (an MLP layer's inputs times its weights
// [out][in]; its backward's dZ times the transposed weights [in][out]). bf16 inputs (m16n8k16) or fp32 inputs
// rounded to TF32 (m16n8k8), fp32 accumulation. Epilogues: bias + activation (the forward's Y = Act(X W^T + b),
// for the ELU that cuBLASLt has no epilogue for), times Act'(y) from the stored outputs (the backward's
// dz = (dZ W) * Act'(y)), or none. The result goes to an fp32 matrix, optionally a second fp32 copy and a bf16
// copy (the next product's input). Tiles of 128 x 64 per block of 8 warps (32 x 32 each), 64 bytes of K per stage
// in three cp.async stages; rows, columns and K not multiple of a tile are zero-filled / predicated. Every launch
// is capturable in a CUDA graph (no allocation, no host wait).

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>

namespace gmi::nn {

// The products' operands and outputs. d, d2, d16: nullptr to skip; d16 (bf16) rows of ld16 elements.
template <class T>
struct mma_gemm_args {
  const T* a = nullptr;  // [M][lda], row-major
  const T* b = nullptr;  // [N][ldb], row-major
  int M = 0, N = 0, K = 0, lda = 0, ldb = 0;
  float* d = nullptr;
  int ldd = 0;
  float* d2 = nullptr;
  int ldd2 = 0;
  __nv_bfloat16* d16 = nullptr;
  int ld16 = 0;
};

// Epilogues: v is the accumulated product at (row r, column c).
template <class Act>
struct mma_bias_act {  // Act(v + bias[c])
  const float* bias;
  __device__ float operator()(float v, int, int c) const { return Act::f(v + bias[c]); }
};
template <class Act>
struct mma_times_grad {  // v * Act'(y[r][c]), Act' from the layer's stored outputs
  const float* y;
  int ldy;
  __device__ float operator()(float v, int r, int c) const {
    return v * Act::grad_from_output(y[static_cast<std::size_t>(r) * ldy + c]);
  }
};
struct mma_plain {
  __device__ float operator()(float v, int, int) const { return v; }
};

namespace detail {

inline constexpr int mma_bm = 128, mma_bn = 64, mma_threads = 256, mma_stages = 3;
inline constexpr int mma_kbytes = 64;   // K bytes per stage: 32 bf16 or 16 fp32
inline constexpr int mma_row_bytes = 80;  // a tile row in shared memory: 64 bytes + 16 of padding (no bank conflicts)
inline constexpr int mma_a_bytes = mma_bm * mma_row_bytes, mma_b_bytes = mma_bn * mma_row_bytes;
inline constexpr int mma_stage_bytes = mma_a_bytes + mma_b_bytes;

__device__ inline unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

// cp.async of `Bytes` (16 or 4) bytes, of which the first src_bytes are read and the rest zero-filled.
template <int Bytes>
__device__ inline void cp_async(unsigned dst, const void* src, int src_bytes) {
  if constexpr (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ inline void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ inline void ldmatrix_x4(unsigned addr, unsigned (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ inline unsigned to_tf32(unsigned bits) {
  unsigned out;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(out) : "f"(__uint_as_float(bits)));
  return out;
}

// One 16 x 8 product over 32 bytes of K: m16n8k16 in bf16, m16n8k8 in TF32 (8 fp32).
template <class T>
__device__ inline void mma_16x8(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Copies rows [row0, row0 + Rows) x K bytes [k_byte0, k_byte0 + 64) of a row-major [rows][ld] matrix into a tile
// of mma_row_bytes rows; chunks past `rows` or past K are zero-filled. Chunks of Vec bytes.
template <class T, int Rows, int Vec>
__device__ inline void mma_load_tile(unsigned tile, const T* m, int rows, int ld, int K, int row0, int k0) {
  constexpr int E = static_cast<int>(sizeof(T));
  constexpr int per_row = mma_kbytes / Vec, chunks = Rows * per_row;
  static_assert(chunks % mma_threads == 0, "tile chunks must divide among the block's threads");
  const char* base = reinterpret_cast<const char*>(m);
#pragma unroll
  for (int i = 0; i < chunks / mma_threads; ++i) {
    const int idx = static_cast<int>(threadIdx.x) + i * mma_threads;
    const int r = idx / per_row, cb = (idx % per_row) * Vec;  // tile row, byte within the 64
    const int row = row0 + r, k = k0 + cb / E;
    int bytes = (K - k) * E;
    bytes = row < rows ? (bytes < 0 ? 0 : (bytes > Vec ? Vec : bytes)) : 0;
    const char* src = bytes > 0 ? base + (static_cast<std::size_t>(row) * ld + k) * E : base;
    cp_async<Vec>(tile + static_cast<unsigned>(r * mma_row_bytes + cb), src, bytes);
  }
}

// One block: the 128 x 64 tile of D at (blockIdx.y, blockIdx.x). Vec: 16-byte copies where rows and pointers are
// 16-byte aligned, else 4.
template <class T, int Vec, class Epi>
__global__ void __launch_bounds__(mma_threads) mma_gemm_kernel(mma_gemm_args<T> g, Epi epi) {
  __shared__ __align__(128) unsigned char smem[mma_stages * mma_stage_bytes];
  constexpr int E = static_cast<int>(sizeof(T));
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int wm = warp / 2, wn = warp % 2;  // the warp's 32 x 32 within the block's 128 x 64
  const int m0 = static_cast<int>(blockIdx.y) * mma_bm, n0 = static_cast<int>(blockIdx.x) * mma_bn;
  const int k_per_stage = mma_kbytes / E;
  const int ktiles = (g.K + k_per_stage - 1) / k_per_stage;
  const unsigned base = smem_addr(smem);

  float acc[2][4][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;

  auto load_stage = [&](int stage, int kt) {
    const unsigned s = base + static_cast<unsigned>(stage * mma_stage_bytes);
    mma_load_tile<T, mma_bm, Vec>(s, g.a, g.M, g.lda, g.K, m0, kt * k_per_stage);
    mma_load_tile<T, mma_bn, Vec>(s + mma_a_bytes, g.b, g.N, g.ldb, g.K, n0, kt * k_per_stage);
  };

#pragma unroll
  for (int s = 0; s < mma_stages - 1; ++s) {
    if (s < ktiles) load_stage(s, s);
    cp_async_commit();
  }

  // ldmatrix addresses within a stage: A's x4 covers 16 rows x 32 bytes (rows 0-7 | 8-15, bytes 0-15 | 16-31);
  // B's x4 covers two 8-row n tiles x 32 bytes.
  const int a_row = (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 16;
  const int b_row = (lane & 7) + (lane >> 4) * 8, b_col = ((lane >> 3) & 1) * 16;

  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<mma_stages - 2>();
    __syncthreads();  // stage kt landed for all threads; every warp is done with the stage reloaded below
    const int next = kt + mma_stages - 1;
    if (next < ktiles) load_stage(next % mma_stages, next);
    cp_async_commit();

    const unsigned sa = base + static_cast<unsigned>((kt % mma_stages) * mma_stage_bytes);
    const unsigned sb = sa + mma_a_bytes;
#pragma unroll
    for (int ks = 0; ks < mma_kbytes / 32; ++ks) {
      unsigned a[2][4], b[2][4];
#pragma unroll
      for (int i = 0; i < 2; ++i)
        ldmatrix_x4(sa + static_cast<unsigned>((wm * 32 + i * 16 + a_row) * mma_row_bytes + ks * 32 + a_col), a[i]);
#pragma unroll
      for (int j = 0; j < 2; ++j)
        ldmatrix_x4(sb + static_cast<unsigned>((wn * 32 + j * 16 + b_row) * mma_row_bytes + ks * 32 + b_col), b[j]);
      if constexpr (!std::is_same_v<T, __nv_bfloat16>) {
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            a[i][q] = to_tf32(a[i][q]);
            b[i][q] = to_tf32(b[i][q]);
          }
      }
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) mma_16x8<T>(acc[i][j], a[i], b[j / 2][(j % 2) * 2], b[j / 2][(j % 2) * 2 + 1]);
    }
  }
  cp_async_wait<0>();

  // Epilogue: c0, c1 at (row g, columns 2t, 2t + 1), c2, c3 at row g + 8.
  const int gq = lane / 4, tq = lane % 4;
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int r = m0 + wm * 32 + i * 16 + gq + (q / 2) * 8;
        const int c = n0 + wn * 32 + j * 8 + tq * 2 + (q % 2);
        if (r >= g.M || c >= g.N) continue;
        const float v = epi(acc[i][j][q], r, c);
        if (g.d) g.d[static_cast<std::size_t>(r) * g.ldd + c] = v;
        if (g.d2) g.d2[static_cast<std::size_t>(r) * g.ldd2 + c] = v;
        if (g.d16) g.d16[static_cast<std::size_t>(r) * g.ld16 + c] = __float2bfloat16_rn(v);
      }
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace detail

// Whether launches of these operands take the 16-byte copies (rows and pointers 16-byte aligned).
template <class T>
bool mma_gemm_vectorized(const mma_gemm_args<T>& g) {
  return detail::aligned16(g.a) && detail::aligned16(g.b) && (g.lda * sizeof(T)) % 16 == 0 &&
         (g.ldb * sizeof(T)) % 16 == 0;
}

// Launches D = epi(A B^T) on `stream`. T: float (TF32 products) or __nv_bfloat16. bf16 operands need 4-byte
// aligned rows (even lda, ldb).
template <class T, class Epi>
void mma_gemm(const mma_gemm_args<T>& g, Epi epi, cudaStream_t stream) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, __nv_bfloat16>, "mma_gemm: T is float or bf16");
  gmi::require(g.M >= 0 && g.N >= 0 && g.K >= 1, "mma_gemm K", g.K, ">= 1 (and M, N >= 0)");
  gmi::require(g.lda >= g.K && g.ldb >= g.K, "mma_gemm lda/ldb", g.lda < g.K ? g.lda : g.ldb, ">= K " + std::to_string(g.K));
  if (g.M == 0 || g.N == 0) return;
  const dim3 grid(static_cast<unsigned>((g.N + detail::mma_bn - 1) / detail::mma_bn),
                  static_cast<unsigned>((g.M + detail::mma_bm - 1) / detail::mma_bm));
  if (mma_gemm_vectorized(g)) {
    detail::mma_gemm_kernel<T, 16, Epi><<<grid, detail::mma_threads, 0, stream>>>(g, epi);
  } else {
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      const bool even = g.lda % 2 == 0 && g.ldb % 2 == 0 && reinterpret_cast<std::uintptr_t>(g.a) % 4 == 0 &&
                        reinterpret_cast<std::uintptr_t>(g.b) % 4 == 0;
      gmi::require(even, "mma_gemm bf16 lda", g.lda, "even, with ldb even and 4-byte aligned operands");
    }
    detail::mma_gemm_kernel<T, 4, Epi><<<grid, detail::mma_threads, 0, stream>>>(g, epi);
  }
  GMI_CUDA_TRY(cudaGetLastError());
}

}  // namespace gmi::nn

#pragma once
// The kernel of comm::peer_allreduce: one launch per GMI and call does the whole hierarchical allreduce over peer
// device memory. The floats are cut into n x m parts, part (j, r) = the r-th of GPU j's slice.
//   phase 1: GMI r of GPU g sums part (j, r) of its GPU's m buffers and stores it into row g of GPU j's landing
//            rows (over NVLink for j != g), for every j; then tells GPU j (arrived).
//   phase 2: once every GPU's GMI r has arrived, it adds the n rows of part (g, r) and stores the sum into every
//            GPU's result; then tells every GPU (done).
//   phase 3: once every part of its GPU's result is done, it copies the result into its own buffer (copy back).
// The local sum happens while the stores cross the links, so it costs no step of its own, and the GPU's m GMIs
// share the work on their own SMs. A GMI's blocks meet through counters in its GPU's flag words; every wait gives
// up at its deadline or when the host's stall word is raised, and then raises it for everyone.

#include <cstdint>

#include <gmi/cuda/flag_wait.cuh>

namespace gmi::comm::detail {

inline constexpr int peer_max_gpus = 8;
inline constexpr int peer_max_local = 16;
inline constexpr int peer_words_apart = 32;  // flag words 128 bytes apart
inline constexpr int peer_threads = 512;

// The flag words of one GPU (slots, each peer_words_apart words), for m GMIs a GPU and n GPUs.
struct peer_layout {
  int n = 1, m = 1;
  __host__ __device__ int ready(int r) const { return r; }                            // GMI r's buffer is this call's
  __host__ __device__ int arrived(int r, int src) const { return m + r * n + src; }   // part (this GPU, r) from src
  __host__ __device__ int done(int r, int src) const { return m + m * n + r * n + src; }  // sum of part (src, r)
  __host__ __device__ int phase1(int r) const { return m + 2 * m * n + r; }           // GMI r's blocks past phase 1
  __host__ __device__ int phase2(int r) const { return 2 * m + 2 * m * n + r; }       // ... past phase 2
  __host__ __device__ int generation(int r) const { return 3 * m + 2 * m * n + r; }   // GMI r's last call
  __host__ __device__ int slots() const { return 4 * m + 2 * m * n; }
};
inline constexpr std::size_t peer_flag_bytes = 64 << 10;  // >= (4 x 16 + 2 x 16 x 8) slots x 128 bytes
static_assert(std::size_t{4 * peer_max_local + 2 * peer_max_local * peer_max_gpus} * peer_words_apart * 4 <=
              peer_flag_bytes);

// Start of part p of `parts` over `count` floats: a multiple of 4 floats (float4 stores), the last part ends at count.
__host__ __device__ inline std::uint64_t peer_bound(std::uint64_t count, int p, int parts) {
  return p >= parts ? count : count * static_cast<std::uint64_t>(p) / static_cast<std::uint64_t>(parts) / 4 * 4;
}

struct peer_args {
  const float* local[peer_max_local] = {};  // the m buffers of this GPU's GMIs (this GMI's own at [r])
  float* landing[peer_max_gpus] = {};       // GPU j's landing rows: n rows of `stride` floats, row src from GPU src
  float* result[peer_max_gpus] = {};        // GPU j's result (count floats)
  std::uint32_t* flags[peer_max_gpus] = {};  // GPU j's flag words
  float* mine = nullptr;                    // copy back into this (nullptr: the GMIs read result[gpu])
  std::uint64_t count = 0, stride = 0;
  int n = 1, m = 1, gpu = 0, r = 0;
  const volatile std::uint32_t* abort = nullptr;  // the host's stall word (mapped host memory)
  std::uint32_t* stalled = nullptr;               // the same word, written when a wait gives up
  unsigned long long timeout_ns = 0;
};

__device__ inline float4 add4(float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }

// Thread 0 waits until `count` slots from `first` reach g (then every thread of the block goes on), or gives up
// and raises the stall word; false for every thread of the block then.
__device__ inline bool peer_block_wait(const peer_args& a, const std::uint32_t* first, int count, int apart,
                                       std::uint32_t g, int* verdict) {
  if (threadIdx.x == 0) {
    const bool ok = cuda::detail::wait_generations(first, count, apart, g, a.abort, a.timeout_ns);
    if (!ok) {
      *a.stalled = 1;
      __threadfence_system();
    }
    __threadfence_system();  // what the peers (some on other GPUs) stored before their flags, before this block reads it
    *verdict = ok ? 1 : 0;
  }
  __syncthreads();
  return *verdict != 0;
}

// out[i] = sum over k < rows of in_k[i] for i in [lo, hi); in_k = in + k * in_apart; written to every one of
// `outs` outputs (out_k = outs[k] + out_shift). lo is a multiple of 4; a tail of 1..3 floats only at the end.
__device__ inline void peer_sum_range(const float* const* in, std::uint64_t in_apart, int rows, float* const* outs,
                                      int out_count, std::int64_t in_shift, std::int64_t out_shift, std::uint64_t lo,
                                      std::uint64_t hi, std::uint64_t thread, std::uint64_t threads) {
  constexpr int unroll = 4;
  const std::uint64_t v_lo = lo / 4, v_hi = hi / 4;
  for (std::uint64_t v = v_lo + thread; v < v_hi; v += unroll * threads) {
    float4 acc[unroll];
#pragma unroll
    for (int u = 0; u < unroll; ++u) acc[u] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int k = 0; k < rows; ++k) {
      const float* src = (in_apart ? in[0] + k * in_apart : in[k]) + in_shift;
#pragma unroll
      for (int u = 0; u < unroll; ++u) {
        const std::uint64_t w = v + u * threads;
        if (w < v_hi) acc[u] = add4(acc[u], __ldcg(reinterpret_cast<const float4*>(src) + w));
      }
    }
    for (int o = 0; o < out_count; ++o) {
#pragma unroll
      for (int u = 0; u < unroll; ++u) {
        const std::uint64_t w = v + u * threads;
        if (w < v_hi) reinterpret_cast<float4*>(outs[o] + out_shift)[w] = acc[u];
      }
    }
  }
  for (std::uint64_t i = v_hi * 4 + thread; i < hi; i += threads) {
    if (i < lo) continue;
    float s = 0.f;
    for (int k = 0; k < rows; ++k) s += __ldcg((in_apart ? in[0] + k * in_apart : in[k]) + in_shift + i);
    for (int o = 0; o < out_count; ++o) outs[o][out_shift + i] = s;
  }
}

// Counts this block past a phase in slot `counter` of its GPU's flags; block 0 then waits for every block (the
// counter at g x blocks) and returns true to go on for the whole grid.
__device__ inline bool peer_grid_arrive(const peer_args& a, int counter, std::uint32_t g, int* verdict) {
  __threadfence_system();  // this thread's stores (some on other GPUs) before the count
  __syncthreads();
  std::uint32_t* own = a.flags[a.gpu];
  if (threadIdx.x == 0) atomicAdd(own + counter * peer_words_apart, 1u);
  if (blockIdx.x != 0) return true;
  return peer_block_wait(a, own + counter * peer_words_apart, 1, peer_words_apart, g * gridDim.x, verdict);
}

__global__ static void __launch_bounds__(peer_threads) peer_allreduce_kernel(peer_args a) {
  __shared__ int verdict;
  __shared__ std::uint32_t gen_shared;
  const peer_layout L{a.n, a.m};
  std::uint32_t* own = a.flags[a.gpu];
  if (threadIdx.x == 0) gen_shared = *reinterpret_cast<volatile std::uint32_t*>(own + L.generation(a.r) * peer_words_apart) + 1;
  __syncthreads();
  const std::uint32_t g = gen_shared;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    __threadfence_system();  // the stream's earlier writes to this GMI's buffer before "ready"
    atomicExch(own + L.ready(a.r) * peer_words_apart, g);
  }
  // Every GMI of this GPU has its gradient in place.
  if (!peer_block_wait(a, own + L.ready(0) * peer_words_apart, a.m, peer_words_apart, g, &verdict)) return;
  const std::uint64_t thread = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  const std::uint64_t threads = std::uint64_t{gridDim.x} * blockDim.x;
  const int parts = a.n * a.m;
  // Phase 1: part (j, r) of the m buffers, summed, into row `gpu` of GPU j's landing rows; GPU g + 1 first.
  for (int k = 1; k <= a.n; ++k) {
    const int j = (a.gpu + k) % a.n;
    const std::uint64_t base = peer_bound(a.count, j * a.m, parts);
    float* row = a.landing[j] + a.gpu * a.stride;
    peer_sum_range(a.local, 0, a.m, &row, 1, 0, -static_cast<std::int64_t>(base),
                      peer_bound(a.count, j * a.m + a.r, parts), peer_bound(a.count, j * a.m + a.r + 1, parts), thread,
                      threads);
  }
  if (!peer_grid_arrive(a, L.phase1(a.r), g, &verdict)) return;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    own[L.generation(a.r) * peer_words_apart] = g;  // every block has read it by now
    __threadfence_system();
    for (int j = 0; j < a.n; ++j) atomicExch(a.flags[j] + L.arrived(a.r, a.gpu) * peer_words_apart, g);
  }
  // Phase 2: every GPU's row of part (gpu, r) has arrived; their sum into every GPU's result.
  if (!peer_block_wait(a, own + L.arrived(a.r, 0) * peer_words_apart, a.n, peer_words_apart, g, &verdict)) return;
  {
    const std::uint64_t base = peer_bound(a.count, a.gpu * a.m, parts);
    const float* rows = a.landing[a.gpu];
    float* outs[peer_max_gpus];
    for (int q = 0; q < a.n; ++q) outs[q] = a.result[(a.gpu + q) % a.n];
    peer_sum_range(&rows, a.stride, a.n, outs, a.n, -static_cast<std::int64_t>(base), 0,
                                  peer_bound(a.count, a.gpu * a.m + a.r, parts),
                                  peer_bound(a.count, a.gpu * a.m + a.r + 1, parts), thread, threads);
  }
  if (!peer_grid_arrive(a, L.phase2(a.r), g, &verdict)) return;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    __threadfence_system();
    for (int q = 0; q < a.n; ++q) atomicExch(a.flags[q] + L.done(a.r, a.gpu) * peer_words_apart, g);
  }
  // Phase 3: every part of this GPU's result is in place.
  if (!peer_block_wait(a, own + L.done(0, 0) * peer_words_apart, a.m * a.n, peer_words_apart, g, &verdict)) return;
  if (a.mine) {
    const float* res = a.result[a.gpu];
    peer_sum_range(&res, 0, 1, &a.mine, 1, 0, 0, 0, a.count, thread, threads);
  }
}

}  // namespace gmi::comm::detail

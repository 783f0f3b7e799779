#pragma once
// The kernel of comm::peer_allreduce: one launch per GMI and call does the whole hierarchical allreduce over peer
// device memory. The floats are cut into n x m parts, part (j, r) = the r-th of GPU j's slice; block b of every
// GMI owns piece b of every part, cut again into K chunks, and works through them as a pipeline:
//   phase 1 of chunk k: GMI r of GPU g sums chunk k of its piece of part (j, r) from its GPU's m buffers and stores
//            it into row g of GPU j's landing rows (over NVLink for j != g), for every j; then writes the chunk's
//            number into its own word of GPU j's slot for (r, b);
//   phase 2 of chunk k: once every word of GPU g's slot for (r, b) says that GPU's block b of GMI r stored that
//            chunk, it adds the n rows and stores the sum into every GPU's result;
//   then, after its last chunk, it adds one to every GPU's done count, and once its own GPU's done count holds
//            every block of every GMI of every GPU, copies the result into its own buffer (copy back).
// The two phases run at once on different warps of a block: the first `producers` threads run phase 1 of chunk
// k + 1 (reading HBM) while the others run phase 2 of chunk k (storing over the links), so the local sum hides
// behind the link traffic even in calls of a few chunks. With producers = 0 every thread runs phase 1 of chunk k,
// then phase 2 of chunk k - 1, in turn. No block waits for more than its counterparts on the other GPUs, and the
// GPU's m GMIs share the work on their own SMs. Chunk numbers and counts are cumulative over calls (32 bits,
// compared cyclically); every wait gives up at its deadline or when the host's stall word is raised, and then
// raises it for everyone.

#include <cstdint>

#include <gmi/comm/flag_wait.cuh>

namespace gmi::comm::detail {

inline constexpr int peer_max_gpus = 8;
inline constexpr int peer_max_local = 16;
inline constexpr int peer_words_apart = 32;  // flag words 128 bytes apart
inline constexpr int peer_threads = 512;

// The flag words of one GPU (slots, each peer_words_apart words), for m GMIs a GPU, n GPUs and G blocks a GMI.
struct peer_layout {
  int n = 1, m = 1, blocks = 1;
  __host__ __device__ int ready(int r) const { return r; }             // GMI r's buffer holds this call's gradient
  __host__ __device__ int generation(int r) const { return m + r; }    // GMI r's last call
  __host__ __device__ int done() const { return 2 * m; }               // blocks, over every GPU, past phase 2
  // Word src of this slot: the last chunk (counted over calls) that GPU src's block b of GMI r stored here.
  __host__ __device__ int arrived(int r, int b) const { return 2 * m + 1 + r * blocks + b; }
  __host__ __device__ int slots() const { return 2 * m + 1 + m * blocks; }
};
inline constexpr std::size_t peer_flag_bytes = 512 << 10;
inline constexpr int peer_max_slots = static_cast<int>(peer_flag_bytes / (peer_words_apart * 4));
inline constexpr int peer_max_chunks = 16;
static_assert(peer_max_gpus <= peer_words_apart, "a slot holds one word per GPU");
inline constexpr std::uint64_t peer_chunk_floats = 8192;  // default: a block's piece goes in chunks of about 32 KiB
inline constexpr int peer_warps = peer_threads / 32;
inline constexpr int peer_producer_warps = 12;  // default: 3 in 4 of a block's warps run phase 1, the rest phase 2

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
  int chunks = 1;  // K; the same on every GMI, as is the grid
  int producers = 0;  // threads (whole warps) that run phase 1 while the others run phase 2; 0: all run both in turn
  int early_launch = 0;  // launched as a programmatic dependent: wait for the grid before, let the next one launch
  const volatile std::uint32_t* abort = nullptr;  // the host's stall word (mapped host memory)
  std::uint32_t* stalled = nullptr;               // the same word, written when a wait gives up
  unsigned long long timeout_ns = 0;
  // Where the time goes (bench and tests): in the call of generation trace_call, thread 0 of every block stores the
  // GPU clock (ns) at peer_trace_points points into trace[block * peer_trace_points + point]; nullptr: no trace.
  unsigned long long* trace = nullptr;
  std::uint32_t trace_call = 0;
};
// The points: the block started, every GMI of its GPU was ready, both phases were done, every block of every GPU
// was done, the block ended (after its copy back).
inline constexpr int peer_trace_points = 5;

__device__ inline float4 add4(float4 a, float4 b) { return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w); }

__device__ inline void peer_group_barrier(int id, int threads) {
  if (id == 0) __syncthreads();
  else asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// The group of `threads` threads from thread `leader` (named barrier `bar`; 0: the whole block): the leader waits
// until `count` slots from `first` reach g (then the whole group goes on), or gives up and raises the stall word;
// false for every thread of the group then. `verdict` is the group's own shared word. `across_gpus`: the flags were
// written on other GPUs (a fence at system scope after the wait), else only by this GPU's GMIs (at GPU scope).
__device__ inline bool peer_group_wait(const peer_args& a, const std::uint32_t* first, int count, int apart,
                                       std::uint32_t g, int leader, int bar, int threads, int* verdict,
                                       bool across_gpus = true) {
  if (static_cast<int>(threadIdx.x) == leader) {
    const bool ok = comm::detail::wait_generations(first, count, apart, g, a.abort, a.timeout_ns);
    if (!ok) {
      *a.stalled = 1;
      __threadfence_system();
    }
    // What the flags' writers stored before them, before this group reads it.
    if (across_gpus) __threadfence_system();
    else __threadfence();
    *verdict = ok ? 1 : 0;
  }
  peer_group_barrier(bar, threads);
  const bool ok = *verdict != 0;
  peer_group_barrier(bar, threads);  // every thread has read it before the leader writes it again
  return ok;
}

__device__ inline bool peer_block_wait(const peer_args& a, const std::uint32_t* first, int count, int apart,
                                       std::uint32_t g, int* verdict, bool across_gpus = true) {
  return peer_group_wait(a, first, count, apart, g, 0, 0, static_cast<int>(blockDim.x), verdict, across_gpus);
}

// acc[u] += rows k .. k + Rows - 1 at float4 v + u * threads (below v_hi), every load issued before any add: one
// memory latency for the group, not one a row.
template <int Rows, int Unroll>
__device__ inline void peer_add_rows(float4 (&acc)[Unroll], const float* const* in, std::uint64_t in_apart,
                                     std::int64_t in_shift, int k, std::uint64_t v, std::uint64_t v_hi,
                                     std::uint64_t threads) {
  float4 t[Rows][Unroll];
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
    const float4* src = reinterpret_cast<const float4*>((in_apart ? in[0] + (k + r) * in_apart : in[k + r]) + in_shift);
#pragma unroll
    for (int u = 0; u < Unroll; ++u) {
      const std::uint64_t w = v + u * threads;
      t[r][u] = w < v_hi ? __ldcg(src + w) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
#pragma unroll
  for (int r = 0; r < Rows; ++r) {
#pragma unroll
    for (int u = 0; u < Unroll; ++u) acc[u] = add4(acc[u], t[r][u]);
  }
}

// out[i] = sum over k < rows of in_k[i] for i in [lo, hi); in_k = in + k * in_apart; written to every one of
// `outs` outputs (out_k = outs[k] + out_shift). lo is a multiple of 4; a tail of 1..3 floats only at the end.
// Each thread holds Unroll float4s of every row of a group of up to Group rows in flight at once.
template <int Unroll, int Group>
__device__ inline void peer_sum_range(const float* const* in, std::uint64_t in_apart, int rows, float* const* outs,
                                      int out_count, std::int64_t in_shift, std::int64_t out_shift, std::uint64_t lo,
                                      std::uint64_t hi, std::uint64_t thread, std::uint64_t threads) {
  static_assert(Group == 1 || Group == 2 || Group == 4 || Group == 8, "rows in flight: 1, 2, 4 or 8");
  const std::uint64_t v_lo = lo / 4, v_hi = hi / 4;
  for (std::uint64_t v = v_lo + thread; v < v_hi; v += Unroll * threads) {
    float4 acc[Unroll];
#pragma unroll
    for (int u = 0; u < Unroll; ++u) acc[u] = make_float4(0.f, 0.f, 0.f, 0.f);
    int k = 0;
    if constexpr (Group >= 8) for (; k + 8 <= rows; k += 8) peer_add_rows<8, Unroll>(acc, in, in_apart, in_shift, k, v, v_hi, threads);
    if constexpr (Group >= 4) for (; k + 4 <= rows; k += 4) peer_add_rows<4, Unroll>(acc, in, in_apart, in_shift, k, v, v_hi, threads);
    if constexpr (Group >= 2) for (; k + 2 <= rows; k += 2) peer_add_rows<2, Unroll>(acc, in, in_apart, in_shift, k, v, v_hi, threads);
    for (; k < rows; ++k) peer_add_rows<1, Unroll>(acc, in, in_apart, in_shift, k, v, v_hi, threads);
    for (int o = 0; o < out_count; ++o) {
#pragma unroll
      for (int u = 0; u < Unroll; ++u) {
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

// Start of chunk k of block b's piece of part p (of parts over count floats), multiples of 4 floats.
__device__ inline std::uint64_t peer_piece(std::uint64_t count, int p, int parts, std::uint64_t q, std::uint64_t pieces) {
  const std::uint64_t lo = peer_bound(count, p, parts), hi = peer_bound(count, p + 1, parts);
  return q >= pieces ? hi : lo + (hi - lo) * q / pieces / 4 * 4;
}

__global__ static void __launch_bounds__(peer_threads) peer_allreduce_kernel(peer_args a) {
  __shared__ int verdict;  // the block's wait's, then the consumers' (the producers never wait)
  __shared__ int failed;
  __shared__ std::uint32_t gen_shared;
  if (a.early_launch) asm volatile("griddepcontrol.wait;" ::: "memory");  // the stream's work before this call
  const peer_layout L{a.n, a.m, static_cast<int>(gridDim.x)};
  std::uint32_t* own = a.flags[a.gpu];
  if (threadIdx.x == 0) {
    gen_shared = *reinterpret_cast<volatile std::uint32_t*>(own + L.generation(a.r) * peer_words_apart) + 1;
    failed = 0;
  }
  __syncthreads();
  const std::uint32_t g = gen_shared;
  const bool tracing = a.trace != nullptr && g == a.trace_call && threadIdx.x == 0;
  const auto stamp = [&](int point) {
    if (tracing) a.trace[blockIdx.x * peer_trace_points + point] = comm::detail::global_ns();
  };
  stamp(0);
  if (threadIdx.x == 0) {  // every block: the GMI is ready as soon as its first block runs
    __threadfence();  // the stream's earlier writes to this GMI's buffer before "ready" (read on this GPU only)
    atomicExch(own + L.ready(a.r) * peer_words_apart, g);
  }
  // Every GMI of this GPU has its gradient in place.
  if (!peer_block_wait(a, own + L.ready(0) * peer_words_apart, a.m, peer_words_apart, g, &verdict, false)) return;
  stamp(1);
  const int parts = a.n * a.m, b = static_cast<int>(blockIdx.x), K = a.chunks;
  const std::uint64_t pieces = std::uint64_t{gridDim.x} * static_cast<std::uint64_t>(K);
  const int arrived = L.arrived(a.r, b);
  const auto chunk_number = [&](int k) { return (g - 1) * static_cast<std::uint32_t>(K) + static_cast<std::uint32_t>(k) + 1; };
  // Phase 1 of chunk k on `threads` threads (this one is `t`): this GMI's part of every GPU's slice, summed over
  // the GPU's m buffers, into row `gpu` of that GPU's landing rows, GPU g + 1 first; then the chunk's number into
  // this GPU's word of every GPU's slot (r, b), by the group's first thread, after the group's barrier `bar`.
  const auto phase1 = [&](int k, std::uint64_t t, int threads, int bar) {
    const std::uint64_t q = static_cast<std::uint64_t>(b) * K + k;
    for (int step = 1; step <= a.n; ++step) {
      const int j = (a.gpu + step) % a.n, p = j * a.m + a.r;
      const std::uint64_t base = peer_bound(a.count, j * a.m, parts);
      float* row = a.landing[j] + a.gpu * a.stride;
      peer_sum_range<2, 8>(a.local, 0, a.m, &row, 1, 0, -static_cast<std::int64_t>(base),
                     peer_piece(a.count, p, parts, q, pieces), peer_piece(a.count, p, parts, q + 1, pieces), t,
                     static_cast<std::uint64_t>(threads));
    }
    __threadfence_system();  // this thread's stores (some on other GPUs) before the counts
    peer_group_barrier(bar, threads);
    if (t == 0) {
      for (int step = 1; step <= a.n; ++step)
        atomicExch_system(a.flags[(a.gpu + step) % a.n] + arrived * peer_words_apart + a.gpu, chunk_number(k));
    }
  };
  // Phase 2 of chunk k on the group of `threads` threads from `leader` (barrier `bar`): every GPU's row of it has
  // arrived; their sum into every GPU's result.
  const auto phase2 = [&](int k, int leader, int threads, int bar) {
    if (!peer_group_wait(a, own + arrived * peer_words_apart, a.n, 1, chunk_number(k), leader, bar, threads, &verdict))
      return false;
    const int p = a.gpu * a.m + a.r;
    const std::uint64_t q = static_cast<std::uint64_t>(b) * K + k;
    const std::uint64_t base = peer_bound(a.count, a.gpu * a.m, parts);
    const float* rows = a.landing[a.gpu];
    float* outs[peer_max_gpus];
    for (int o = 0; o < a.n; ++o) outs[o] = a.result[(a.gpu + o) % a.n];
    peer_sum_range<4, 1>(&rows, a.stride, a.n, outs, a.n, -static_cast<std::int64_t>(base), 0,
                   peer_piece(a.count, p, parts, q, pieces), peer_piece(a.count, p, parts, q + 1, pieces),
                   threadIdx.x - static_cast<unsigned>(leader), static_cast<std::uint64_t>(threads));
    return true;
  };
  const int P = a.producers, all = static_cast<int>(blockDim.x);
  if (P == 0) {  // in turn: phase 1 of chunk k, then phase 2 of chunk k - 1
    for (int k = 0; k < K; ++k) {
      phase1(k, threadIdx.x, all, 0);
      if (k > 0 && !phase2(k - 1, 0, all, 0)) return;
    }
    if (!phase2(K - 1, 0, all, 0)) return;
  } else if (static_cast<int>(threadIdx.x) < P) {  // producers: phase 1 of every chunk, back to back
    for (int k = 0; k < K; ++k) phase1(k, threadIdx.x, P, 1);
  } else {  // consumers: phase 2 of every chunk, each once its rows have arrived
    for (int k = 0; k < K; ++k) {
      if (!phase2(k, P, all - P, 2)) {
        if (static_cast<int>(threadIdx.x) == P) failed = 1;
        break;
      }
    }
  }
  __threadfence_system();
  __syncthreads();
  if (failed) return;
  stamp(2);
  if (threadIdx.x == 0) {
    for (int t = 1; t <= a.n; ++t) atomicAdd_system(a.flags[(a.gpu + t) % a.n] + L.done() * peer_words_apart, 1u);
  }
  // Every block of every GMI of every GPU has stored its sums into this GPU's result.
  const std::uint32_t total = g * static_cast<std::uint32_t>(a.n * a.m) * gridDim.x;
  if (!peer_block_wait(a, own + L.done() * peer_words_apart, 1, peer_words_apart, total, &verdict)) return;
  stamp(3);
  if (b == 0 && threadIdx.x == 0) own[L.generation(a.r) * peer_words_apart] = g;  // every block has read it
  // Every grid of this GPU's GMIs is resident (each block counted in done), so the stream's next grid may launch
  // now and take SMs as this one's blocks leave.
  if (a.early_launch) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (a.mine) {
    const float* res = a.result[a.gpu];
    peer_sum_range<4, 1>(&res, 0, 1, &a.mine, 1, 0, 0, 0, a.count, blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x,
                   std::uint64_t{gridDim.x} * blockDim.x);
  }
  stamp(4);
}

}  // namespace gmi::comm::detail

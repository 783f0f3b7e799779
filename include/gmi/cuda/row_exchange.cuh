#pragma once
// The device side of cuda::row_exchange, for one block (every thread calls each step, in this order):
//
//   std::uint32_t g;
//   if (exchange_begin(x, g, scratch)) {         // this call's generation; every peer is done reading my row
//     ... write x.rows[x.rank] ...
//     if (exchange_post(x, g, scratch)) {        // my row is published and every peer's row of this call is there
//       ... s[q] = exchange_gpu_sum(x, g, q) for every entry q (read x.rows[0 .. size) with exchange_load) ...
//       if (exchange_across(x, g, n)) {          // several GPUs: every GPU's sums of entries 0 .. n are here
//         ... total[q] = exchange_total(x, g, q, s[q]) ...
//       }
//       exchange_release(x, g);                  // I no longer read the peers' rows
//     }
//   }
//
// A member's row is rewritten only after every peer released the previous call, so one row per member suffices
// and a call costs one wait on the peers' rows (plus a wait on releases that has normally long been met). Across
// GPUs each entry travels tagged with its call's generation (one 64-bit store), so a GPU's sums need no word and
// no system fence behind them, and each thread waits only for the entries it reads. Two slots per GPU and inbox
// alternate: GPU j's member 0 rewrites slot (g % 2, j) at call g + 2 only after every other GPU's sums of call
// g + 1 reached it, which that GPU pushes only after its members' call g kernels (and their reads) ended. A
// wait that gives up (deadline, the host's abort word, or another member's stall) sets *stalled (one word for
// the group) and returns false on every thread; the caller then touches no peer's memory. Needs nvcc.

#include <cstdint>

#include <gmi/cuda/flag_wait.cuh>
#include <gmi/cuda/row_exchange.hpp>

namespace gmi::cuda {

// Loads a peer's value past L1 (which is not coherent with the peers' writes).
__device__ inline float exchange_load(const float* p) { return __ldcg(p); }

// scratch: two words of shared memory.
__device__ inline bool exchange_begin(const row_exchange& x, std::uint32_t& generation, std::uint32_t* scratch) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const std::uint32_t g = *x.counter + 1;
    *x.counter = g;
    const bool ok =
        x.size == 1 || detail::wait_generations(x.released, x.size, x.apart, g - 1, x.abort, x.timeout_ns, x.stalled);
    if (!ok) *x.stalled = 1;
    scratch[0] = g;
    scratch[1] = ok ? 1u : 0u;
  }
  __syncthreads();
  generation = scratch[0];
  return scratch[1] != 0;
}

__device__ inline bool exchange_post(const row_exchange& x, std::uint32_t generation, std::uint32_t* scratch) {
  __syncthreads();  // every thread's writes to the row, before the flag
  if (threadIdx.x == 0 && x.size > 1) {
    __threadfence();  // the members share this GPU: its scope covers them
    atomicExch(x.posted + x.rank * x.apart, generation);
    const bool ok = detail::wait_generations(x.posted, x.size, x.apart, generation, x.abort, x.timeout_ns, x.stalled);
    if (!ok) *x.stalled = 1;
    __threadfence();  // the peers' rows behind their flags, before this block reads them
    scratch[1] = ok ? 1u : 0u;
  } else if (threadIdx.x == 0) {
    scratch[1] = 1u;
  }
  __syncthreads();
  return scratch[1] != 0;
}

// An entry of the level across GPUs: the call's generation in the high half, the float's bits in the low half.
__device__ inline std::uint64_t tagged_entry(float v, std::uint32_t generation) {
  return static_cast<std::uint64_t>(generation) << 32 | __float_as_uint(v);
}
__device__ inline std::uint64_t load_entry(const std::uint64_t* p) { return *reinterpret_cast<const volatile std::uint64_t*>(p); }

// Pushing ahead, with one member per GPU: a kernel that runs before the exchange's next call on the same stream
// (generation exchange_next_generation(x)) writes this GPU's values for that call, tagged, into every other GPU's
// inbox, at entry `at` of this GPU's slot: e.g. the partial rows of the sum the call would add up, so that their
// flight overlaps the call's launch. The call then reads them with exchange_wait_entry instead of exchange_across
// and exchange_total (and pushes nothing itself).
__device__ inline std::uint32_t exchange_next_generation(const row_exchange& x) { return *x.counter + 1; }
__device__ inline void exchange_push_ahead(const row_exchange& x, std::uint32_t generation, std::size_t at, float v) {
  const std::size_t e = ((generation & 1u) * x.gpus + x.gpu) * x.gpu_stride + at;
  const std::uint64_t tagged = tagged_entry(v, generation);
  for (int t = 0; t < x.gpus; ++t) {
    if (x.inbox_shared ? t == x.gpu : t != x.gpu) *reinterpret_cast<volatile std::uint64_t*>(x.inbox_entries[t] + e) = tagged;
  }
}

// Entry q of this GPU's sum: its members' rows added in rank order (every entry loaded first: one wait on L2
// instead of one per member). With a level across GPUs, member 0 also pushes it, tagged, into every other GPU's
// inbox (into the one shared inbox once).
__device__ inline float exchange_gpu_sum(const row_exchange& x, std::uint32_t generation, std::size_t q) {
  float r[row_exchange::max_members];
#pragma unroll
  for (int k = 0; k < row_exchange::max_members; ++k) {
    if (k < x.size) r[k] = exchange_load(x.rows[k] + q);
  }
  float s = r[0];
#pragma unroll
  for (int k = 1; k < row_exchange::max_members; ++k) {
    if (k < x.size) s += r[k];
  }
  if (x.gpus > 1 && x.rank == 0) exchange_push_ahead(x, generation, q, s);
  return s;
}

// One thread's wait for GPU j's entry `at` of call `generation` in this GPU's inbox: true with its value in v;
// false when the deadline (from `start`) passed, or, looked at more rarely, the abort or stall word is set.
__device__ inline bool exchange_wait_entry(const row_exchange& x, std::uint32_t generation, int j, std::size_t at,
                                           float& v, unsigned long long start, unsigned& spins) {
  const std::uint64_t* e = x.inbox_entries[x.gpu] + ((generation & 1u) * x.gpus + j) * x.gpu_stride + at;
  for (;;) {
    const std::uint64_t got = load_entry(e);
    if (static_cast<std::uint32_t>(got >> 32) == generation) {
      v = __uint_as_float(static_cast<std::uint32_t>(got));
      return true;
    }
    if ((++spins & 255) == 0) {  // the deadline now and then; the words (maybe host memory) more rarely
      if (detail::global_ns() - start > x.timeout_ns) return false;
      if ((spins & 4095) == 0 && (*x.abort != 0 || *reinterpret_cast<volatile std::uint32_t*>(x.stalled) != 0))
        return false;
    }
    __nanosleep(32);
  }
}

// GPU j's values pushed ahead at entries first, first + step, ... (n of them), added in that order starting from
// 0.0f (the order of GPU j's own sum of them, so the same bits): loads go out 16 at a time, then each entry not
// there yet is waited for. False if a wait gave up.
__device__ inline bool exchange_sum_pushed(const row_exchange& x, std::uint32_t generation, int j, std::size_t first,
                                           std::size_t step, std::size_t n, float& sum, unsigned long long start,
                                           unsigned& spins) {
  const std::uint64_t* slot = x.inbox_entries[x.gpu] + ((generation & 1u) * x.gpus + j) * x.gpu_stride + first;
  constexpr std::size_t batch = 16;
  float s = 0.0f;
  for (std::size_t w0 = 0; w0 < n; w0 += batch) {
    std::uint64_t e[batch];
#pragma unroll
    for (std::size_t k = 0; k < batch; ++k) {
      if (w0 + k < n) e[k] = load_entry(slot + (w0 + k) * step);
    }
#pragma unroll
    for (std::size_t k = 0; k < batch; ++k) {
      if (w0 + k >= n) break;
      float v = __uint_as_float(static_cast<std::uint32_t>(e[k]));
      if (static_cast<std::uint32_t>(e[k] >> 32) != generation &&
          !exchange_wait_entry(x, generation, j, first + (w0 + k) * step, v, start, spins))
        return false;
      s += v;
    }
  }
  sum = s;
  return true;
}

// Every thread with its outcome: true on every thread if all waited successfully, else false on every thread and
// the group's stall word set.
__device__ inline bool exchange_agree(const row_exchange& x, bool ok) {
  const bool all = __syncthreads_and(ok) != 0;
  if (!all && threadIdx.x == 0) *reinterpret_cast<volatile std::uint32_t*>(x.stalled) = 1;
  return all;
}

// With a level across GPUs (else true at once), after every entry's exchange_gpu_sum: each thread waits until the
// other GPUs' entries q = threadIdx.x, threadIdx.x + blockDim.x, ... below n of this call are in its GPU's inbox
// (polled where they land), then the block agrees (exchange_agree).
__device__ inline bool exchange_across(const row_exchange& x, std::uint32_t generation, std::size_t n) {
  if (x.gpus == 1) return true;
  const unsigned long long start = detail::global_ns();
  unsigned spins = 0;
  bool ok = true;
  float v;
  for (int j = 0; j < x.gpus && ok; ++j) {
    if (j == x.gpu) continue;
    for (std::size_t q = threadIdx.x; q < n && ok; q += blockDim.x) ok = exchange_wait_entry(x, generation, j, q, v, start, spins);
  }
  return exchange_agree(x, ok);
}

// After exchange_across: entry q's sum over every GPU, the GPUs' sums added in GPU order (this GPU's is `mine`;
// the others' are read from this GPU's inbox).
__device__ inline float exchange_total(const row_exchange& x, std::uint32_t generation, std::size_t q, float mine) {
  if (x.gpus == 1) return mine;
  const std::uint64_t* slots = x.inbox_entries[x.gpu] + (generation & 1u) * x.gpus * x.gpu_stride + q;
  float v[row_exchange::max_gpus];
#pragma unroll
  for (int j = 0; j < row_exchange::max_gpus; ++j) {
    if (j < x.gpus) v[j] = j == x.gpu ? mine : __uint_as_float(static_cast<std::uint32_t>(load_entry(slots + j * x.gpu_stride)));
  }
  float s = v[0];
#pragma unroll
  for (int j = 1; j < row_exchange::max_gpus; ++j) {
    if (j < x.gpus) s += v[j];
  }
  return s;
}

__device__ inline void exchange_release(const row_exchange& x, std::uint32_t generation) {
  __syncthreads();  // every thread's reads of the peers' rows are done
  if (threadIdx.x == 0 && x.size > 1) {
    __threadfence();
    atomicExch(x.released + x.rank * x.apart, generation);
  }
}

}  // namespace gmi::cuda

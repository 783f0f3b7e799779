#pragma once
// The device side of comm::row_exchange, for one block (every thread calls each step, in this order):
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
// alternate: GPU j's members rewrite slot (g % 2, j) at call g + 2 only after every other GPU's sums of call
// g + 1 reached them, which a member of that GPU pushes only after every member of it posted call g + 1, so after
// their call g kernels (and their reads) ended. A
// wait that gives up (deadline, the host's abort word, or another member's stall) sets *stalled (one word for
// the group) and returns false on every thread; the caller then touches no peer's memory. With x.wait_ns set,
// thread 0 adds each wait's nanoseconds there (comm::comm_clock's total), and with x.across_ns the waits for the
// other GPUs' sums there as well. Needs nvcc.

#include <cstdint>

#include <gmi/comm/flag_wait.cuh>
#include <gmi/comm/row_exchange.hpp>

namespace gmi::comm {

// Loads a peer's value past L1 (which is not coherent with the peers' writes).
__device__ inline float exchange_load(const float* p) { return __ldcg(p); }

// With x.wait_ns (a comm_clock's total): a wait's nanoseconds, from `since` to now, added there (one thread).
__device__ inline void exchange_clocked(const row_exchange& x, unsigned long long since) {
  if (x.wait_ns) atomicAdd(x.wait_ns, detail::global_ns() - since);
}

// scratch: two words of shared memory.
__device__ inline bool exchange_begin(const row_exchange& x, std::uint32_t& generation, std::uint32_t* scratch) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const std::uint32_t g = *x.counter + 1;
    *x.counter = g;
    const unsigned long long since = detail::global_ns();
    const bool ok =
        x.size == 1 || detail::wait_generations(x.released, x.size, x.apart, g - 1, x.abort, x.timeout_ns, x.stalled);
    exchange_clocked(x, since);
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
    const unsigned long long since = detail::global_ns();
    const bool ok = detail::wait_generations(x.posted, x.size, x.apart, generation, x.abort, x.timeout_ns, x.stalled);
    exchange_clocked(x, since);
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

// Which member of a GPU pushes entry q of the GPU's sum across: with peer inboxes every member holds the sum, so
// the members take turns by 32 entries (one warp's), and the stores into the other GPUs' memory leave from every
// member's SM instead of one; with host inboxes member 0 (the others' inbox_entries[gpu] is the relay).
__device__ inline bool pushes(const row_exchange& x, std::size_t q) {
  return x.inbox_shared ? x.rank == 0 : static_cast<int>((q >> 5) % static_cast<std::size_t>(x.size)) == x.rank;
}

// With a level across GPUs: entry q of this GPU's sum, tagged, into every other GPU's inbox (into the one shared
// inbox once), if this member pushes it (pushes()). exchange_gpu_sum calls it; a GPU's only member may call it
// itself as soon as it has the entry (its row is its GPU's sum), after exchange_begin.
__device__ inline void exchange_push(const row_exchange& x, std::uint32_t generation, std::size_t q, float s) {
  if (x.gpus > 1 && pushes(x, q)) {
    const std::size_t at = ((generation & 1u) * x.gpus + x.gpu) * x.gpu_stride + q;
    const std::uint64_t e = tagged_entry(s, generation);
    for (int t = 0; t < x.gpus; ++t) {
      if (x.inbox_shared ? t == x.gpu : t != x.gpu) *reinterpret_cast<volatile std::uint64_t*>(x.inbox_entries[t] + at) = e;
    }
  }
}

// Entry q of this GPU's sum: its members' rows added in rank order (every entry loaded first: one wait on L2
// instead of one per member), pushed across (exchange_push).
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
  exchange_push(x, generation, q, s);
  return s;
}

// With a level across GPUs (else true at once), after every entry's exchange_gpu_sum: each thread waits until the
// other GPUs' entries q = threadIdx.x, threadIdx.x + blockDim.x, ... below n of this call are in its GPU's inbox
// (polled where they land; a deadline, the abort word or the group's stall word ends the wait), then the block
// agrees: false on every thread if any gave up. A thread polls its entries `batch` at a time, every load of a
// batch issued before any is looked at, and reloads only those not yet there: one memory latency a poll, not one
// an entry (a thread's entries: its q's times the other GPUs; a kernel short of registers takes fewer at a time).
// With a relay (member 0 of a GPU whose members share host inboxes) each entry seen is also written, as it came,
// to the same place in the relay, where the GPU's other members wait.
template <int batch = 4>
__device__ inline bool exchange_across(const row_exchange& x, std::uint32_t generation, std::size_t n) {
  static_assert(batch >= 1 && batch <= 32, "exchange_across: batch is 1..32 entries");
  if (x.gpus == 1) return true;
  const std::size_t slot = (generation & 1u) * x.gpus * x.gpu_stride;
  const std::uint64_t* slots = x.inbox_entries[x.gpu] + slot;
  const unsigned long long start = detail::global_ns();
  // This thread's entries, q by q and within a q GPU by GPU (this GPU skipped), at offsets below 2^32 from
  // `slots`; a batch's offsets are worked out again at each use rather than held in registers.
  const unsigned stride = static_cast<unsigned>(x.gpu_stride), others = static_cast<unsigned>(x.gpus - 1);
  const unsigned count = static_cast<unsigned>(n), self = static_cast<unsigned>(x.gpu);
  const auto offset = [=](unsigned q, unsigned j) { return (j < self ? j : j + 1) * stride + q; };
  const auto next = [=](unsigned& q, unsigned& j) {
    if (++j == others) {
      j = 0;
      q += blockDim.x;
    }
  };
  unsigned q = threadIdx.x, j = 0;  // the next entry to take into a batch
  bool ok = true;
  unsigned spins = 0;
  while (q < count && ok) {
    const unsigned q0 = q, j0 = j;
    unsigned pending = 0;
#pragma unroll
    for (int k = 0; k < batch; ++k) {
      if (q < count) pending |= 1u << k;
      next(q, j);
    }
    while (pending != 0) {
      std::uint64_t v[batch];
      unsigned qk = q0, jk = j0;
#pragma unroll
      for (int k = 0; k < batch; ++k) {
        if (pending >> k & 1u) v[k] = load_entry(slots + offset(qk, jk));
        next(qk, jk);
      }
      qk = q0;
      jk = j0;
#pragma unroll
      for (int k = 0; k < batch; ++k) {
        if ((pending >> k & 1u) && static_cast<std::uint32_t>(v[k] >> 32) == generation) {
          pending &= ~(1u << k);
          if (x.relay) *reinterpret_cast<volatile std::uint64_t*>(x.relay + slot + offset(qk, jk)) = v[k];
        }
        next(qk, jk);
      }
      if (pending == 0) break;
      if ((++spins & 255) == 0) {  // the deadline now and then; the words (maybe host memory) more rarely
        const bool late = detail::global_ns() - start > x.timeout_ns;
        if (late || ((spins & 4095) == 0 &&
                     (*x.abort != 0 || *reinterpret_cast<volatile std::uint32_t*>(x.stalled) != 0))) {
          ok = false;
          break;
        }
      }
      __nanosleep(32);
    }
  }
  const bool all = __syncthreads_and(ok) != 0;
  if (threadIdx.x == 0) {
    const unsigned long long spent = detail::global_ns() - start;
    if (x.wait_ns) atomicAdd(x.wait_ns, spent);
    if (x.across_ns) atomicAdd(x.across_ns, spent);  // the same span, on the clock of the level across GPUs
    if (!all) *reinterpret_cast<volatile std::uint32_t*>(x.stalled) = 1;
  }
  return all;
}

// After exchange_across: entry q's sum over every GPU, the GPUs' sums added in GPU order (this GPU's is `mine`;
// the others' are read from this GPU's inbox, or from the relay the same thread wrote them to).
__device__ inline float exchange_total(const row_exchange& x, std::uint32_t generation, std::size_t q, float mine) {
  if (x.gpus == 1) return mine;
  const std::uint64_t* slots = (x.relay ? x.relay : x.inbox_entries[x.gpu]) + (generation & 1u) * x.gpus * x.gpu_stride + q;
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

}  // namespace gmi::comm

#pragma once
// The device side of cuda::row_exchange, for one block (every thread calls each step, in this order):
//
//   std::uint32_t g;
//   if (exchange_begin(x, g, scratch)) {         // this call's generation; every peer is done reading my row
//     ... write x.rows[x.rank] ...
//     if (exchange_post(x, g, scratch)) {        // my row is published and every peer's row of this call is there
//       ... read x.rows[0 .. size) with exchange_load ...
//       exchange_release(x, g);                  // I no longer read the peers' rows
//     }
//   }
//
// A member's row is rewritten only after every peer released the previous call, so one row per member suffices
// and a call costs one wait on the peers' rows (plus a wait on releases that has normally long been met). A wait
// that gives up (deadline, the host's abort word, or another member's stall) sets *stalled (one word for the group)
// and returns false on every thread; the caller then touches no peer's memory. Needs nvcc.

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
    const bool ok = detail::wait_generations(x.released, x.size, x.apart, g - 1, x.abort, x.timeout_ns, x.stalled);
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
  if (threadIdx.x == 0) {
    __threadfence_system();
    atomicExch(x.posted + x.rank * x.apart, generation);
    const bool ok = detail::wait_generations(x.posted, x.size, x.apart, generation, x.abort, x.timeout_ns, x.stalled);
    if (!ok) *x.stalled = 1;
    __threadfence();  // the peers' rows behind their flags, before this block reads them
    scratch[1] = ok ? 1u : 0u;
  }
  __syncthreads();
  return scratch[1] != 0;
}

__device__ inline void exchange_release(const row_exchange& x, std::uint32_t generation) {
  __syncthreads();  // every thread's reads of the peers' rows are done
  if (threadIdx.x == 0) {
    __threadfence();
    atomicExch(x.released + x.rank * x.apart, generation);
  }
}

}  // namespace gmi::cuda

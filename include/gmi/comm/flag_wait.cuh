#pragma once
// Device-side waits on generation words: 32-bit counters in device memory that one kernel advances and kernels of
// other GMIs (processes under MPS) poll. A wait gives up at its deadline or when the host raises an abort word, so
// a dead peer never holds a stream forever. Used by comm's kernel handshake (comm/detail/flag_kernel.cuh) and by
// row exchanges inside a kernel (comm/row_exchange.cuh). Needs nvcc.

#include <cstdint>

namespace gmi::comm::detail {

__device__ inline unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Generations are compared cyclically (32 bits).
__device__ inline bool reached(std::uint32_t flag, std::uint32_t g) { return static_cast<std::int32_t>(flag - g) >= 0; }

// Whether the `count` words first[0], first[apart], ... have all reached g. The words are loaded eight at a time,
// every load of a batch issued before any is looked at: one memory latency a batch, not one a word.
__device__ inline bool all_reached(const std::uint32_t* first, int count, int apart, std::uint32_t g) {
  constexpr int batch = 8;
  for (int k = 0; k < count; k += batch) {
    std::uint32_t w[batch];
#pragma unroll
    for (int i = 0; i < batch; ++i) {
      if (k + i < count) w[i] = *reinterpret_cast<const volatile std::uint32_t*>(first + (k + i) * apart);
    }
    bool all = true;
#pragma unroll
    for (int i = 0; i < batch; ++i) all = all && (k + i >= count || reached(w[i], g));
    if (!all) return false;
  }
  return true;
}

// One thread: waits until the `count` words first[0], first[apart], ... have all reached g. False: *abort (or
// *also, when given) became non-zero or timeout_ns passed first. Those words are read now and then only (they
// may live in mapped host memory).
__device__ inline bool wait_generations(const std::uint32_t* first, int count, int apart, std::uint32_t g,
                                        const volatile std::uint32_t* abort, unsigned long long timeout_ns,
                                        const volatile std::uint32_t* also = nullptr) {
  const unsigned long long start = global_ns();
  for (unsigned spins = 0;; ++spins) {
    if (all_reached(first, count, apart, g)) return true;
    if ((spins & 255) == 255 && (*abort != 0 || (also && *also != 0) || global_ns() - start > timeout_ns)) return false;
    __nanosleep(64);
  }
}

}  // namespace gmi::comm::detail

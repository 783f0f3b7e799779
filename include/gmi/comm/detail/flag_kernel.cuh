#pragma once
// The kernel handshake of the hierarchical allreduce: one-thread kernels that set and poll generation flags in
// device memory, queued on each GMI's stream between its own work. No host waits and no interprocess events
// per call: a GMI's host only enqueues. A kernel that waits gives up at its deadline or when the host raises the
// abort word (mapped host memory) and says so in the stall word, so a dead peer never holds a stream forever.

#include <cuda_runtime_api.h>

#include <cstdint>

#include <gmi/comm/intra_gpu_reduce.cuh>
#include <gmi/cuda/check.hpp>
#include <gmi/comm/flag_wait.cuh>

namespace gmi::comm::detail {

// Flags in one device allocation, 128 bytes apart: ready[r], sliced[r], done, and skip[r]: GMI r's flag kernels
// leave 1 there when they gave up, so the sum kernels behind them on r's stream touch no buffer (one read from
// device memory per block; a read of the abort word in mapped host memory from every block costs milliseconds).
// Then posted[r] and released[r], the words of the row exchange inside a kernel (comm::row_exchange), which
// counts its own calls.
inline constexpr int flag_words_apart = 32;
inline constexpr int flag_slots = 5 * max_local_gmis + 1;
inline constexpr std::size_t flag_words = std::size_t{flag_slots} * flag_words_apart;
inline constexpr int ready_slot(int r) { return r; }
inline constexpr int sliced_slot(int r) { return max_local_gmis + r; }
inline constexpr int done_slot = 2 * max_local_gmis;
inline constexpr int skip_slot(int r) { return 2 * max_local_gmis + 1 + r; }
inline constexpr int posted_slot(int r) { return 3 * max_local_gmis + 1 + r; }
inline constexpr int released_slot(int r) { return 4 * max_local_gmis + 1 + r; }

struct flag_op {
  std::uint32_t* flags = nullptr;  // device memory (this GMI's mapping of the leader's allocation)
  int set_slot = -1;               // written with `generation` first (after every earlier kernel of the stream)
  int wait_first = 0;              // then wait until slots [wait_first, wait_first + wait_count) reach it
  int wait_count = 0;
  std::uint32_t generation = 0;
  const volatile std::uint32_t* abort = nullptr;  // mapped host memory; non-zero: stop waiting
  std::uint32_t* stalled = nullptr;               // mapped host memory; set to 1 when a wait gave up
  int skip_slot = -1;                             // this GMI's skip word (set to 0 on success, 1 when it gave up)
  unsigned long long timeout_ns = 0;
  // This GMI's generation counter in its own device memory, which follows every call so that a CUDA graph can
  // replay calls: the first kernel of an eager call stores `generation` there (bump) and the others use
  // `generation` as given; in a captured call (replayed) the first kernel adds one to the counter and every
  // kernel of the call uses the counter's value.
  std::uint32_t* counter = nullptr;
  bool bump = false;
  bool replayed = false;
};

__global__ static void flag_kernel(flag_op op) {
  if (op.counter != nullptr) {
    if (op.replayed) {
      if (op.bump) *op.counter += 1;
      op.generation = *op.counter;
    } else if (op.bump) {
      *op.counter = op.generation;
    }
  }
  if (op.set_slot >= 0) {
    __threadfence_system();  // the stream's earlier writes (gradient, slice) before the flag, for every reader
    atomicExch(op.flags + op.set_slot * flag_words_apart, op.generation);
  }
  if (op.wait_count == 0) {
    if (op.skip_slot >= 0) op.flags[op.skip_slot * flag_words_apart] = 0;
    return;
  }
  if (!comm::detail::wait_generations(op.flags + op.wait_first * flag_words_apart, op.wait_count, flag_words_apart,
                                      op.generation, op.abort, op.timeout_ns)) {
    *op.stalled = 1;
    if (op.skip_slot >= 0) op.flags[op.skip_slot * flag_words_apart] = 1;
    __threadfence_system();
    return;
  }
  if (op.skip_slot >= 0) op.flags[op.skip_slot * flag_words_apart] = 0;
  __threadfence();  // the peers' writes behind their flags are visible to this stream's next kernels
}

inline void launch_flag(const flag_op& op, cudaStream_t s) {
  flag_kernel<<<1, 1, 0, s>>>(op);
  GMI_CUDA_TRY(cudaGetLastError());
}

}  // namespace gmi::comm::detail

#pragma once
// comm::comm_clock: how long a GMI's stream spent in its group's communication, on the GPU's global timer (one
// clock for every kernel of the device). Around a call enqueued on a stream (the hierarchical allreduce, NCCL)
// start() and stop() enqueue one-thread kernels that stamp the timer and add the span, so a CUDA graph that
// captured them replays them too; a kernel that communicates itself (a row exchange's waits, comm/row_exchange.cuh)
// adds its spans to total() directly. The spans include waiting for the peers: that is what synchronous training
// pays for its group. The global timer ticks in steps of up to a microsecond; spans that start at random phases
// add up without bias. Needs nvcc.

#include <cuda_runtime_api.h>

#include <gmi/core/cuda_try.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/comm/flag_wait.cuh>

namespace gmi::comm {

namespace detail {
// words[0]: nanoseconds added up; words[1]: the open span's start; words[2]: the part of words[0] spent waiting for
// other GPUs (row exchanges across GPUs add it there too).
__global__ static void comm_clock_start_kernel(unsigned long long* words) { words[1] = global_ns(); }
__global__ static void comm_clock_stop_kernel(unsigned long long* words) { atomicAdd(words, global_ns() - words[1]); }
}  // namespace detail

class comm_clock {
 public:
  explicit comm_clock(cudaStream_t s) : words_(3) {
    words_.fill_bytes(0, s);
    GMI_CUDA_TRY(cudaStreamSynchronize(s));
  }

  // A span on `s`: from when the stream reaches start() to when it reaches stop().
  void start(cudaStream_t s) {
    detail::comm_clock_start_kernel<<<1, 1, 0, s>>>(words_.data());
    GMI_CUDA_TRY(cudaGetLastError());
  }
  void stop(cudaStream_t s) {
    detail::comm_clock_stop_kernel<<<1, 1, 0, s>>>(words_.data());
    GMI_CUDA_TRY(cudaGetLastError());
  }
  // Where kernels add nanoseconds of their own (atomicAdd).
  [[nodiscard]] unsigned long long* total() const noexcept { return words_.data(); }
  // Where a row exchange adds its waits for the other GPUs' sums (a part of total(): comm::row_exchange::across_ns).
  [[nodiscard]] unsigned long long* across_total() const noexcept { return words_.data() + 2; }

  // The seconds added so far (to total(), or with `across` to across_total()), once the work enqueued on `s` is
  // done (waits for it).
  [[nodiscard]] double seconds(cudaStream_t s, bool across = false) const {
    unsigned long long ns = 0;
    GMI_CUDA_TRY(cudaMemcpyAsync(&ns, across ? across_total() : total(), sizeof ns, cudaMemcpyDeviceToHost, s));
    GMI_CUDA_TRY(cudaStreamSynchronize(s));
    return static_cast<double>(ns) * 1e-9;
  }

 private:
  cuda::device_buffer<unsigned long long> words_;
};

}  // namespace gmi::comm

#pragma once
// A float sum over an NCCL communicator as one allgather and a local sum: every rank receives every rank's
// vector in rank order and adds them with the same pairwise tree, so every rank gets the same bits. Between
// hosts a small sum is bound by the hops, not the bytes: a ring allreduce makes 2 (n - 1) dependent hops, the
// allgather n - 1, and with 2 ranks each rank sends the same bytes either way. nccl_communicator::sum_through_
// allgather takes the kernel below (nccl.hpp is compiled by the host compiler too, so the kernel lives here).

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include <gmi/comm/nccl.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>

namespace gmi::comm {

namespace detail {
// out[i] = the pairwise tree over r of rows[r * count + i], r = 0 .. n-1: neighbours at distance 1, then 2, 4, ...
// (the tree that splits n at its largest power of two below, host_sum's order). n <= max_gathered_ranks.
__global__ static void gathered_sum_kernel(const float* __restrict__ rows, int n, std::size_t count,
                                           float* __restrict__ out) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    if (n == 2) {  // the cross-host case auto picks: no array in local memory
      out[i] = rows[i] + rows[count + i];
      continue;
    }
    float v[max_gathered_ranks];
    for (int r = 0; r < n; ++r) v[r] = rows[static_cast<std::size_t>(r) * count + i];
    for (int step = 1; step < n; step *= 2) {
      for (int r = 0; r + step < n; r += 2 * step) v[r] += v[r + step];
    }
    out[i] = v[0];
  }
}

inline void launch_gathered_sum(const float* rows, int n, std::size_t count, float* out, cudaStream_t stream) {
  if (count == 0) return;
  constexpr unsigned threads = 256;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((count + threads - 1) / threads, 1024));
  gathered_sum_kernel<<<blocks, threads, 0, stream>>>(rows, n, count, out);
  GMI_CUDA_TRY(cudaGetLastError());
}
}  // namespace detail

// The rows an allgather sum needs on one communicator (ranks x capacity floats on the current device), and the
// communicator switched to it: its float sums of at most `capacity` floats then go through one allgather into
// these rows and the tree sum. `direct`: the rows through a send to and a receive from every rank (one group)
// instead of ncclAllGather (--cross-host-sum direct). Build it after the communicator, on its device, before any
// capture; it must live as long as the communicator sums (the communicator keeps only the pointer).
class gathered_sum_rows {
 public:
  gathered_sum_rows(nccl_communicator& comm, std::size_t capacity, bool direct = false)
      : rows_(static_cast<std::size_t>(comm.size()) * capacity) {
    require(comm.size() >= 1 && comm.size() <= max_gathered_ranks, "ranks of an allgather sum", comm.size(),
            "1.." + std::to_string(max_gathered_ranks) + " (more ranks: NCCL's allreduce)");
    comm.sum_through_allgather(gathered_sum{rows_.data(), capacity, &detail::launch_gathered_sum, direct});
  }
  gathered_sum_rows(const gathered_sum_rows&) = delete;
  gathered_sum_rows& operator=(const gathered_sum_rows&) = delete;

 private:
  cuda::device_buffer<float> rows_;
};

}  // namespace gmi::comm

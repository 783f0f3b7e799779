#pragma once
// Host-compiled entry points into comm/gathered_sum.cuh for the doctest file (doctest stays out of nvcc).
#include <cstddef>
#include <string>
#include <vector>

namespace gmi_test {
// The kernel alone on GPU 0: `rows` (n x count, rank-major) summed in rank order; the result copied back.
std::vector<float> gathered_sum_kernel(const std::vector<float>& rows, int n, std::size_t count);

// Two ranks on GPUs 0 and 1 (a thread each, one NCCL communicator) sum their vectors: NCCL's allreduce, then the
// allgather sum eagerly, then the allgather sum captured in a CUDA graph and replayed on new values (`b_second`
// and `a_second`); then the same two through the direct gather (a send to and a receive from each rank, one
// group). Each field: rank 0's and rank 1's results.
struct two_rank_sums {
  std::vector<float> allreduce[2], gathered[2], replayed[2], direct[2], direct_replayed[2];
  std::string error;  // a rank's exception, if any
};
two_rank_sums two_rank_sums_of(const std::vector<float> (&first)[2], const std::vector<float> (&second)[2]);

// Four ranks on GPUs 0-3 as 2 hosts x 2 GPUs (comm/two_level_sum.cuh: the host's GPUs, then GPU k of both hosts;
// in one process NCCL sees one host, so this checks the bits, not the transports): the one-level allgather sum over
// all 4, the direct gather's (eagerly, and replayed on `second`), then the two-level sum eagerly, then captured in a
// CUDA graph and replayed on `second`. Each field: rank r's result.
struct four_rank_sums {
  std::vector<float> gathered[4], direct[4], direct_replayed[4], two_level[4], replayed[4];
  std::string error;
};
four_rank_sums four_rank_sums_of(const std::vector<float> (&first)[4], const std::vector<float> (&second)[4]);
}  // namespace gmi_test

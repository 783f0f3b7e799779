#pragma once
// The most ranks a gathered sum adds (comm/gathered_sum.cuh's kernel keeps one value a rank in registers): the
// allgather and direct sums across hosts and each level of the two-level sum. Host code, so the choice of a
// cross-host sum (pipeline/cross_host_sum.hpp) is testable without NCCL.

namespace gmi::comm {

inline constexpr int max_gathered_ranks = 64;

}  // namespace gmi::comm

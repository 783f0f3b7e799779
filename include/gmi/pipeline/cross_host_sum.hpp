#pragma once
// Across hosts, which sum the GPUs' leaders use for a minibatch's gradients (--cross-host-sum, gmi_gradient_sync in
// pipeline/colocated_gmis.cuh). Host code: tests check the choice without NCCL or a GPU.

#include <string>

#include <gmi/comm/gathered_ranks.hpp>
#include <gmi/pipeline/run_options.hpp>

namespace gmi {

// "two_level", "direct", "allgather" or "allreduce". Every GMI of every host decides the same: auto takes two
// levels with several GPUs a host (each host's GPUs sum among themselves, then one hop between the hosts:
// comm/two_level_sum.cuh), the allgather with 2 leaders (each sends its whole row once either way, in one hop
// instead of two), else NCCL's allreduce (with more leaders the allgather sends more bytes a rank). "direct" only
// when asked, up to max_gathered_ranks leaders (more: the allreduce): every leader's row to every leader in one
// group of sends and receives, the rows summed as the allgather's.
[[nodiscard]] inline std::string cross_host_sum_used(cross_sum_choice c, int hosts, int gpus_per_host) {
  const int leaders = hosts * gpus_per_host;
  if (c == cross_sum_choice::direct && leaders <= comm::max_gathered_ranks) return "direct";
  const bool fits = hosts <= comm::max_gathered_ranks && gpus_per_host <= comm::max_gathered_ranks;
  if (fits && (c == cross_sum_choice::two_level || (c == cross_sum_choice::automatic && gpus_per_host > 1))) {
    return "two_level";
  }
  const bool gather = leaders <= comm::max_gathered_ranks &&
                      (c == cross_sum_choice::allgather || (c == cross_sum_choice::automatic && leaders == 2));
  return gather ? "allgather" : "allreduce";
}

}  // namespace gmi

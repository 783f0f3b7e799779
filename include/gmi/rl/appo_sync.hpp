#pragma once
// Data-parallel APPO: the hook through which W appo_learners (one trainer GMI per GPU in the split layout) stay
// replicas of one policy. Each learner evaluates and V-traces its own rollouts; at every minibatch the group sums
// the gradient rows (gradient and loss terms; each learner then steps with the mean), and after each update the
// group's observation and return moments, so the normalizers stay identical too. Advantages are normalized per
// learner, as in rl_games' multi-GPU PPO. The transport (NCCL among the GPUs' trainers in the split layout) is
// plugged in as callables, so rl/ depends on none. exec::cuda only.

#include <cstddef>
#include <functional>
#include <string>

#include <gmi/core/error.hpp>

struct CUstream_st;  // cudaStream_t is CUstream_st*: host-only users need no CUDA header

namespace gmi::rl {

struct appo_sync {
  int rank = 0;   // this learner's place in the group, 0 .. world - 1
  int world = 1;  // learners in the group
  // Sum `n` values element-wise across the group, in place, enqueued on `stream` (no host waits: an update is
  // captured as a CUDA graph and replayed). Every learner calls them the same number of times, in the same order,
  // with the same n, and every learner must get the same sums bit for bit (NCCL's allreduce does).
  std::function<void(float* data, std::size_t n, CUstream_st* stream)> sum_floats;    // the gradient row
  std::function<void(double* data, std::size_t n, CUstream_st* stream)> sum_doubles;  // the moments' slots

  // Throws config_error naming the first missing or bad field.
  void validate() const {
    gmi::require(world >= 1, "appo_sync.world", world, ">= 1");
    gmi::require(rank >= 0 && rank < world, "appo_sync.rank", rank,
                 "0.." + std::to_string(world - 1) + " (world " + std::to_string(world) + ")");
    if (!sum_floats) throw gmi::config_error("appo_sync.sum_floats: got none, need a callable (the gradient row's sum)");
    if (!sum_doubles) throw gmi::config_error("appo_sync.sum_doubles: got none, need a callable (the moments' sum)");
  }
};

}  // namespace gmi::rl

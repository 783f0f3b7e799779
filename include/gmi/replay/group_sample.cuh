#pragma once
// A participant of a group sample (group_sample.hpp) whose tables are device tables on one GPU: the five steps with
// its draw on its own device, as multi_gpu_shard_set does for one GPU of one process: its shards' totals copied into
// pinned memory (one wait), published and gathered on the board, the plan, its share drawn over its shards
// (device_shard_set::sample_global with its seed) and scaled to global probabilities, its smallest probability
// copied back (a second wait) and gathered, then its importance weights on the device with the smallest of all. Its
// part of the batch stays on its device; the draws equal draw_over_groups' with one group a participant.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/replay/detail/global_draw.hpp>
#include <gmi/replay/device_placement.cuh>
#include <gmi/replay/group_sample.hpp>
#include <gmi/replay/multi_gpu_shards.cuh>

namespace gmi::replay {

class device_group_participant {
 public:
  // The set (this participant's device tables, created with its device current) and the board outlive it; every
  // call runs with the set's device current.
  device_group_participant(group_board& board, int index, device_shard_set& set)
      : me_(board, index), set_(set), totals_(set.shards()), low_(1), low_dev_(1) {}

  // n draws over every participant's tables (every participant passes the same n, seed and beta): out holds this
  // participant's part on its device (windows of `length` steps, keys, global probabilities, shard within its
  // tables, weights), ready in the set's stream order; out.batch.batch is 0 when its share is 0. Two host waits.
  group_share sample(const sampler& s, std::size_t n, std::size_t length, std::uint64_t seed, double beta,
                     global_device_batch& out) {
    check_global_sample(s, set_.shards(), n, beta);
    set_.enqueue_totals(s, totals_.data());
    GMI_CUDA_TRY(cudaStreamSynchronize(set_.stream()));
    std::vector<double> prefix(set_.shards() + 1);
    detail::global_prefix(totals_.data(), int(set_.shards()), prefix.data());
    group_share share = me_.plan(prefix.back(), n, seed);
    out.batch.batch = 0;
    low_.data()[0] = 1.0;
    if (share.draws > 0) {
      detail::draw_scaled_share(set_, s, share.draws, length, share.seed, share.scale, out, low_dev_.data(),
                                low_.data());
      GMI_CUDA_TRY(cudaStreamSynchronize(set_.stream()));
    }
    const double p_min = me_.smallest(low_.data()[0]);
    if (share.draws > 0) detail::enqueue_weights(set_, share.draws, p_min, beta, out);
    return share;
  }
  // Done sampling: the others stop waiting for this participant.
  void leave() { me_.leave(); }
  [[nodiscard]] device_shard_set& set() noexcept { return set_; }

 private:
  group_participant me_;
  device_shard_set& set_;
  gmi::cuda::pinned_buffer<double> totals_, low_;
  gmi::cuda::device_buffer<double> low_dev_;
};

}  // namespace gmi::replay

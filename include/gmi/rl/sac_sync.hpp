#pragma once
// Data-parallel SAC learners (one per GMI, each sampling its own replay shard): what a learner needs of its group.
// The trainers (sac.hpp, sac.cuh) start every learner from rank 0's weights (a sum in which the others contribute
// zeros) and average each gradient over the group before the optimizer step, so the weights stay bitwise equal.
// The device trainer sums on the device when sum_device is set (no stream wait in an update), else through `sum`.

#include <cstddef>
#include <functional>
#include <span>
#include <string>

#include <gmi/core/error.hpp>

struct CUstream_st;  // cudaStream_t is CUstream_st*: host-only users need no CUDA header

namespace gmi::rl {

// sac_device_trainer's sum buffer 0 (both critics' gradients): critic 1's gradient at 0, critic 2's at this offset,
// the critic size rounded up to 64 floats (the rest zeros), so that both start on 256 bytes. The cuBLASLt products
// write the weight and bias gradients in place, and a bias gradient at a 4-byte offset is one a fused epilogue may
// not take (nn/lt_align.hpp).
constexpr std::size_t sac_second_critic_offset(std::size_t critic_size) { return (critic_size + 63) / 64 * 64; }

struct sac_sync {
  int rank = 0;
  int world = 1;
  // The element-wise sum over the group's learners, in place; every learner must get the same bits back
  // (runtime::context::allreduce does: one result buffer copied to all).
  std::function<void(std::span<float>)> sum;
  // Optional, sac_device_trainer only: enqueue on `stream` the group's element-wise sum of the trainer's device
  // buffer `part` in place (0: both critics' gradients, 1: the actor's gradient and the mean log-prob;
  // sac_device_trainer::sum_buffer gives each), with no wait for the stream (comm::hierarchical_allreduce, non-blocking).
  // Every learner calls it the same number of times in the same order and must get the same bits back.
  std::function<void(int part, CUstream_st* stream)> sum_device;
  // With sum_device: a bounded wait until `stream` has done its sums (a lost peer or a stalled handshake throws).
  std::function<void(CUstream_st* stream)> wait_device;

  [[nodiscard]] bool active() const noexcept { return world > 1 && static_cast<bool>(sum); }
  [[nodiscard]] bool on_device() const noexcept { return active() && static_cast<bool>(sum_device); }

  void validate() const {
    gmi::require(world >= 1, "sac_sync.world", world, ">= 1");
    gmi::require(rank >= 0 && rank < world, "sac_sync.rank", rank, "0.." + std::to_string(world - 1));
    gmi::require(world == 1 || static_cast<bool>(sum), "sac_sync.sum for a group of", world, "a sum function");
    gmi::require(!sum_device || static_cast<bool>(wait_device), "sac_sync.wait_device with sum_device", "none",
                 "a bounded wait for the device sums");
  }

  // v becomes the group's mean.
  void average(std::span<float> v) const {
    if (!active()) return;
    sum(v);
    const float inv = 1.0f / static_cast<float>(world);
    for (float& x : v) x *= inv;
  }

  // v becomes rank 0's v on every learner.
  void broadcast_from_first(std::span<float> v) const {
    if (!active()) return;
    if (rank != 0) {
      for (float& x : v) x = 0.0f;
    }
    sum(v);
  }
};

}  // namespace gmi::rl

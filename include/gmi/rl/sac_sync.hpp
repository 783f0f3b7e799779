#pragma once
// Data-parallel SAC learners (one per GMI, each sampling its own replay shard): what a learner needs of its group.
// The trainers (sac.hpp, sac.cuh) start every learner from rank 0's weights (a sum in which the others contribute
// zeros) and average each gradient over the group before the optimizer step, so the weights stay bitwise equal.
// The device trainer sums on the device when sum_device is set (no stream wait in an update), else through `sum`.
// With `share` (global sampling, sac_global.hpp) each update's batch is one sample of world x batch draws over every
// learner's table, each learner drawing its share from its own table, and each gradient is weighted by that share
// before the mean, so the step is the one a learner drawing the whole batch from the union of the tables would take.

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

// A learner's part of one global sample (sac_sync::share).
struct sac_share {
  std::size_t draws = 0;    // its share of the group's draws (rows of its batch; 0: it contributes nothing)
  std::uint64_t seed = 0;   // the seed of its draws
  double scale = 0.0;       // its table's items / every table's items: its expected share of the draws
};

// A learner's global draws so far: drawn, and expected (sum over updates of the group's draws x its scale).
struct sac_global_counts {
  double drawn = 0.0, expected = 0.0;
  std::uint64_t updates = 0, empty_updates = 0;  // updates with a global sample; those with a share of 0
  void add(const sac_share& s, std::size_t group_draws) {
    drawn += double(s.draws);
    expected += double(group_draws) * s.scale;
    ++updates;
    if (s.draws == 0) ++empty_updates;
  }
};

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
  // Optional, global sampling: called by every learner once an update, in the same order, with its table's items
  // and the group's draws (world x batch); returns this learner's share of them (every learner the same plan, from
  // one seed of the group's).
  std::function<sac_share(std::size_t items, std::size_t draws)> share;

  [[nodiscard]] bool active() const noexcept { return world > 1 && static_cast<bool>(sum); }
  [[nodiscard]] bool on_device() const noexcept { return active() && static_cast<bool>(sum_device); }
  [[nodiscard]] bool global() const noexcept { return active() && static_cast<bool>(share); }
  // This learner's share of an update's batch (batch rows each learner alone) and the factor on its mean gradient
  // before the group's mean: draws / batch, so the group's mean is the mean over all world x batch draws.
  [[nodiscard]] sac_share share_of(std::size_t items, int batch) const {
    sac_share s = share(items, std::size_t(world) * std::size_t(batch));
    gmi::require(s.draws <= std::size_t(world) * std::size_t(batch), "sac_sync.share draws", s.draws,
                 "0.." + std::to_string(std::size_t(world) * std::size_t(batch)));
    return s;
  }

  // One update's draws with global sampling: this learner's share (counted in `counts`) and the factor on its mean
  // gradient, draws / batch.
  struct global_draw {
    std::size_t draws = 0;
    std::uint64_t seed = 0;
    float weight = 0.0f;
  };
  [[nodiscard]] global_draw draw_globally(std::size_t items, int batch, sac_global_counts& counts) const {
    const sac_share s = share_of(items, batch);
    counts.add(s, std::size_t(world) * std::size_t(batch));
    return {s.draws, s.seed, float(s.draws) / float(batch)};
  }

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

#pragma once
// Data-parallel SAC learners (one per GMI, each sampling its own replay shard): what a learner needs of its group.
// The trainers (sac.hpp, sac.cuh) start every learner from rank 0's weights (a sum in which the others contribute
// zeros) and average each gradient over the group before the optimizer step, so the weights stay bitwise equal.

#include <functional>
#include <span>
#include <string>

#include <gmi/core/error.hpp>

namespace gmi::rl {

struct sac_sync {
  int rank = 0;
  int world = 1;
  // The element-wise sum over the group's learners, in place; every learner must get the same bits back
  // (runtime::context::allreduce does: one result buffer copied to all).
  std::function<void(std::span<float>)> sum;

  [[nodiscard]] bool active() const noexcept { return world > 1 && static_cast<bool>(sum); }

  void validate() const {
    gmi::require(world >= 1, "sac_sync.world", world, ">= 1");
    gmi::require(rank >= 0 && rank < world, "sac_sync.rank", rank, "0.." + std::to_string(world - 1));
    gmi::require(world == 1 || static_cast<bool>(sum), "sac_sync.sum for a group of", world, "a sum function");
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

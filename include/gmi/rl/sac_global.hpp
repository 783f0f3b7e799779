#pragma once
// Global sampling over data-parallel SAC learners (--sac-global-sampling): every update's batch is one uniform
// sample of world x batch draws over the union of the learners' tables, without a central server. The learners share
// one replay::group_board (replay/group_sample.hpp) in a comm::shm_segment (learner 0 creates it, the others open
// it; threads of one process and MPS processes alike); each update every learner publishes its table's item count,
// waits (bounded: a learner that does not arrive is named on every other) for the others', and computes the same
// plan: its share of the draws (multinomial, probability items / all items), their seed. It draws that share from
// its own table (sac_trainer, sac_device_trainer) and weights its mean gradient by share / batch before the group's
// mean (sac_sync::share_of), so the step is the mean gradient over all draws. Uniform draws all have probability
// 1 / all items: the importance weights are 1 and the smallest-probability round is not needed.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <gmi/comm/shm_segment.hpp>
#include <gmi/core/error.hpp>
#include <gmi/replay/group_sample.hpp>
#include <gmi/rl/sac_sync.hpp>

namespace gmi::rl {

class sac_global_board {
 public:
  // Learner `rank` of `world` (2 or more) joins the board named by `tag` (one per run; rank 0 creates it, the others
  // wait up to `timeout` for it); `seed`: the group's seed of the plans (the same on every learner); `timeout` also
  // bounds each update's wait for the other learners' counts.
  sac_global_board(const std::string& tag, int rank, int world, std::uint64_t seed, std::chrono::milliseconds timeout)
      : seed_(seed) {
    gmi::require(world >= 2 && world <= 256, "sac global sampling learners", world, "2..256 (data-parallel learners)");
    gmi::require(rank >= 0 && rank < world, "sac global sampling rank", rank, "0.." + std::to_string(world - 1));
    const std::size_t bytes = replay::group_board::bytes_for(world);
    if (rank == 0) {
      segment_ = comm::shm_segment::create(tag, bytes, [&](void* p, std::size_t b) {
        board_.emplace(replay::group_board::role::create, p, b, world, timeout);
      });
    } else {
      segment_ = comm::shm_segment::open(tag, timeout);
      board_.emplace(replay::group_board::role::attach, segment_.data(), segment_.size(), world, timeout);
    }
    me_.emplace(*board_, rank);
  }
  sac_global_board(const sac_global_board&) = delete;
  sac_global_board& operator=(const sac_global_board&) = delete;

  // `base` with sac_sync::share on this board (the board outlives the trainer's updates).
  [[nodiscard]] sac_sync hook(sac_sync base) {
    base.share = [this](std::size_t items, std::size_t draws) {
      const std::uint64_t seed = seed_ * 0x9E3779B97F4A7C15ull + 0xD1B54A32D192ED03ull * (me_->rounds() + 1);
      const replay::group_share s = me_->plan(double(items), draws, seed);
      return sac_share{s.draws, s.seed, s.scale};
    };
    return base;
  }
  // The others stop waiting for this learner (its count is 0 from now on).
  void leave() { me_->leave(); }

 private:
  std::uint64_t seed_;
  comm::shm_segment segment_;
  std::optional<replay::group_board> board_;
  std::optional<replay::group_participant> me_;
};

}  // namespace gmi::rl

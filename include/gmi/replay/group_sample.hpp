#pragma once
// One global prioritized (or uniform) sample over the tables of several participants (GMI processes or threads,
// each with its own table or tables on its own device), without a central server: the multi-GPU sample's plan
// (gpu_groups.hpp) with the host's gather of the totals replaced by an all-gather on a shard_board (sharded.hpp) in
// memory the participants share (a comm::shm_segment between processes). Per sample, each participant
//   1. publishes its total (its tables' sum-tree roots summed in table order: priorities, or items for uniform) and
//      waits, at most the board's timeout, for every other's: one that does not arrive is named in a
//      shard_lost_error on every other (or, with on_lost_shard::continue_without, counts 0 from then on);
//   2. computes the same plan as every other (plan_groups over the totals: its share of the n draws, its seed, its
//      scale total / sum);
//   3. draws its share from its own tables (draw_global's algorithm with its seed; on a device
//      device_shard_set::sample_global), its probabilities times its scale (global ones);
//   4. publishes its smallest probability (1 when it drew nothing) and waits for every other's;
//   5. computes its importance weights (p_min / p)^beta with the smallest of all.
// Its part of the batch stays with it. Every participant makes the same calls in the same order (each is one round
// of the board). The draws are those of draw_over_groups with one group a participant, bit for bit.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/replay/detail/global_draw.hpp>
#include <gmi/replay/global_sample.hpp>
#include <gmi/replay/gpu_groups.hpp>
#include <gmi/replay/sharded.hpp>

namespace gmi::replay {

// The participants' board: a shard_board (one slot a participant) after a small header, in this process's memory
// (participants as threads) or in bytes_for(participants) bytes of shared memory (64-byte aligned), built there by
// one participant (role create) before the others attach (role attach: the header must name the same count).
class group_board {
 public:
  enum class role { create, attach };
  static constexpr std::size_t header_bytes = 64;
  [[nodiscard]] static constexpr std::size_t bytes_for(int participants) {
    return header_bytes + shard_board::bytes_for(participants);
  }

  group_board(int participants, std::chrono::milliseconds timeout, on_lost_shard policy = on_lost_shard::fail)
      : board_(std::make_unique<shard_board>(checked(participants), timeout, policy)) {}

  group_board(role r, void* shared, std::size_t bytes, int participants, std::chrono::milliseconds timeout,
              on_lost_shard policy = on_lost_shard::fail) {
    checked(participants);
    require(shared != nullptr, "group_board shared memory", "null", "bytes_for(participants) bytes");
    require(bytes >= bytes_for(participants), "group_board shared bytes", bytes,
            ">= " + std::to_string(bytes_for(participants)) + " for " + std::to_string(participants) + " participants");
    auto* h = static_cast<header*>(shared);
    if (r == role::create) {
      h->magic = magic;
      h->participants = participants;
    } else {
      require(h->magic == magic, "group_board shared memory", "no board", "one built there by role create first");
      require(h->participants == participants, "group_board participants", participants,
              std::to_string(h->participants) + " (the board's)");
    }
    board_ = std::make_unique<shard_board>(static_cast<char*>(shared) + header_bytes, bytes - header_bytes,
                                           participants, timeout, policy, r == role::create);
  }

  [[nodiscard]] shard_board& board() noexcept { return *board_; }
  [[nodiscard]] int participants() const noexcept { return board_->shards(); }

 private:
  static constexpr std::uint64_t magic = 0x676d692d67727031ull;  // "gmi-grp1"
  struct header {
    std::uint64_t magic;
    std::int32_t participants;
  };
  static_assert(sizeof(header) <= header_bytes);
  static int checked(int participants) {
    require(participants >= 1 && participants <= int(max_global_shards), "group_board participants", participants,
            "1 .. " + std::to_string(max_global_shards));
    return participants;
  }
  std::unique_ptr<shard_board> board_;
};

// What one participant's part of a sample is.
struct group_share {
  group_plan plan;          // every participant's total, share, seed and scale
  std::size_t draws = 0;    // this participant's share of the n draws
  std::uint64_t seed = 0;   // the seed of its draws
  double scale = 0.0;       // its total / the sum: its tables' probabilities times this are global ones
};

// One participant's place on the board (index 0 .. participants - 1). Not shared between threads.
class group_participant {
 public:
  group_participant(group_board& board, int index) : board_(board.board()), index_(index) {
    require(index >= 0 && index < board.participants(), "group_participant index", index,
            "0 .. " + std::to_string(board.participants() - 1));
  }

  // Steps 1 and 2: publishes `total` (>= 0, finite), waits for every other's, returns the plan of n draws from
  // `seed` (every participant passes the same n and seed) and this participant's part of it.
  group_share plan(double total, std::size_t n, std::uint64_t seed) {
    require(std::isfinite(total) && total >= 0.0, "group sample total", total, "finite, >= 0");
    require(n >= 1 && n <= (std::size_t{1} << 24), "group sample items", n, "1 .. 16777216");
    const std::vector<double> all = board_.all_gather(index_, ++round_, total, "group-total");
    std::vector<std::vector<double>> totals;
    for (double t : all) totals.push_back({t});
    group_share s;
    s.plan = plan_groups(totals, n, seed);
    const auto me = std::size_t(index_);
    s.draws = s.plan.shares[me];
    s.seed = s.plan.seeds[me];
    s.scale = s.plan.scale[me];
    return s;
  }

  // Step 4: publishes this participant's smallest probability (1 when it drew nothing) and returns the smallest of
  // every participant's.
  double smallest(double p_min) {
    require(p_min > 0.0 && p_min <= 1.0, "group sample smallest probability", p_min, "(0, 1]");
    const std::vector<double> all = board_.all_gather(index_, ++round_, p_min, "smallest-probability");
    double low = 1.0;
    for (double p : all)
      if (p > 0.0 && p < low) low = p;
    return low;
  }

  // Done sampling: the others stop waiting for this participant (its total counts 0 from now on).
  void leave() { board_.leave(index_); }
  [[nodiscard]] int index() const noexcept { return index_; }
  [[nodiscard]] std::uint64_t rounds() const noexcept { return round_; }

 private:
  shard_board& board_;
  int index_;
  std::uint64_t round_ = 0;
};

// Steps 1 to 5 for a participant whose tables are host tables (one group: draw_global over them): out holds its
// part (shard: the index within its tables; global probabilities; weights with every participant's smallest).
// Returns the plan and its share (out is empty when the share is 0).
inline group_share draw_group_share(group_participant& me, std::span<host_table* const> tables, const sampler& s,
                                    std::size_t n, std::uint64_t seed, double beta, global_draws& out) {
  check_global_sample(s, std::max<std::size_t>(tables.size(), 1), n, beta);
  require(!tables.empty(), "group sample participant " + std::to_string(me.index()) + " tables", 0, "1 or more");
  const std::vector<double> totals = detail::table_totals(tables, s.kind == sampler_kind::prioritized,
                                                          "group sample participant " + std::to_string(me.index()) +
                                                              " table");
  std::vector<double> prefix(totals.size() + 1);
  detail::global_prefix(totals.data(), int(totals.size()), prefix.data());
  group_share share = me.plan(prefix.back(), n, seed);
  out = {};
  out.totals = totals;
  double p_min = 1.0;
  if (share.draws > 0) {
    global_draws part;
    draw_global(tables, s, share.draws, share.seed, 0.0, part);
    p_min = detail::append_scaled_part(part, share.scale, 0, out);
  }
  detail::set_weights(out, me.smallest(p_min), beta);
  return share;
}

}  // namespace gmi::replay

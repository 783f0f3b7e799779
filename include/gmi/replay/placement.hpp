#pragma once
// Shards placed by access probability (Quiver's idea, issue 39): each shard counts the items drawn from it
// (access_counts); a placement step reads the counts of the window since the last step and decides, by
// placement_rule, which shards stay in (or move to) device memory and which go to pinned host memory, which the
// samplers read zero-copy (device_table::set_device_slots does the move; device_placement.cuh applies a plan).
//
// The rule: shard i's access share is its draws / all draws in the window. A shard is hot when its share is at least
// hot_share / shards (hot_share 1: an even share; the default 0.5: half of one). Hot shards get device memory,
// hottest first (ties: the lower index), up to device_shards of them; every other shard goes to pinned host memory.
// A shard already in device memory keeps it while its share is at least hot_share * (1 - hysteresis) / shards and
// the budget holds it, so a shard near the line does not move back and forth; where the budget binds, the shards are
// ranked by their draws with a host shard's discounted by (1 - hysteresis), so a shard in device memory keeps its
// place against one that draws about as much (equal groups would otherwise swap at random from window to window),
// and gives it up to one that draws more than 1 / (1 - hysteresis) times as much. With fewer than min_samples draws in
// the window nothing moves (too little evidence). Every field can be overridden by the code that builds the rule
// (validate() refuses a bad value in one line).

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>

namespace gmi::replay {

enum class shard_memory : std::uint8_t { device, pinned_host };

[[nodiscard]] constexpr const char* name_of(shard_memory m) noexcept {
  return m == shard_memory::device ? "device" : "pinned_host";
}

struct placement_rule {
  double hot_share = 0.5;  // a hot shard draws at least hot_share / shards of the window's items
  std::size_t device_shards = std::numeric_limits<std::size_t>::max();  // shards device memory holds
  std::uint64_t min_samples = 4096;  // fewer draws in the window: every shard stays where it is
  double hysteresis = 0.25;          // a device shard leaves below hot_share * (1 - hysteresis) / shards

  void validate() const {
    gmi::require(hot_share >= 0.0 && hot_share <= 1e6, "placement_rule.hot_share", hot_share,
                 "0 .. 1e6 (a multiple of an even share; 0 keeps every shard hot)");
    gmi::require(hysteresis >= 0.0 && hysteresis <= 1.0, "placement_rule.hysteresis", hysteresis, "0 .. 1");
  }
};

// Per-shard draw counters, bumped by whoever samples (any thread); take() reads the window and starts a new one.
class access_counts {
 public:
  explicit access_counts(std::size_t shards) : n_(shards), c_(std::make_unique<std::atomic<std::uint64_t>[]>(shards)) {
    gmi::require(shards >= 1, "access_counts shards", shards, ">= 1");
    for (std::size_t i = 0; i < n_; ++i) c_[i].store(0, std::memory_order_relaxed);
  }
  void count(std::size_t shard, std::uint64_t items) {
    gmi::require(shard < n_, "access_counts shard", shard, "< " + std::to_string(n_));
    c_[shard].fetch_add(items, std::memory_order_relaxed);
  }
  [[nodiscard]] std::size_t shards() const noexcept { return n_; }
  [[nodiscard]] std::vector<std::uint64_t> take() {
    std::vector<std::uint64_t> v(n_);
    for (std::size_t i = 0; i < n_; ++i) v[i] = c_[i].exchange(0, std::memory_order_relaxed);
    return v;
  }

 private:
  std::size_t n_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> c_;
};

// A placement step's outcome: where each shard lives next, and each shard's share of the window.
struct placement_plan {
  std::vector<shard_memory> where;
  std::vector<double> share;
  bool decided = false;  // false: too few draws, `where` is the current placement
  [[nodiscard]] std::size_t moves(std::span<const shard_memory> now) const {
    std::size_t m = 0;
    for (std::size_t i = 0; i < where.size(); ++i) m += where[i] != now[i];
    return m;
  }
};

// The rule applied to one window's counts and the shards' current memory.
[[nodiscard]] inline placement_plan place_shards(std::span<const std::uint64_t> counts,
                                                 std::span<const shard_memory> now, const placement_rule& rule) {
  rule.validate();
  gmi::require(counts.size() == now.size() && !counts.empty(), "place_shards counts", counts.size(),
               std::to_string(now.size()) + " (one per shard, at least one)");
  const std::size_t n = counts.size();
  placement_plan p;
  p.where.assign(now.begin(), now.end());
  p.share.assign(n, 0.0);
  std::uint64_t total = 0;
  for (const std::uint64_t c : counts) total += c;
  for (std::size_t i = 0; i < n; ++i) p.share[i] = total ? double(counts[i]) / double(total) : 0.0;
  if (total < rule.min_samples || total == 0) return p;
  p.decided = true;
  const double even = 1.0 / double(n);
  const double enter = rule.hot_share * even, stay = rule.hot_share * (1.0 - rule.hysteresis) * even;
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  const auto rank = [&](std::size_t i) {
    return double(counts[i]) * (now[i] == shard_memory::device ? 1.0 : 1.0 - rule.hysteresis);
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rank(a) > rank(b); });
  std::size_t kept = 0;
  for (const std::size_t i : order) {
    const double line = now[i] == shard_memory::device ? stay : enter;
    const bool hot = p.share[i] >= line && kept < rule.device_shards;
    p.where[i] = hot ? shard_memory::device : shard_memory::pinned_host;
    kept += hot;
  }
  return p;
}

}  // namespace gmi::replay

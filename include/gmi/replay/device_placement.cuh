#pragma once
// Device shards placed by access probability: a set of device_tables (the shards one GPU samples) with their draw
// counters; place() runs placement.hpp's rule on the window since the last step and moves each shard whose place
// changed (device_table::set_device_slots: all of it in device memory, or all in mapped pinned host memory that
// the sampler and gather kernels read zero-copy).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/replay/device_table.cuh>
#include <gmi/replay/placement.hpp>

namespace gmi::replay {

// Where a device table's slots are now: all in device memory counts as device, anything less as pinned host.
[[nodiscard]] inline shard_memory memory_of(const device_table& t) {
  return t.device_slots() >= t.spec().capacity ? shard_memory::device : shard_memory::pinned_host;
}

class device_shard_set {
 public:
  // The tables outlive the set; the rule is validated here (a bad one refused with one line).
  device_shard_set(std::vector<device_table*> tables, placement_rule rule)
      : tables_(std::move(tables)), rule_((rule.validate(), rule)), counts_(checked(tables_.size())) {
    for (std::size_t i = 0; i < tables_.size(); ++i)
      gmi::require(tables_[i] != nullptr, "device_shard_set table " + std::to_string(i), "null", "a table");
  }

  // Samples shard k with the table's own sample call and counts its n draws.
  void sample(std::size_t k, const sampler& s, std::size_t n, std::size_t length, std::uint64_t seed, device_batch& out) {
    gmi::require(k < tables_.size(), "device_shard_set shard", k, "< " + std::to_string(tables_.size()));
    tables_[k]->sample(s, n, length, seed, out);
    counts_.count(k, n);
  }
  // Draws counted elsewhere (a sampler that calls the table directly).
  void count(std::size_t k, std::uint64_t n) { counts_.count(k, n); }

  // One placement step: the window's counts through the rule, then the moves. Returns the plan.
  placement_plan place() {
    const std::vector<std::uint64_t> c = counts_.take();
    std::vector<shard_memory> now(tables_.size());
    for (std::size_t i = 0; i < tables_.size(); ++i) now[i] = memory_of(*tables_[i]);
    placement_plan p = place_shards(c, now, rule_);
    for (std::size_t i = 0; i < tables_.size(); ++i) {
      if (p.where[i] == now[i]) continue;
      tables_[i]->set_device_slots(p.where[i] == shard_memory::device ? tables_[i]->spec().capacity : 0);
      ++moves_;
    }
    return p;
  }
  [[nodiscard]] std::size_t shards() const noexcept { return tables_.size(); }
  [[nodiscard]] std::uint64_t moves() const noexcept { return moves_; }
  [[nodiscard]] const placement_rule& rule() const noexcept { return rule_; }

 private:
  static std::size_t checked(std::size_t n) {
    gmi::require(n >= 1, "device_shard_set tables", n, ">= 1");
    return n;
  }
  std::vector<device_table*> tables_;
  placement_rule rule_;
  access_counts counts_;
  std::uint64_t moves_ = 0;
};

}  // namespace gmi::replay

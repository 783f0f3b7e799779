#pragma once
// How a GPU SAC learner's replay is sharded (sac_config::replay_shards, placement_every, replay_device_mib), as
// host code the device trainer (sac_shards.cuh) follows and host tests check: the environments split into
// replay_shards contiguous groups (the first num_envs % shards groups one environment more), each group's
// transitions in its own shard of replay_capacity / shards transitions; the device-memory budget as a number of
// whole shards (a shard's column bytes: capacity x the row's floats x 4; its sum-trees and links stay in device
// memory whatever the budget); and what a run reports per shard (where it lives, its draws).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/replay/placement.hpp>
#include <gmi/rl/sac_config.hpp>

namespace gmi::rl {

struct sac_shard_layout {
  std::size_t shards = 1, envs = 1;
  std::vector<std::size_t> first;  // group k: environments [first[k], first[k + 1])
  std::size_t capacity = 0;        // transitions a shard keeps
  std::size_t shard_bytes = 0;     // a shard's columns
  std::size_t device_shards = std::numeric_limits<std::size_t>::max();  // the budget in shards (max: none)
  bool budget = false;             // replay_device_mib given: every shard starts in pinned host memory

  [[nodiscard]] std::size_t group_envs(std::size_t k) const { return first[k + 1] - first[k]; }

  // Refuses (one line) more shards than environments and, with 2 or more, shards too small for their group's
  // vector step (one shard keeps the table's own rules).
  static sac_shard_layout make(const sac_config& c, std::size_t num_envs, std::size_t row_floats) {
    c.validate();
    sac_shard_layout l;
    l.shards = std::size_t(c.replay_shards);
    l.envs = num_envs;
    gmi::require(l.shards <= num_envs, "sac.replay_shards", l.shards,
                 "1.." + std::to_string(num_envs) + " (one group of environments a shard; num_envs " +
                     std::to_string(num_envs) + ")");
    l.first.resize(l.shards + 1, 0);
    const std::size_t base = num_envs / l.shards, extra = num_envs % l.shards;
    for (std::size_t k = 0; k < l.shards; ++k) l.first[k + 1] = l.first[k] + base + (k < extra ? 1 : 0);
    l.capacity = c.replay_capacity / l.shards;
    gmi::require(l.shards == 1 || l.capacity >= l.group_envs(0), "sac.replay_capacity", c.replay_capacity,
                 ">= " + std::to_string(l.group_envs(0) * l.shards) + " (each of " + std::to_string(l.shards) +
                     " shards holds a vector step of its " + std::to_string(l.group_envs(0)) + " environments)");
    l.shard_bytes = l.capacity * row_floats * 4;
    if (c.replay_device_mib) {
      l.budget = true;
      const double bytes = *c.replay_device_mib * 1024.0 * 1024.0;
      l.device_shards = std::size_t(bytes / double(l.shard_bytes));
    }
    return l;
  }
  // The placement rule of a run: the library's defaults with the budget.
  [[nodiscard]] replay::placement_rule rule() const {
    replay::placement_rule r;
    r.device_shards = device_shards;
    return r;
  }
};

// What a run reports about its shards (metrics lines): per shard its environments, where its columns live, its
// draws so far; the placement steps taken, the shards moved, the last decided step's shares.
struct sac_shard_report {
  std::vector<std::size_t> envs;
  std::vector<replay::shard_memory> memory;
  std::vector<std::uint64_t> drawn;
  std::vector<double> last_share;  // the last decided placement step's window shares (empty before one)
  std::uint64_t placement_steps = 0, decided_steps = 0, moves = 0;
  std::size_t device_shards = std::numeric_limits<std::size_t>::max();
};

}  // namespace gmi::rl

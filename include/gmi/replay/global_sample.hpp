#pragma once
// One prioritized (or uniform) sample over several shards as if they were one table: each shard's total priority
// (its sum-tree's root), a draw over the shards by those totals, then within the chosen shard by its sum-tree;
// every item's probability is its priority over the sum of all shards' totals, and the importance weights of
// prioritized replay (Schaul et al. 2016) come from that global probability. The host version here (shards as
// host_tables, e.g. GMIs as threads; the reference of tests/replay_gpu); device shards on one GPU sample in kernels
// (device_shard_set::sample_global, device_placement.cuh) with the same per-draw code (detail/global_draw.hpp).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/replay/detail/global_draw.hpp>
#include <gmi/replay/host_table.hpp>
#include <gmi/replay/spec.hpp>

namespace gmi::replay {

inline constexpr std::size_t max_global_shards = 256;

// What a global sample drew, draw by draw.
struct global_draws {
  std::vector<std::int32_t> shard, keys;  // the shard and its slot
  std::vector<double> probability;        // priority / sum of every shard's total
  std::vector<float> weight;              // (p_min / p)^beta: 1 for the batch's least likely draw
  std::vector<double> totals;             // each shard's total when drawn
};

// The checks both versions make; one line each.
inline void check_global_sample(const sampler& s, std::size_t shards, std::size_t n, double beta) {
  require(!s.ordered(), "global sample sampler", std::string(name_of(s.kind)), "uniform or prioritized");
  require(shards >= 1 && shards <= max_global_shards, "global sample shards", shards,
          "1 .. " + std::to_string(max_global_shards));
  require(n >= 1 && n <= (std::size_t{1} << 24), "global sample items", n, "1 .. 16777216");
  require(std::isfinite(beta) && beta >= 0.0 && beta <= 1.0, "global sample beta (importance exponent)", beta, "0 .. 1");
}

// n draws from seed over host shards (their locks held in shard order while drawing). Counts nothing in the
// tables (no rate limiter, no max_times_sampled): the shards' owners sample their own tables for those.
inline void draw_global(std::span<host_table* const> shards, const sampler& s, std::size_t n, std::uint64_t seed,
                        double beta, global_draws& out) {
  check_global_sample(s, shards.size(), n, beta);
  const int count = static_cast<int>(shards.size());
  std::vector<std::unique_lock<std::mutex>> locks;
  std::vector<detail::table_ref> refs;
  for (int k = 0; k < count; ++k) {
    require(shards[k] != nullptr, "global sample shard " + std::to_string(k), "null", "a table");
    locks.push_back(shards[k]->lock());
    refs.push_back(shards[k]->view());
  }
  const bool prio = s.kind == sampler_kind::prioritized;
  out.totals.resize(shards.size());
  for (int k = 0; k < count; ++k) out.totals[k] = (prio ? refs[k].prio_tree : refs[k].size_tree)[1];
  std::vector<double> prefix(shards.size() + 1);
  detail::global_prefix(out.totals.data(), count, prefix.data());
  require(prefix[count] > 0.0, std::string("global ") + std::string(name_of(s.kind)) + " sample: total weight",
          prefix[count], "> 0 (an item with priority > 0 in some shard)");
  out.shard.resize(n);
  out.keys.resize(n);
  out.probability.resize(n);
  out.weight.resize(n);
  double p_min = 1.0;
  for (std::size_t b = 0; b < n; ++b) {
    const detail::global_pick p = detail::global_draw(refs.data(), count, prio, prefix.data(), seed, b);
    out.shard[b] = p.shard;
    out.keys[b] = p.key;
    out.probability[b] = p.probability;
    if (p.probability > 0.0 && p.probability < p_min) p_min = p.probability;
  }
  for (std::size_t b = 0; b < n; ++b) out.weight[b] = detail::importance_weight(out.probability[b], p_min, beta);
}

}  // namespace gmi::replay

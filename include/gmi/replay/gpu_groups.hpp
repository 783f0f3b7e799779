#pragma once
// One global prioritized (or uniform) sample over the shards of several GPUs of one process, without a central
// server: each GPU's group of shards has a total (its shards' totals summed in shard order, as global_prefix sums
// them), one small gather brings the groups' totals together, every group's share of the n draws follows from those
// totals and the seed (shard_shares: n points over [0, sum)), and each group draws its share over its own shards
// (draw_global's algorithm, the group's own seed). An item's probability is then its priority over the sum of all
// groups' totals: a group's local probability times its total over the sum (one rounding, the same on host and
// device), and the importance weights (p_min / p)^beta use the smallest probability of all groups' draws.
// This is the host version (groups of host_tables; the reference of tests/replay_gpu's two-GPU case); the device
// version is multi_gpu_shard_set (multi_gpu_shards.cuh), which calls plan_groups with the gathered totals.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/replay/detail/global_draw.hpp>
#include <gmi/replay/global_sample.hpp>
#include <gmi/replay/sharded.hpp>

namespace gmi::replay {

// What the groups' totals decide: each group's total, share of the draws, seed and scale (its total over the sum).
struct group_plan {
  std::vector<double> totals;       // per group: its shards' totals summed in shard order (global_prefix's sum)
  std::vector<std::size_t> shares;  // per group: its draws; they add up to n
  std::vector<std::uint64_t> seeds;  // per group: the seed of its draws
  std::vector<double> scale;        // per group: total / sum (its local probabilities times this are global)
  double sum = 0.0;
};

// The plan from each group's shard totals (shard_totals[g][k]: shard k of group g), n and seed. A group of total 0
// gets no draws; a sum of 0 is refused with one line.
[[nodiscard]] inline group_plan plan_groups(const std::vector<std::vector<double>>& shard_totals, std::size_t n,
                                            std::uint64_t seed) {
  require(!shard_totals.empty() && shard_totals.size() <= max_global_shards, "multi-GPU sample groups",
          shard_totals.size(), "1 .. " + std::to_string(max_global_shards));
  group_plan p;
  for (const std::vector<double>& t : shard_totals) {
    std::vector<double> prefix(t.size() + 1);
    detail::global_prefix(t.data(), static_cast<int>(t.size()), prefix.data());
    p.totals.push_back(prefix.back());
  }
  for (double t : p.totals) p.sum += t;
  require(p.sum > 0.0, "multi-GPU sample: total weight", p.sum, "> 0 (an item with priority > 0 on some GPU)");
  p.shares = shard_shares(p.totals, n, seed, 0);
  for (std::size_t g = 0; g < p.totals.size(); ++g) {
    p.seeds.push_back(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull * (g + 1));
    p.scale.push_back(p.totals[g] / p.sum);
  }
  return p;
}

namespace detail {
// Each table's total (its sum-tree's root: priorities, or items for uniform), each read under its lock.
inline std::vector<double> table_totals(std::span<host_table* const> tables, bool prioritized, const std::string& what) {
  std::vector<double> totals;
  for (host_table* t : tables) {
    require(t != nullptr, what, "null", "a table");
    auto lock = t->lock();
    const table_ref r = t->view();
    totals.push_back((prioritized ? r.prio_tree : r.size_tree)[1]);
  }
  return totals;
}
// A group's own draws (draw_global over its tables, weights not yet set) into out: shard numbered from first_shard,
// probabilities scaled to global ones (one rounding, as on the device). Returns the smallest positive (1 if none).
inline double append_scaled_part(const global_draws& part, double scale, std::size_t first_shard, global_draws& out) {
  double p_min = 1.0;
  for (std::size_t b = 0; b < part.keys.size(); ++b) {
    out.shard.push_back(part.shard[b] < 0 ? -1 : static_cast<std::int32_t>(first_shard) + part.shard[b]);
    out.keys.push_back(part.keys[b]);
    out.probability.push_back(product(part.probability[b], scale));
    if (out.probability.back() > 0.0 && out.probability.back() < p_min) p_min = out.probability.back();
  }
  return p_min;
}
// out.weight from out.probability and the smallest probability of every group's draws.
inline void set_weights(global_draws& out, double p_min, double beta) {
  out.weight.clear();
  for (double p : out.probability) out.weight.push_back(importance_weight(p, p_min, beta));
}
}  // namespace detail

// Host groups: every group's draws (global_draws: shard numbered over all groups, group 0's first), group-major in
// group order; shares: each group's count. Each group's tables are locked while it draws (draw_global); the plan
// uses the totals read just before.
inline group_plan draw_over_groups(const std::vector<std::vector<host_table*>>& groups, const sampler& s,
                                   std::size_t n, std::uint64_t seed, double beta, global_draws& out) {
  std::size_t shards = 0;
  for (const auto& g : groups) shards += g.size();
  check_global_sample(s, shards, n, beta);
  const bool prio = s.kind == sampler_kind::prioritized;
  std::vector<std::vector<double>> totals;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    require(!groups[g].empty(), "multi-GPU sample group " + std::to_string(g) + " shards", 0, "1 or more");
    totals.push_back(detail::table_totals(groups[g], prio, "multi-GPU sample group " + std::to_string(g) + " shard"));
  }
  group_plan plan = plan_groups(totals, n, seed);
  out = {};
  std::size_t first_shard = 0;
  double p_min = 1.0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (double t : totals[g]) out.totals.push_back(t);
    if (plan.shares[g] > 0) {
      global_draws part;
      draw_global(std::span<host_table* const>(groups[g]), s, plan.shares[g], plan.seeds[g], 0.0, part);
      p_min = std::min(p_min, detail::append_scaled_part(part, plan.scale[g], first_shard, out));
    }
    first_shard += groups[g].size();
  }
  detail::set_weights(out, p_min, beta);
  return plan;
}

}  // namespace gmi::replay

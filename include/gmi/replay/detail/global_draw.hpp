#pragma once
// Global prioritized (or uniform) draws over several shards, per draw, for host loops and kernels alike: the
// shards' totals as prefix sums, a shard chosen by where u * (sum of totals) falls, then the shard's own sum-tree
// descended with the rest of u. An item's probability is its leaf over the sum of all shards' totals, and
// importance weights are (p_min / p)^beta over a batch: (N p)^-beta divided by the batch's largest, N cancelling.

#include <cmath>
#include <cstdint>

#include <gmi/core/hd.hpp>
#include <gmi/replay/detail/algorithms.hpp>

namespace gmi::replay::detail {

// prefix[k + 1] = prefix[k] + total of shard k, summed in shard order (so host and device agree bit for bit).
GMI_HD inline void global_prefix(const double* totals, int count, double* prefix) {
  prefix[0] = 0.0;
  for (int k = 0; k < count; ++k) prefix[k + 1] = prefix[k] + (totals[k] > 0.0 ? totals[k] : 0.0);
}

// a * b rounded once, never fused into a later add by the device compiler (host and device must agree).
GMI_HD inline double product(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

// The shard whose prefix range holds u * prefix[count] (never one with zero weight while the sum is positive;
// -1 when it is not), and in `within` the position in [0, 1) inside that shard's range.
GMI_HD inline int global_shard(const double* prefix, int count, double u, double& within) {
  const double total = prefix[count];
  within = 0.0;
  if (!(total > 0.0)) return -1;
  const double target = product(u, total);
  int last = -1;
  for (int k = 0; k < count; ++k) {
    const double w = prefix[k + 1] - prefix[k];
    if (!(w > 0.0)) continue;
    last = k;
    if (target < prefix[k + 1]) break;
  }
  const double w = prefix[last + 1] - prefix[last];
  double r = (target - prefix[last]) / w;
  r = r < 0.0 ? 0.0 : r;
  within = r < 1.0 ? r : 0x1.fffffffffffffp-1;  // the largest double below 1 (rounding at the range's end)
  return last;
}

// One draw: the shard, the key in it, and the item's global probability (its leaf over the sum of totals).
struct global_pick {
  std::int32_t shard = -1, key = -1;
  double probability = 0.0;
};
GMI_HD inline global_pick global_draw(const table_ref* shards, int count, bool prioritized, const double* prefix,
                                      std::uint64_t seed, std::uint64_t b) {
  double within = 0.0;
  global_pick p;
  p.shard = global_shard(prefix, count, unit_draw(seed, b), within);
  if (p.shard < 0) return p;
  const table_ref& t = shards[p.shard];
  const double* tree = prioritized ? t.prio_tree : t.size_tree;
  p.key = tree_draw(tree, t.leaves, within);
  p.probability = p.key < 0 ? 0.0 : tree[t.leaves + p.key] / prefix[count];
  return p;
}

// The importance weight of a draw of probability p in a batch whose smallest probability is p_min.
GMI_HD inline float importance_weight(double p, double p_min, double beta) {
  return p > 0.0 ? static_cast<float>(pow(p_min / p, beta)) : 0.0f;
}

}  // namespace gmi::replay::detail

// The device table against the host table: same inserts and seeds must give the same keys, probabilities,
// windows and masks (slots split between device memory and mapped host memory), plus chi-square on device.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include <gmi/replay/global_sample.hpp>
#include <gmi/replay/gpu_groups.hpp>
#include <gmi/replay/replay.hpp>

#include "replay_gpu/runs.hpp"

using namespace gmi::replay;
using replay_gpu::draw;
using replay_gpu::run_result;
using replay_test::rollout_data;

namespace {

std::vector<run_result> run_host(const table_spec& spec, const std::vector<rollout_data>& inserts,
                                 const std::vector<draw>& draws) {
  host_table t(spec);
  auto w = t.make_writer(inserts.at(0).envs);
  for (const auto& d : inserts) {
    rollout r;
    for (const auto& c : d.cols) r.columns.push_back(c.data());
    r.horizon = d.horizon;
    r.envs = d.envs;
    if (!d.priorities.empty()) r.priorities = d.priorities.data();
    t.insert(w, r);
  }
  std::vector<run_result> out;
  host_batch b;
  for (const auto& dr : draws) {
    t.sample(dr.smp, dr.n, dr.length, dr.seed, b);
    out.push_back({b.info.keys, b.info.probability, b.columns, b.mask, t.size()});
  }
  return out;
}

std::vector<rollout_data> episodes(std::size_t inserts, std::size_t horizon, std::size_t envs, bool priorities) {
  std::vector<rollout_data> v;
  for (std::size_t i = 0; i < inserts; ++i) {
    v.emplace_back(horizon, envs, i * horizon, [](std::size_t e, std::size_t t) { return (t * 7 + e) % 19 == 3; });
    if (priorities) {
      v.back().priorities.resize(horizon * envs);
      for (std::size_t j = 0; j < v.back().priorities.size(); ++j)
        v.back().priorities[j] = static_cast<float>((j * 13 + i * 5) % 17);
    }
  }
  return v;
}

void check_same(const std::vector<run_result>& d, const std::vector<run_result>& h) {
  REQUIRE(d.size() == h.size());
  for (std::size_t i = 0; i < d.size(); ++i) {
    CAPTURE(i);
    CHECK(d[i].keys == h[i].keys);
    CHECK(d[i].probability == h[i].probability);
    CHECK(d[i].mask == h[i].mask);
    CHECK(d[i].columns == h[i].columns);
    CHECK(d[i].size == h[i].size);
  }
}

}  // namespace

TEST_CASE("replay_gpu.device_matches_host") {
  for (std::size_t device_capacity : {std::size_t{4096}, std::size_t{1000}, std::size_t{0}}) {
    CAPTURE(device_capacity);
    auto spec = replay_test::small_spec(3000);
    spec.device_capacity = device_capacity;
    // 5 inserts of 16 x 48 = 3840 items: the last one wraps and evicts (FIFO).
    const auto ins = episodes(5, 16, 48, true);
    const std::vector<draw> draws = {{sampler::uniform(), 2048, 12, 1},  {sampler::prioritized(), 2048, 20, 2},
                                     {sampler::fifo(), 300, 5, 0},       {sampler::lifo(), 300, 5, 0},
                                     {sampler::top_k("ret"), 64, 3, 0}};
    check_same(replay_gpu::run_device(spec, ins, draws), run_host(spec, ins, draws));
  }
  SUBCASE("heap remover and max_times_sampled") {
    auto spec = replay_test::small_spec(500);
    spec.device_capacity = 300;
    spec.remove = remover::min_heap;
    spec.max_times_sampled = 2;
    const auto ins = episodes(4, 8, 20, true);
    const std::vector<draw> draws = {{sampler::fifo(), 100, 4, 0}, {sampler::fifo(), 100, 4, 0},
                                     {sampler::prioritized(), 512, 6, 3}, {sampler::fifo(), 50, 2, 0}};
    check_same(replay_gpu::run_device(spec, ins, draws), run_host(spec, ins, draws));
  }
}

TEST_CASE("replay_gpu.prioritized_chi_square_on_device") {
  auto spec = replay_test::small_spec(200);
  spec.device_capacity = 120;
  spec.priority_exponent = 0.7;
  std::vector<rollout_data> ins{rollout_data(1, 200)};
  ins[0].priorities.resize(200);
  for (int i = 0; i < 200; ++i) ins[0].priorities[i] = static_cast<float>(1 + i % 10);
  std::vector<draw> draws;
  for (int r = 0; r < 20; ++r) draws.push_back({sampler::prioritized(), 16384, 1, static_cast<std::uint64_t>(r)});
  for (int r = 0; r < 20; ++r) draws.push_back({sampler::uniform(), 16384, 1, static_cast<std::uint64_t>(100 + r)});
  const auto res = replay_gpu::run_device(spec, ins, draws);
  std::vector<double> pc(200, 0.0), uc(200, 0.0), p(200), u(200, 1.0 / 200);
  double total = 0;
  for (int i = 0; i < 200; ++i) total += p[i] = std::pow(1.0 + i % 10, 0.7);
  for (auto& v : p) v /= total;
  for (int r = 0; r < 40; ++r)
    for (auto k : res[r].keys) (r < 20 ? pc : uc)[k] += 1;
  CHECK(replay_test::chi2(pc, p, 20 * 16384) < replay_test::chi2_critical(199));
  CHECK(replay_test::chi2(uc, u, 20 * 16384) < replay_test::chi2_critical(199));
  CHECK(replay_test::chi2(uc, p, 20 * 16384) > replay_test::chi2_critical(199));  // the test can fail
}

TEST_CASE("replay_gpu.snapshot_restores_into_a_host_table") {
  auto spec = replay_test::small_spec(700);
  spec.device_capacity = 400;
  const auto ins = episodes(3, 10, 30, true);
  snapshot snap;
  (void)replay_gpu::run_device(spec, ins, {{sampler::uniform(), 8, 1, 0}}, &snap);
  host_table h(spec);
  h.restore(snap);
  // The host table fed the same inserts directly draws the same as the restored copy of the device table.
  const std::vector<draw> draws = {{sampler::prioritized(), 1024, 9, 11}};
  const auto direct = run_host(spec, ins, {{sampler::uniform(), 8, 1, 0}, {sampler::prioritized(), 1024, 9, 11}});
  host_batch b;
  h.sample(sampler::prioritized(), 1024, 9, 11, b);
  CHECK(b.info.keys == direct[1].keys);
  CHECK(b.columns == direct[1].columns);
}

// A shard moved between device memory and mapped pinned host memory (device_table::set_device_slots) samples and
// gathers the same items as the host table fed the same inserts, before and after every move.
TEST_CASE("replay_gpu.moved_shard_samples_the_same_items") {
  auto spec = replay_test::small_spec(3000);
  const auto ins = episodes(5, 16, 48, true);
  const std::vector<draw> draws = {{sampler::prioritized(), 2048, 20, 2},
                                   {sampler::prioritized(), 2048, 20, 2, 0},
                                   {sampler::uniform(), 2048, 12, 1, 1000},
                                   {sampler::top_k("ret"), 64, 3, 0, 0},
                                   {sampler::uniform(), 2048, 12, 1, 3000},
                                   {sampler::prioritized(), 2048, 20, 2}};
  const auto d = replay_gpu::run_device(spec, ins, draws);
  check_same(d, run_host(spec, ins, draws));
  CHECK(d[0].keys == d[1].keys);  // the same draw before and after the move to host memory
  CHECK(d[0].columns == d[1].columns);
  CHECK(d[0].columns == d[5].columns);
}

// The placement step on two device shards with the same items: shard 0 drew 15 of every 16 items, shard 1 one
// (below half an even share), so shard 1 moves to pinned host memory and shard 0 stays; both then sample the same
// items from the same seed. With even draws nothing moves.
TEST_CASE("replay_gpu.placement_moves_the_cold_shard") {
  auto spec = replay_test::small_spec(700);
  const auto ins = episodes(3, 10, 30, true);
  const auto p = replay_gpu::place_two_shards(spec, ins, 1920, 128);
  CHECK(p.before[0] == shard_memory::device);
  CHECK(p.before[1] == shard_memory::device);
  CHECK(p.after[0] == shard_memory::device);
  CHECK(p.after[1] == shard_memory::pinned_host);
  CHECK(p.moves == 1);
  CHECK(p.device_slots[0] == 700);
  CHECK(p.device_slots[1] == 0);
  CHECK(p.share[1] == doctest::Approx(128.0 / 2048.0));
  CHECK(p.hot.keys == p.cold.keys);
  CHECK(p.hot.columns == p.cold.columns);
  CHECK(p.hot.mask == p.cold.mask);
  const auto even = replay_gpu::place_two_shards(spec, ins, 1024, 1024);
  CHECK(even.moves == 0);
  CHECK(even.device_slots[1] == 700);
}

namespace {
// Shard k's rollouts: episodes with priorities scaled by (k + 1)^2 and the ret column offset by 100000 k, so a
// gathered row names its shard.
std::vector<rollout_data> shard_rollouts(std::size_t k) {
  auto v = episodes(2, 8, 6 + 2 * k, true);
  for (auto& d : v) {
    for (float& p : d.priorities) p *= float((k + 1) * (k + 1));
    for (float& r : d.cols[4]) r += 100000.0f * float(k);
  }
  return v;
}
// `count` shards' rollouts (shard_rollouts) and host tables of spec holding them.
struct host_shards {
  std::vector<std::vector<rollout_data>> shards;
  std::vector<std::unique_ptr<host_table>> host;
  std::vector<host_table*> ptrs;
  host_shards(const table_spec& spec, std::size_t count) {
    for (std::size_t k = 0; k < count; ++k) {
      shards.push_back(shard_rollouts(k));
      host.push_back(std::make_unique<host_table>(spec));
      auto w = host.back()->make_writer(shards.back().at(0).envs);
      for (const auto& d : shards.back()) {
        rollout r;
        for (const auto& c : d.cols) r.columns.push_back(c.data());
        r.horizon = d.horizon;
        r.envs = d.envs;
        r.priorities = d.priorities.data();
        host.back()->insert(w, r);
      }
      ptrs.push_back(host.back().get());
    }
  }
};
// The windows of a global draw gathered on the host from the same tables (the per-item functions of the tables).
void host_windows(const std::vector<host_table*>& tables, const table_spec& spec, const global_draws& d,
                  std::size_t length, std::vector<std::vector<std::uint32_t>>& cols, std::vector<float>& mask) {
  const std::size_t n = d.keys.size();
  const auto L = static_cast<std::int32_t>(length);
  cols.assign(spec.columns.size(), {});
  for (std::size_t c = 0; c < spec.columns.size(); ++c) cols[c].assign(n * length * spec.columns[c].width, 0u);
  mask.assign(n * length, 0.0f);
  std::vector<std::int32_t> slots(length);
  for (std::size_t b = 0; b < n; ++b) {
    const detail::table_ref t = tables[std::size_t(d.shard[b])]->view();
    const std::int32_t start = d.keys[b];
    slots[0] = start;
    std::int32_t i = 1;
    for (; i < L; ++i) {
      slots[std::size_t(i)] = detail::window_slot_contiguous(t, start, i);
      if (slots[std::size_t(i)] < 0) break;
    }
    if (i < L) detail::window_follow(t, start, i - 1, slots[std::size_t(i - 1)], L, slots.data());
    for (std::size_t k = 0; k < length; ++k) {
      mask[b * length + k] = slots[k] >= 0 ? 1.0f : 0.0f;
      for (std::size_t c = 0; c < spec.columns.size(); ++c) {
        const std::size_t w = spec.columns[c].width;
        for (std::size_t j = 0; j < w; ++j)
          cols[c][(b * length + k) * w + j] = slots[k] >= 0 ? t.row(int(c), slots[k])[j] : 0u;
      }
    }
  }
}
}  // namespace

// A global prioritized sample over 3 device shards (one half in mapped host memory): the same shards, keys and
// probabilities as the host's draw_global from the same tables and seed, the same windows (padding at episode
// ends), weights from the global probability; the item frequencies against priority / the sum of all totals
// (chi-square, and far off against per-shard-even draws); the placement shares are the draws' shards.
TEST_CASE("replay_gpu.global_prioritized_over_device_shards") {
  const auto spec = replay_test::small_spec(256);
  host_shards hs(spec, 3);
  const auto& shards = hs.shards;
  const auto& ptrs = hs.ptrs;
  const std::size_t n = 1 << 16, length = 4;
  const auto dev = replay_gpu::global_device(spec, shards, sampler::prioritized(), n, length, 4242, 0.6);
  global_draws h;
  draw_global(ptrs, sampler::prioritized(), n, 4242, 0.6, h);
  CHECK(dev.totals == h.totals);
  CHECK(dev.shard == h.shard);
  CHECK(dev.keys == h.keys);
  CHECK(dev.probability == h.probability);
  std::size_t off = 0;
  for (std::size_t b = 0; b < n; ++b) off += std::fabs(dev.weight[b] - h.weight[b]) > 1e-6f * h.weight[b];
  CHECK(off == 0);
  std::vector<std::vector<std::uint32_t>> cols;
  std::vector<float> mask;
  host_windows(ptrs, spec, h, length, cols, mask);
  CHECK(dev.columns == cols);
  CHECK(dev.mask == mask);
  double pad = 0;
  for (float m : mask) pad += m == 0.0f;
  CHECK(pad > 0);  // windows ran past episode ends
  // Frequencies of (shard, slot) against priority / global sum.
  const double sum = h.totals[0] + h.totals[1] + h.totals[2];
  std::vector<double> counts(3 * 256, 0.0), expected(3 * 256, 0.0), even(3 * 256, 0.0);
  std::vector<double> shard_draws(3, 0.0);
  for (std::size_t b = 0; b < n; ++b) {
    counts[std::size_t(dev.shard[b]) * 256 + std::size_t(dev.keys[b])] += 1;
    shard_draws[std::size_t(dev.shard[b])] += 1;
  }
  double df = -1;
  for (std::size_t k = 0; k < 3; ++k) {
    const detail::table_ref t = ptrs[k]->view();
    for (std::size_t s = 0; s < 256; ++s) {
      const double leaf = t.prio_tree[t.leaves + std::int64_t(s)];
      expected[k * 256 + s] = leaf / sum;
      even[k * 256 + s] = leaf / h.totals[k] / 3.0;
      df += leaf > 0;
    }
  }
  const double x = replay_test::chi2(counts, expected, double(n));
  MESSAGE("global chi-square " << x << " over " << df << " degrees of freedom");
  CHECK(x < replay_test::chi2_critical(df));
  CHECK(replay_test::chi2(counts, even, double(n)) > 10 * replay_test::chi2_critical(df));
  for (std::size_t k = 0; k < 3; ++k) CHECK(dev.share[k] == doctest::Approx(shard_draws[k] / double(n)));
}

// A device group sample's parts (dev) against draw_over_groups over the same shards as host tables, same seed: plan,
// totals, shards, keys and probabilities bit for bit, weights within 1e-6, the windows.
namespace {
void check_against_groups(const replay_gpu::multi_gpu_run& dev, const std::vector<std::vector<host_table*>>& groups,
                          const std::vector<host_table*>& ptrs, const table_spec& spec, std::size_t n,
                          std::size_t length, std::uint64_t seed, double beta) {
  global_draws h;
  const group_plan hp = draw_over_groups(groups, sampler::prioritized(), n, seed, beta, h);
  CHECK(dev.plan.totals == hp.totals);
  CHECK(dev.plan.shares == hp.shares);
  CHECK(dev.draws.totals == h.totals);
  CHECK(dev.draws.shard == h.shard);
  CHECK(dev.draws.keys == h.keys);
  CHECK(dev.draws.probability == h.probability);
  REQUIRE(dev.draws.weight.size() == n);
  std::size_t off = 0;
  for (std::size_t b = 0; b < n; ++b) off += std::fabs(dev.draws.weight[b] - h.weight[b]) > 1e-6f * h.weight[b];
  CHECK(off == 0);
  std::vector<std::vector<std::uint32_t>> cols;
  std::vector<float> mask;
  host_windows(ptrs, spec, h, length, cols, mask);
  CHECK(dev.draws.columns == cols);
  CHECK(dev.draws.mask == mask);
}
}  // namespace

// 4 device shards on GPU 0 as 3 participants of a group sample (group_sample.cuh; threads, one board: shards 0 | 1, 2
// | 3), each drawing its share on the device: the same draws as draw_over_groups with those groups, bit for bit.
TEST_CASE("replay_gpu.group_participants_draw_as_one_table") {
  const auto spec = replay_test::small_spec(256);
  host_shards hs(spec, 4);
  const std::vector<std::vector<host_table*>> groups{{hs.ptrs[0]}, {hs.ptrs[1], hs.ptrs[2]}, {hs.ptrs[3]}};
  const std::size_t n = 1 << 15, length = 4;
  const auto dev = replay_gpu::group_device(spec, hs.shards, {0, 1, 1, 2}, sampler::prioritized(), n, length, 91, 0.6);
  MESSAGE("shares " << dev.plan.shares[0] << " " << dev.plan.shares[1] << " " << dev.plan.shares[2]);
  check_against_groups(dev, groups, hs.ptrs, spec, n, length, 91, 0.6);
}

// A global prioritized sample over 4 device shards on 2 GPUs (multi_gpu_shard_set; shards 0, 1 on GPU 0, shards 2,
// 3 on GPU 1): the plan, shards, keys and probabilities the same as the host twin's draw_over_groups from the same
// tables and seed, the same windows, weights from the smallest probability of both GPUs; each GPU's share against
// its total / the sum (chi-square over the draws of 16 seeds' plans, one degree of freedom) and the item
// frequencies against priority / the sum (chi-square, and far off against half the draws to each GPU). Skipped,
// with a line, with fewer than 2 GPUs.
TEST_CASE("replay_gpu.multi_gpu_prioritized_over_two_gpus") {
  const int gpus = replay_gpu::device_count();
  if (gpus < 2) {
    MESSAGE("replay_gpu.multi_gpu_prioritized_over_two_gpus skipped: needs 2 GPUs, found " << gpus);
    return;
  }
  const auto spec = replay_test::small_spec(256);
  host_shards hs(spec, 4);
  const auto& shards = hs.shards;
  const auto& ptrs = hs.ptrs;
  const std::vector<std::vector<host_table*>> groups{{ptrs[0], ptrs[1]}, {ptrs[2], ptrs[3]}};
  const std::size_t n = 1 << 16, length = 4;
  const auto dev =
      replay_gpu::multi_gpu_device(spec, shards, {0, 0, 1, 1}, sampler::prioritized(), n, length, 77, 0.6);
  check_against_groups(dev, groups, ptrs, spec, n, length, 77, 0.6);
  global_draws h;
  const group_plan hp = draw_over_groups(groups, sampler::prioritized(), n, 77, 0.6, h);
  // The shares: GPU 0's draws over 16 seeds' plans (the plan of the device run among them) against its total / sum.
  const double sum = hp.sum, p0 = hp.totals[0] / sum;
  double drawn0 = double(dev.plan.shares[0]);
  for (std::uint64_t seed = 78; seed < 93; ++seed)
    drawn0 += double(draw_over_groups(groups, sampler::prioritized(), n, seed, 0.6, h).shares[0]);
  const double all = 16.0 * double(n), e0 = all * p0, e1 = all - e0;
  const double xs = (drawn0 - e0) * (drawn0 - e0) / e0 + (all - drawn0 - e1) * (all - drawn0 - e1) / e1;
  MESSAGE("GPU 0's share " << drawn0 / all << " against " << p0 << ": chi-square " << xs);
  CHECK(xs < replay_test::chi2_critical(1));
  // Frequencies of (shard, slot) in the device run against priority / the sum of every shard's total.
  std::vector<double> counts(4 * 256, 0.0), expected(4 * 256, 0.0), even(4 * 256, 0.0);
  for (std::size_t b = 0; b < n; ++b)
    counts[std::size_t(dev.draws.shard[b]) * 256 + std::size_t(dev.draws.keys[b])] += 1;
  double df = -1;
  for (std::size_t k = 0; k < 4; ++k) {
    const detail::table_ref t = ptrs[k]->view();
    for (std::size_t s = 0; s < 256; ++s) {
      const double leaf = t.prio_tree[t.leaves + std::int64_t(s)];
      expected[k * 256 + s] = leaf / sum;
      even[k * 256 + s] = leaf / hp.totals[k / 2] / 2.0;
      df += leaf > 0;
    }
  }
  const double x = replay_test::chi2(counts, expected, double(n));
  MESSAGE("two-GPU chi-square " << x << " over " << df << " degrees of freedom");
  CHECK(x < replay_test::chi2_critical(df));
  CHECK(replay_test::chi2(counts, even, double(n)) > 10 * replay_test::chi2_critical(df));
}

// 4 writer threads inserting device rollouts into one device table at once (half its slots in mapped pinned host
// memory): every transition there exactly once, every row whole, every link to the same env's next step.
TEST_CASE("replay_gpu.concurrent_writers_none_lost_or_torn") {
  const auto r = replay_gpu::concurrent_device_writers(4, 150, 4, 3);
  MESSAGE(r.present << " items, " << r.missing << " missing, " << r.duplicated << " duplicated, " << r.torn
                    << " torn, " << r.bad_links << " bad links");
  CHECK(r.present == 4u * 150u * 4u * 3u);
  CHECK(r.missing == 0);
  CHECK(r.duplicated == 0);
  CHECK(r.torn == 0);
  CHECK(r.bad_links == 0);
}


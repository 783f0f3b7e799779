// The device table against the host table: same inserts and seeds must give the same keys, probabilities,
// windows and masks (slots split between device memory and mapped host memory), plus chi-square on device.
#include <doctest/doctest.h>

#include <cmath>
#include <gmi/replay/replay.hpp>
#include <vector>

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

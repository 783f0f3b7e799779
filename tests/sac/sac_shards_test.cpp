// A SAC learner's sharded replay (sac_shard_layout.hpp; the device side is sac_shards.cuh): the environment groups,
// the shard capacity and the budget in shards; the refusals of the three settings, one line each; and a host twin
// of the run's replay (host tables a group each, one global uniform draw an update, draws counted, a placement step
// every N vector steps under the budget): each shard's draws against its items' share (chi-square, and far off
// against even shares), a cold start in pinned host memory and the hottest shard moved into device memory, then
// hysteresis keeping it there.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/pipeline/offpolicy_loop.hpp>
#include <gmi/replay/global_sample.hpp>
#include <gmi/replay/placement.hpp>
#include <gmi/replay/replay.hpp>
#include <gmi/rl/sac.hpp>
#include <gmi/rl/sac_shard_layout.hpp>

#include "replay/support.hpp"

using gmi::rl::sac_config;
using gmi::rl::sac_shard_layout;
using gmi::replay::shard_memory;

namespace {

template <class F>
std::string refusal(F call) {
  try {
    call();
  } catch (const gmi::config_error& e) {
    return e.what();
  }
  return "no error";
}

sac_config sharded(int shards, std::size_t every, std::optional<double> mib) {
  sac_config c;
  c.replay_capacity = 30000;
  c.replay_shards = shards;
  c.placement_every = every;
  c.replay_device_mib = mib;
  return c;
}

// The run's replay on the host: shards of small_spec rows (8 floats), group k inserting its envs each vector step,
// `updates` global uniform draws of `batch` a vector step, a placement step every `every` vector steps.
struct twin {
  sac_shard_layout layout;
  std::vector<std::unique_ptr<gmi::replay::host_table>> tables;
  std::vector<gmi::replay::host_table::writer> writers;
  std::vector<gmi::replay::host_table*> ptrs;
  gmi::replay::access_counts counts;
  std::vector<shard_memory> where;
  std::vector<double> drawn;
  std::size_t moves = 0, decided = 0;
  std::uint64_t steps = 0;
  // first: other environment groups than the layout's (the same count).
  twin(const sac_config& c, std::size_t envs, std::vector<std::size_t> first = {})
      : layout(sac_shard_layout::make(c, envs, 8)), counts(layout.shards),
        where(layout.shards, layout.budget ? shard_memory::pinned_host : shard_memory::device),
        drawn(layout.shards, 0.0) {
    if (!first.empty()) layout.first = std::move(first);
    for (std::size_t k = 0; k < layout.shards; ++k) {
      tables.push_back(std::make_unique<gmi::replay::host_table>(replay_test::small_spec(layout.capacity)));
      writers.push_back(tables.back()->make_writer(layout.group_envs(k)));
      ptrs.push_back(tables.back().get());
    }
  }
  void vector_step(const sac_config& c, std::size_t batch, int updates) {
    for (std::size_t k = 0; k < layout.shards; ++k) {
      replay_test::rollout_data d(1, layout.group_envs(k), steps);
      gmi::replay::rollout r;
      for (const auto& col : d.cols) r.columns.push_back(col.data());
      r.horizon = 1;
      r.envs = d.envs;
      tables[k]->insert(writers[k], r);
    }
    ++steps;
    gmi::replay::global_draws g;
    for (int u = 0; u < updates; ++u) {
      gmi::replay::draw_global(ptrs, gmi::replay::sampler::uniform(), batch, steps * 1000 + std::uint64_t(u), 0.0, g);
      for (const std::int32_t s : g.shard) {
        counts.count(std::size_t(s), 1);
        drawn[std::size_t(s)] += 1;
      }
    }
    if (steps % c.placement_every != 0) return;
    const auto p = gmi::replay::place_shards(counts.take(), where, layout.rule());
    moves += p.moves(where);
    decided += p.decided;
    where = p.where;
  }
};

}  // namespace

TEST_CASE("sac.shards.layout_groups_capacity_budget") {
  const auto l = sac_shard_layout::make(sharded(3, 10, 1.0), 10, 9);
  CHECK(l.first == std::vector<std::size_t>{0, 4, 7, 10});
  CHECK(l.group_envs(0) == 4);
  CHECK(l.group_envs(2) == 3);
  CHECK(l.capacity == 10000);
  CHECK(l.shard_bytes == 10000u * 9 * 4);
  CHECK(l.budget);
  CHECK(l.device_shards == 2);  // 1 MiB over 360000 bytes a shard
  CHECK(l.rule().device_shards == 2);
  CHECK(sac_shard_layout::make(sharded(3, 10, 0.0), 10, 9).device_shards == 0);
  const auto none = sac_shard_layout::make(sharded(2, 0, std::nullopt), 8, 9);
  CHECK_FALSE(none.budget);
  CHECK(none.device_shards == std::numeric_limits<std::size_t>::max());
  const auto one = sac_shard_layout::make(sac_config{}, 8, 9);
  CHECK(one.shards == 1);
  CHECK(one.capacity == sac_config{}.replay_capacity);
}

TEST_CASE("sac.shards.refusals_name_the_setting") {
  CHECK(refusal([] { sharded(0, 0, std::nullopt).validate(); }) ==
        "sac.replay_shards: got 0, need 1..64");
  CHECK(refusal([] { sharded(65, 0, std::nullopt).validate(); }) == "sac.replay_shards: got 65, need 1..64");
  CHECK(refusal([] { sharded(1, 10, std::nullopt).validate(); }) ==
        "sac.placement_every: got 10, need 0 with sac.replay_shards 1 (one shard: nothing to place)");
  CHECK(refusal([] { sharded(2, 2000000, std::nullopt).validate(); }) ==
        "sac.placement_every: got 2000000, need 0..1000000 vector steps");
  CHECK(refusal([] { sharded(2, 0, 4.0).validate(); }) ==
        "sac.replay_device_mib: got 4, need none without sac.placement_every > 0 (placement applies it)");
  CHECK(refusal([] { sharded(2, 10, -1.0).validate(); }) == "sac.replay_device_mib: got -1, need 0..1e7 MiB");
  CHECK(refusal([] { (void)sac_shard_layout::make(sharded(4, 0, std::nullopt), 3, 9); }) ==
        "sac.replay_shards: got 4, need 1..3 (one group of environments a shard; num_envs 3)");
  sac_config small = sharded(4, 0, std::nullopt);
  small.replay_capacity = 300;
  small.batch = 8;
  small.warmup_steps = 8;
  CHECK(refusal([&] { (void)sac_shard_layout::make(small, 400, 9); }) ==
        "sac.replay_capacity: got 300, need >= 400 (each of 4 shards holds a vector step of its 100 environments)");
  // The host trainer keeps one table.
  CHECK(refusal([] { gmi::rl::sac_trainer<gmi::envs::pendulum> t(sharded(2, 0, std::nullopt), 4, 1); }) ==
        "sac.replay_shards: got 2, need 1 on the host trainer (sharded replay and its placement are the GPU "
        "trainer's)");
}

// Three shards of groups 4, 3 and 3 environments: the draws follow the items (0.4, 0.3, 0.3); a budget of one
// shard starts all three in pinned host memory, the first decided step brings shard 0 (the hottest) in and keeps
// the others out, and later steps move nothing.
TEST_CASE("sac.shards.twin_draws_follow_items_and_budget_places_hottest") {
  const sac_config c = sharded(3, 20, 1.5 * 30000.0 / 3 * 8 * 4 / (1024.0 * 1024.0));  // 1.5 shards' bytes
  twin t(c, 10);
  REQUIRE(t.layout.device_shards == 1);
  CHECK(t.where == std::vector<shard_memory>(3, shard_memory::pinned_host));
  for (int s = 0; s < 200; ++s) t.vector_step(c, 256, 4);
  double all = 0;
  for (const double d : t.drawn) all += d;
  const std::vector<double> items = {0.4, 0.3, 0.3}, even = {1 / 3.0, 1 / 3.0, 1 / 3.0};
  const double x = replay_test::chi2(t.drawn, items, all);
  MESSAGE("draws " << t.drawn[0] << " " << t.drawn[1] << " " << t.drawn[2] << ", chi-square " << x);
  CHECK(x < replay_test::chi2_critical(2));
  CHECK(replay_test::chi2(t.drawn, even, all) > 10 * replay_test::chi2_critical(2));
  CHECK(t.decided == 10);
  CHECK(t.moves == 1);
  CHECK(t.where == std::vector<shard_memory>{shard_memory::device, shard_memory::pinned_host, shard_memory::pinned_host});
}

// Groups of 3, 3 and 2 environments under a budget of one shard: shards 0 and 1 draw alike, so whichever drew more
// in the first decided window moves in and keeps its place (a host shard's draws count 0.75 against it) over the
// 10 decided steps: one move in all.
TEST_CASE("sac.shards.twin_budget_keeps_the_incumbent_among_equals") {
  const sac_config c = sharded(3, 20, 1.5 * 30000.0 / 3 * 8 * 4 / (1024.0 * 1024.0));
  twin t(c, 8);
  for (int s = 0; s < 200; ++s) t.vector_step(c, 256, 4);
  CHECK(t.decided == 10);
  CHECK(t.moves == 1);
  CHECK(t.where[2] == shard_memory::pinned_host);
  CHECK((t.where[0] == shard_memory::device) != (t.where[1] == shard_memory::device));
}

// Hysteresis in the run's rule: no budget, two shards of 7 and 1 environments (shares 0.875 and 0.125); the cold
// one leaves device memory (0.125 < 0.5 x 0.75 / 2); a budget of 0 sends both out.
TEST_CASE("sac.shards.twin_cold_shard_leaves_device_memory") {
  const sac_config c = sharded(2, 10, std::nullopt);
  twin t(c, 8, {0, 7, 8});
  for (int s = 0; s < 60; ++s) t.vector_step(c, 256, 2);
  CHECK(t.where == std::vector<shard_memory>{shard_memory::device, shard_memory::pinned_host});
  CHECK(t.moves == 1);
  // A share at 0.2 (between the stay line 0.1875 and the enter line 0.25): a device shard stays, a host one stays out.
  const std::vector<std::uint64_t> window = {8000, 2000};
  const auto stay = gmi::replay::place_shards(window, std::vector<shard_memory>(2, shard_memory::device), t.layout.rule());
  CHECK(stay.where[1] == shard_memory::device);
  const auto out = gmi::replay::place_shards(window, t.where, t.layout.rule());
  CHECK(out.where[1] == shard_memory::pinned_host);
  twin zero(sharded(2, 10, 0.0), 8);
  for (int s = 0; s < 20; ++s) zero.vector_step(sharded(2, 10, 0.0), 256, 2);
  CHECK(zero.where == std::vector<shard_memory>(2, shard_memory::pinned_host));
  CHECK(zero.moves == 0);
}

// What a metrics line and a progress line say about the shards (pipeline/offpolicy_loop.hpp).
TEST_CASE("sac.shards.report_in_metrics_lines") {
  gmi::rl::sac_shard_report r;
  r.envs = {3, 3, 2};
  r.memory = {shard_memory::pinned_host, shard_memory::device, shard_memory::pinned_host};
  r.drawn = {3000, 3000, 2000};
  r.placement_steps = 15;
  r.decided_steps = 13;
  r.moves = 1;
  r.device_shards = 1;
  const auto j = gmi::detail::shard_report_json(r);
  REQUIRE(j["shards"].size() == 3);
  CHECK(j["shards"][1]["memory"] == "device");
  CHECK(j["shards"][2]["memory"] == "pinned_host");
  CHECK(j["shards"][2]["envs"] == 2);
  CHECK(j["shards"][0]["drawn"] == 3000);
  CHECK(j["shards"][2]["drawn_share"].get<double>() == doctest::Approx(0.25));
  CHECK(j["placement_steps"] == 15);
  CHECK(j["decided_steps"] == 13);
  CHECK(j["moves"] == 1);
  CHECK(j["device_shards"] == 1);
  r.device_shards = std::numeric_limits<std::size_t>::max();
  CHECK(gmi::detail::shard_report_json(r)["device_shards"].is_null());
  CHECK(gmi::detail::shard_report_text(r) == "shards host 3.0k, dev 3.0k, host 2.0k");
}

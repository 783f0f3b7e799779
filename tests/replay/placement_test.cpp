// Shard placement by access probability (replay/placement.hpp): the rule's threshold, budget, hysteresis and
// evidence floor, the counters, the overrides, and bad rules refused with one line; the replica rule
// (replay/replication.hpp): copy cost against read cost, its margin and hysteresis, the floor, the refusals.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <gmi/replay/placement.hpp>
#include <gmi/replay/replication.hpp>

using gmi::replay::access_counts;
using gmi::replay::place_shards;
using gmi::replay::placement_rule;
using gmi::replay::shard_memory;

namespace {
constexpr shard_memory dev = shard_memory::device, host = shard_memory::pinned_host;
std::vector<shard_memory> all(std::size_t n, shard_memory m) { return std::vector<shard_memory>(n, m); }
}  // namespace

TEST_CASE("replay.placement_keeps_hot_and_moves_cold") {
  placement_rule r;  // hot_share 0.5: a hot shard draws >= 1/8 of 4 shards' items
  const std::vector<std::uint64_t> c{5000, 3000, 1500, 500};  // shares 0.5, 0.3, 0.15, 0.05
  const auto p = place_shards(c, all(4, dev), r);
  CHECK(p.decided);
  CHECK(p.where == std::vector<shard_memory>{dev, dev, dev, host});
  CHECK(p.share[3] == doctest::Approx(0.05));
  CHECK(p.moves(all(4, dev)) == 1);
  // A stricter threshold (an even share: 0.25) also moves shard 2.
  r.hot_share = 1.0;
  CHECK(place_shards(c, all(4, dev), r).where == std::vector<shard_memory>{dev, dev, host, host});
  // Even draws keep every shard on the device.
  r.hot_share = 0.5;
  CHECK(place_shards(std::vector<std::uint64_t>{1000, 1000, 1000, 1000}, all(4, dev), r).where == all(4, dev));
}

TEST_CASE("replay.placement_brings_hot_shards_back_hottest_first_within_the_budget") {
  placement_rule r;
  r.device_shards = 2;
  const std::vector<std::uint64_t> c{1000, 4000, 3000, 2000};  // every share above 1/8; budget 2: shards 1 and 2
  const auto p = place_shards(c, all(4, host), r);
  CHECK(p.where == std::vector<shard_memory>{host, dev, dev, host});
  CHECK(p.moves(all(4, host)) == 2);
  // Equal counts: the lower index first.
  r.device_shards = 1;
  CHECK(place_shards(std::vector<std::uint64_t>{3000, 3000}, all(2, host), r).where ==
        std::vector<shard_memory>{dev, host});
  // The budget binding: a device shard keeps its place against a host one drawing up to 1 / (1 - 0.25) times as
  // much, and gives it up beyond.
  const std::vector<shard_memory> first_in{dev, host};
  CHECK(place_shards(std::vector<std::uint64_t>{3000, 3500}, first_in, r).where == first_in);
  CHECK(place_shards(std::vector<std::uint64_t>{3000, 3900}, first_in, r).where == first_in);
  CHECK(place_shards(std::vector<std::uint64_t>{3000, 4100}, first_in, r).where == std::vector<shard_memory>{host, dev});
}

TEST_CASE("replay.placement_hysteresis_and_evidence_floor") {
  placement_rule r;  // 4 shards: enter at 0.125, a device shard stays down to 0.09375
  const std::vector<std::uint64_t> c{4500, 4500, 1000, 0};  // shard 2: 0.1
  CHECK(place_shards(c, std::vector<shard_memory>{dev, dev, dev, dev}, r).where[2] == dev);    // stays
  CHECK(place_shards(c, std::vector<shard_memory>{dev, dev, host, dev}, r).where[2] == host);  // does not enter
  r.hysteresis = 0.0;
  CHECK(place_shards(c, all(4, dev), r).where[2] == host);
  // Too few draws in the window: nothing moves, whatever the shares.
  r.min_samples = 20000;
  const auto p = place_shards(c, all(4, dev), r);
  CHECK_FALSE(p.decided);
  CHECK(p.where == all(4, dev));
  CHECK(place_shards(std::vector<std::uint64_t>{0, 0}, all(2, host), placement_rule{}).where == all(2, host));
}

TEST_CASE("replay.placement_counts_and_overrides") {
  access_counts a(3);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) a.count(std::size_t(i % 3), 2);
    });
  for (auto& t : ts) t.join();
  const auto c = a.take();
  CHECK(c == std::vector<std::uint64_t>{2672, 2664, 2664});
  CHECK(a.take() == std::vector<std::uint64_t>{0, 0, 0});  // a new window
  CHECK_THROWS_WITH_AS(a.count(3, 1), doctest::Contains("got 3, need < 3"), gmi::config_error);

}

TEST_CASE("replay.placement_refuses_bad_rules") {
  placement_rule r;
  r.hot_share = -1;
  CHECK_THROWS_WITH_AS(r.validate(), doctest::Contains("placement_rule.hot_share: got -1"), gmi::config_error);
  r = {};
  r.hysteresis = 2;
  CHECK_THROWS_WITH_AS(r.validate(), doctest::Contains("placement_rule.hysteresis: got 2, need 0 .. 1"),
                       gmi::config_error);
  CHECK_THROWS_WITH_AS((void)place_shards(std::vector<std::uint64_t>{1, 2}, all(3, dev), placement_rule{}),
                       doctest::Contains("got 2, need 3"), gmi::config_error);
}

// A shard of 1 M rows of 256 bytes; copies at 100 GB/s (2.56 ms the whole shard), reads at 20 GB/s.
TEST_CASE("replay.replication_copies_only_where_cheaper") {
  using gmi::replay::decide_replica;
  const gmi::replay::replica_link link{100.0, 20.0};
  const gmi::replay::replica_rule rule;  // margin 2
  gmi::replay::replica_window w;
  w.shard_rows = 1000000;
  w.row_bytes = 256;
  w.inserted_rows = 100000;
  w.draws = 1000000;  // 12.8 ms of reads > 2 x 2.56 ms: replicate
  auto d = decide_replica(w, link, rule);
  CHECK(d.decided);
  CHECK(d.replicate);
  CHECK(d.read_s == doctest::Approx(12.8e-3));
  CHECK(d.copy_s == doctest::Approx(2.56e-3));
  w.draws = 300000;  // 3.84 ms: above the copy, under twice the copy: no new replica
  CHECK_FALSE(decide_replica(w, link, rule).replicate);
  w.replicated = true;  // an existing one keeps up by copying the 100 k new rows (0.256 ms): kept
  d = decide_replica(w, link, rule);
  CHECK(d.replicate);
  CHECK(d.copy_s == doctest::Approx(0.256e-3));
  w.inserted_rows = 1000000;  // the whole shard rewritten in the window (2.56 ms < 3.84 ms): still kept
  CHECK(decide_replica(w, link, rule).replicate);
  w.draws = 5000;  // 0.064 ms of reads against 2.56 ms of copies: dropped
  CHECK_FALSE(decide_replica(w, link, rule).replicate);
  w.draws = 4000;  // under the floor: as it is
  d = decide_replica(w, link, rule);
  CHECK_FALSE(d.decided);
  CHECK(d.replicate);
  w.replicated = false;
  CHECK_FALSE(decide_replica(w, link, rule).replicate);
}

TEST_CASE("replay.replication_refuses_unmeasured_links_and_bad_rules") {
  gmi::replay::replica_window w;
  w.row_bytes = 4;
  CHECK_THROWS_WITH_AS((void)gmi::replay::decide_replica(w, {}, {}),
                       doctest::Contains("replica_link.copy_gbps: got 0, need (0, 1e5] GB/s, measured on this machine"),
                       gmi::config_error);
  CHECK_THROWS_WITH_AS((void)gmi::replay::decide_replica(w, {10.0, -1.0}, {}),
                       doctest::Contains("replica_link.read_gbps: got -1"), gmi::config_error);
  gmi::replay::replica_rule r;
  r.margin = 0.5;
  CHECK_THROWS_WITH_AS((void)gmi::replay::decide_replica(w, {10.0, 10.0}, r),
                       doctest::Contains("replica_rule.margin: got 0.5, need 1 .. 100"), gmi::config_error);
  w.row_bytes = 0;
  CHECK_THROWS_WITH_AS((void)gmi::replay::decide_replica(w, {10.0, 10.0}, {}),
                       doctest::Contains("replica_window.row_bytes: got 0, need >= 1"), gmi::config_error);
}

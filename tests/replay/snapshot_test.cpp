// Replay snapshots: round trip, restore under concurrent inserts, damaged or inconsistent files refused.
#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <gmi/core/rng.hpp>
#include <gmi/replay/replay.hpp>
#include <thread>
#include <vector>

#include "io/temp_dir.hpp"
#include "replay/support.hpp"

using namespace gmi::replay;
using replay_test::rollout_data;

namespace {

rollout as_rollout(const rollout_data& d) {
  rollout r;
  for (const auto& c : d.cols) r.columns.push_back(c.data());
  r.horizon = d.horizon;
  r.envs = d.envs;
  if (!d.priorities.empty()) r.priorities = d.priorities.data();
  return r;
}

std::vector<char> read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void write_all(const std::filesystem::path& p, const std::vector<char>& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(b.data(), static_cast<std::streamsize>(b.size()));
}

// Every item's values encode (env, time): a restored table is consistent iff each window reads back in order.
void check_consistent(host_table& t, std::size_t n) {
  host_batch b;
  t.sample(sampler::uniform(), n, 4, 5, b);
  const float* obs = b.column<float>(0);
  const float* act = b.column<float>(1);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < 4; ++k) {
      const std::size_t r = i * 4 + k;
      if (b.mask[r] == 0.0f) continue;
      REQUIRE(obs[r * 3 + 1] == obs[i * 4 * 3 + 1] + static_cast<float>(k));
      REQUIRE(obs[r * 3 + 0] == obs[i * 4 * 3 + 0]);
      REQUIRE(act[r * 2 + 0] == -obs[r * 3 + 1]);
    }
}

}  // namespace

TEST_CASE("replay.snapshot.round_trip_restores_the_same_samples") {
  gmi_test::temp_dir dir;
  auto spec = replay_test::small_spec(40);
  spec.remove = remover::min_heap;
  spec.max_times_sampled = 3;
  host_table t(spec);
  auto w = t.make_writer(3);
  for (std::size_t i = 0; i < 5; ++i) {
    rollout_data d(4, 3, i * 4, [](std::size_t e, std::size_t time) { return (e + time) % 7 == 0; });
    d.priorities.assign(12, 0.0f);
    for (std::size_t j = 0; j < 12; ++j) d.priorities[j] = static_cast<float>((j * 7 + i) % 11 + 1);
    t.insert(w, as_rollout(d));
  }
  host_batch b1, b2;
  t.sample(sampler::prioritized(), 8, 3, 1, b1);
  save(t.take_snapshot(), dir.path() / "r.gmi");
  t.sample(sampler::prioritized(), 16, 5, 2, b1);
  host_table u(spec);
  u.restore(load(dir.path() / "r.gmi", spec));
  u.sample(sampler::prioritized(), 16, 5, 2, b2);
  CHECK(b1.info.keys == b2.info.keys);
  CHECK(b1.columns == b2.columns);
  CHECK(b1.mask == b2.mask);
  CHECK(t.counters().inserts == u.counters().inserts);
  CHECK(t.counters().deletes == u.counters().deletes);
  // Inserting after restore evicts the same items in both.
  auto wt = t.make_writer(1), wu = u.make_writer(1);
  rollout_data more(6, 1, 500);
  t.insert(wt, as_rollout(more));
  u.insert(wu, as_rollout(more));
  t.sample(sampler::fifo(), t.size(), 1, 0, b1);
  u.sample(sampler::fifo(), u.size(), 1, 0, b2);
  CHECK(b1.columns == b2.columns);
  // Another layout is refused with one line.
  auto other = spec;
  other.columns[0].width = 4;
  CHECK_THROWS_WITH_AS((void)load(dir.path() / "r.gmi", other), doctest::Contains("table spec: got"),
                       gmi::config_error);
}

TEST_CASE("replay.snapshot.under_concurrent_inserts" * doctest::timeout(60)) {
  gmi_test::temp_dir dir;
  const auto spec = replay_test::small_spec(4096);
  host_table t(spec);
  std::atomic<bool> stop{false};
  std::atomic<long> inserts_during{0};
  std::atomic<bool> saving{false};
  std::thread writer([&] {
    auto w = t.make_writer(4);
    for (std::size_t i = 0; !stop; ++i) {
      t.insert(w, as_rollout(rollout_data(8, 4, i * 8, [](std::size_t e, std::size_t time) { return time % (13 + e) == 12; })));
      if (saving) ++inserts_during;
    }
  });
  while (t.size() < 2000) std::this_thread::yield();
  for (int k = 0; k < 5; ++k) {
    saving = true;
    snapshot s = t.take_snapshot();
    save(s, dir.path() / ("s" + std::to_string(k) + ".gmi"));
    saving = false;
    host_table u(spec);
    u.restore(load(dir.path() / ("s" + std::to_string(k) + ".gmi"), spec));
    CHECK(u.size() == s.index.count.size());
    check_consistent(u, 512);
  }
  stop = true;
  writer.join();
  CHECK(inserts_during.load() > 0);  // the writer kept inserting while snapshots were written
  check_consistent(t, 512);
}

TEST_CASE("replay.snapshot.damaged_files_are_refused" * doctest::timeout(120)) {
  gmi_test::temp_dir dir;
  const auto spec = replay_test::small_spec(24);
  host_table t(spec);
  auto w = t.make_writer(2);
  t.insert(w, as_rollout(rollout_data(5, 2)));
  const auto good = dir.path() / "good.gmi";
  save(t.take_snapshot(), good);
  const std::vector<char> bytes = read_all(good);
  gmi::rng r(42, 0);
  const auto bad = dir.path() / "bad.gmi";
  int refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<char> b = bytes;
    const int kind = trial % 3;
    if (kind == 0) {  // flip 1-4 bytes
      for (std::uint32_t k = 0, n = 1 + r.next_u32() % 4; k < n; ++k) b[r.next_u32() % b.size()] ^= static_cast<char>(1 + r.next_u32() % 255);
    } else if (kind == 1) {  // truncate
      b.resize(r.next_u32() % b.size());
    } else {  // extra bytes at the end
      b.resize(b.size() + 1 + r.next_u32() % 64, 'x');
    }
    write_all(bad, b);
    try {
      host_table u(spec);
      u.restore(load(bad, spec));
    } catch (const gmi::config_error& e) {
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
      ++refused;
    }
  }
  CHECK(refused == 300);
  // Files with a valid checksum whose contents do not hang together: each refused before anything is used.
  const auto crafted = [&](auto edit, const char* expect) {
    snapshot s = t.take_snapshot();
    edit(s);
    save(s, bad);
    host_table u(spec);
    CHECK_THROWS_WITH_AS(u.restore(load(bad, spec)), doctest::Contains(expect), gmi::config_error);
  };
  crafted([](snapshot& s) { s.next[3] = 1000; }, "item 3 next: got 1000");
  crafted([](snapshot& s) { s.traj[20] = 7; }, "item 20 trajectory");
  crafted([](snapshot& s) { s.index.free.push_back(s.index.free.front()); }, "free slot");
  crafted([](snapshot& s) { s.index.seq[2] = s.index.next_seq + 5; }, "item 2 seq");
  crafted([](snapshot& s) { s.index.leaf[1] = -1.0; }, "item 1 priority");
  crafted([](snapshot& s) { s.index.count.deletes = 3; }, "inserts - deletes");
  // The table that refused a snapshot is untouched and usable.
  host_table u(spec);
  auto wu = u.make_writer(1);
  u.insert(wu, as_rollout(rollout_data(2, 1)));
  CHECK(u.size() == 2);
}

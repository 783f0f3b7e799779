// The experience channel on the host placement (shared memory, memcpy): the four stages on their own
// (dispense, pack, migrate, batch), whole channels between threads and between real processes, back-pressure,
// load routing, and the faults: a peer killed with SIGKILL mid-transfer, record size / shape tag mismatches, a
// forged descriptor. Every test also checks that no /dev/shm segment of the channel is left behind.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include <gmi/comm/channel.hpp>

#include "channel/channel_data.hpp"
#include "comm/fork_util.hpp"

using namespace std::chrono_literals;
namespace comm = gmi::comm;

namespace {
comm::channel_options options(const std::string& tag, int producers, int consumers, const gmi_test::geometry& g,
                              std::uint32_t packages_per_slot, std::uint32_t slots = 4) {
  comm::channel_options o;
  o.tag = tag;
  o.producers = producers;
  o.consumers = consumers;
  o.record_bytes = g.record_bytes;
  o.shape_tag = 0x5eed0000u + g.record_bytes;
  o.package_steps = g.package_steps;
  o.package_envs = g.package_envs;
  o.packages_per_slot = packages_per_slot;
  o.slots = slots;
  o.timeout = 10s;
  return o;
}

// produce() sends each rollout with the note {producer, rollout, note_magic, 0}.
constexpr std::uint64_t note_magic = 0x6e6f7465ull;

struct consumed {
  std::size_t packages = 0, wrong = 0, batches = 0, zero_copy = 0, short_batches = 0;
  std::size_t noted = 0, note_wrong = 0;  // packages with produce()'s note; of those, notes that do not fit
  std::set<std::pair<std::uint32_t, std::uint64_t>> seen;  // (producer, package index): each exactly once
  std::size_t duplicates = 0;
};

// Drains a consumer, checking every package against the reference data, and produce()'s notes: a slot carries
// its last send's note, so a package's note names its own rollout or one at most per_slot - 1 rollouts later.
consumed drain(comm::channel_consumer& c, const gmi_test::geometry& g, std::uint32_t per_batch,
               std::chrono::milliseconds per_batch_delay = 0ms, std::uint32_t per_slot = 1) {
  consumed r;
  while (auto b = c.next_batch()) {
    ++r.batches;
    r.zero_copy += b->zero_copy();
    r.short_batches += b->packages() != per_batch;
    REQUIRE(b->bytes() == b->packages() * g.package_bytes());
    REQUIRE(b->origins().size() == b->packages());
    REQUIRE(b->notes().size() == b->packages());
    for (std::uint32_t k = 0; k < b->packages(); ++k) {
      const auto [producer, index] = b->origins()[k];
      if (const auto& note = b->notes()[k]; note.words[2] == note_magic) {
        const std::uint64_t rollout = index / g.packages_per_rollout();
        ++r.noted;
        r.note_wrong += note.words[0] != producer || note.words[1] < rollout || note.words[1] > rollout + per_slot - 1;
      }
      r.wrong += gmi_test::check_package(g, b->as<std::uint32_t>() + k * g.package_bytes() / 4, producer, index);
      r.duplicates += !r.seen.emplace(producer, index).second;
      ++r.packages;
    }
    if (per_batch_delay.count()) std::this_thread::sleep_for(per_batch_delay);
  }
  return r;
}

void produce(comm::channel_producer& p, const gmi_test::geometry& g, int rollouts) {
  for (int r = 0; r < rollouts; ++r) {
    const auto data = gmi_test::make_rollout(static_cast<std::uint32_t>(p.rank()), static_cast<std::uint64_t>(r), g.steps,
                                             g.envs, g.record_bytes);
    comm::package_note note;
    note.words[0] = static_cast<std::uint64_t>(p.rank());
    note.words[1] = static_cast<std::uint64_t>(r);
    note.words[2] = note_magic;
    p.send(data.data(), g.steps, g.envs, note);
  }
  p.close();
}
}  // namespace

TEST_SUITE("cpu") {
TEST_CASE("channel.dispense.cuts_rollouts_into_time_blocks") {
  comm::dispenser d(8, 2, 3);
  CHECK(d.packages(4, 6) == 4);
  CHECK(d.package_bytes() == 48);
  std::vector<std::byte> rollout(4 * 6 * 8);
  std::vector<comm::package_region> got;
  d.dispense(rollout.data(), 4, 6, [&](const comm::package_region& r) { got.push_back(r); });
  REQUIRE(got.size() == 4);
  // Time blocks outermost: (t0, e0) = (0,0) (0,3) (2,0) (2,3).
  const std::uint32_t want[4][2] = {{0, 0}, {0, 3}, {2, 0}, {2, 3}};
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(got[i].index == i);
    CHECK(got[i].step0 == want[i][0]);
    CHECK(got[i].env0 == want[i][1]);
    CHECK(got[i].src == rollout.data() + (want[i][0] * 6 + want[i][1]) * 8);
    CHECK(got[i].src_pitch == 48);
    CHECK(got[i].row_bytes == 24);
    CHECK(got[i].rows == 2);
    CHECK_FALSE(got[i].contiguous());
  }
  comm::dispenser whole(8, 2, 6);
  whole.dispense(rollout.data(), 4, 6, [&](const comm::package_region& r) { CHECK(r.contiguous()); });
  CHECK_THROWS_WITH_AS((void)d.packages(5, 6), doctest::Contains("rollout steps: got 5"), gmi::config_error);
  CHECK_THROWS_WITH_AS((void)d.packages(4, 7), doctest::Contains("multiple of package_envs 3"), gmi::config_error);
}

TEST_CASE("channel.migrate.least_queued_with_round_robin_ties") {
  comm::migrator m(3);
  const std::vector<std::uint8_t> all{1, 1, 1};
  // Equal loads: round robin.
  std::vector<std::uint64_t> q{0, 0, 0};
  CHECK(m.choose(q, all) == 0);
  CHECK(m.choose(q, all) == 1);
  CHECK(m.choose(q, all) == 2);
  CHECK(m.choose(q, all) == 0);
  // The least loaded wins whatever the rotation.
  q = {100, 5, 50};
  CHECK(m.choose(q, all) == 1);
  CHECK(m.choose(q, all) == 1);
  // A link without a free slot is never chosen; none free: -1 (the producer waits).
  CHECK(m.choose(q, std::vector<std::uint8_t>{1, 0, 1}) == 2);
  CHECK(m.choose(q, std::vector<std::uint8_t>{0, 0, 0}) == -1);
  comm::migrator rr(3, comm::routing::round_robin);
  q = {0, 1000, 0};
  CHECK(rr.choose(q, all) == 0);
  CHECK(rr.choose(q, all) == 1);  // round robin ignores load
  CHECK(rr.choose(q, std::vector<std::uint8_t>{1, 1, 0}) == 0);
  CHECK_THROWS_AS(m.choose(q, std::vector<std::uint8_t>{1}), gmi::config_error);
}

TEST_CASE("channel.options.validate_names_the_value") {
  const gmi_test::geometry g{4, 4, 16, 2, 2};
  auto o = options(comm::unique_tag("opt"), 1, 1, g, 1);
  o.slots = 3;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("channel slots: got 3"), gmi::config_error);
  o.slots = 128;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("a power of two in 1..64"), gmi::config_error);
  o.slots = 4;
  o.record_bytes = 0;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("record_bytes: got 0"), gmi::config_error);
  o.record_bytes = 16;
  o.tag = "bad/tag";
  CHECK_THROWS_AS(o.validate(), gmi::config_error);
  o.tag = comm::unique_tag("opt");
  CHECK_THROWS_WITH_AS(comm::channel_producer(o, 1), doctest::Contains("producer rank: got 1"), gmi::config_error);
}

TEST_CASE("channel.threads.pack_and_batch_shapes" * doctest::timeout(60)) {
  // Packages narrower than the rollout (2D copies) and full-width ones (contiguous, merged copies); batches that
  // lie inside a slot (zero-copy), span slots (gathered) or are longer than a slot.
  for (std::uint32_t package_envs : {3u, 12u}) {
    for (std::uint32_t per_slot : {1u, 2u, 4u}) {
      for (std::uint32_t per_batch : {1u, 2u, 3u, 8u}) {
        CAPTURE(package_envs);
        CAPTURE(per_slot);
        CAPTURE(per_batch);
        const gmi_test::geometry g{8, 12, 20, 2, package_envs};
        const auto tag = comm::unique_tag("shape");
        const auto o = options(tag, 1, 1, g, per_slot);
        if (per_batch > o.slots * per_slot) {  // more than one producer can have in flight: refused up front
          CHECK_THROWS_WITH_AS(comm::channel_consumer(o, 0, per_batch), doctest::Contains("packages_per_batch"),
                               gmi::config_error);
          continue;
        }
        comm::channel_consumer c(o, 0, per_batch);
        consumed r;
        std::thread producer([&] {
          comm::channel_producer p(o, 0);
          produce(p, g, 5);
        });
        r = drain(c, g, per_batch, 0ms, per_slot);
        producer.join();
        const std::uint64_t total = 5 * g.packages_per_rollout();
        CHECK(r.packages == total);
        CHECK(r.wrong == 0);
        CHECK(r.noted == total);
        CHECK(r.note_wrong == 0);
        CHECK(r.duplicates == 0);
        CHECK(r.short_batches <= 1);
        if (per_slot % per_batch == 0) CHECK(r.zero_copy == r.batches);  // every batch inside one slot
        CHECK(c.stats().packages == total);
        CHECK(gmi_test::segments_with(tag) == 0);
      }
    }
  }
}

TEST_CASE("channel.threads.rollout_buffer_reused_between_sends" * doctest::timeout(60)) {
  // The producer rewrites one rollout buffer before each send, and slots straddle rollouts (4 packages per
  // rollout, 3 per slot, contiguous packages): send must have copied everything out of the buffer when it returns.
  const gmi_test::geometry g{8, 12, 20, 2, 12};
  const auto tag = comm::unique_tag("reuse");
  const auto o = options(tag, 1, 1, g, 3);
  comm::channel_consumer c(o, 0, 2);
  std::thread producer([&] {
    comm::channel_producer p(o, 0);
    std::vector<std::uint32_t> buffer(std::size_t{g.steps} * g.envs * g.record_bytes / 4);
    for (int r = 0; r < 7; ++r) {
      const auto data = gmi_test::make_rollout(0, static_cast<std::uint64_t>(r), g.steps, g.envs, g.record_bytes);
      std::copy(data.begin(), data.end(), buffer.begin());  // the same storage every time
      p.send(buffer.data(), g.steps, g.envs);
    }
    std::fill(buffer.begin(), buffer.end(), 0u);  // whatever close() flushes must not come from here either
    p.close();
  });
  const auto r = drain(c, g, 2);
  producer.join();
  CHECK(r.packages == 7 * g.packages_per_rollout());
  CHECK(r.wrong == 0);
  CHECK(r.duplicates == 0);
  CHECK(gmi_test::segments_with(tag) == 0);
}

TEST_CASE("channel.threads.many_producers_many_consumers" * doctest::timeout(60)) {
  const gmi_test::geometry g{16, 32, 36, 4, 8};
  const auto tag = comm::unique_tag("mxn");
  const auto o = options(tag, 3, 2, g, 2);
  std::vector<std::unique_ptr<comm::channel_consumer>> consumers;
  for (int c = 0; c < 2; ++c) consumers.push_back(std::make_unique<comm::channel_consumer>(o, c, 3));
  std::vector<std::thread> producers;
  for (int p = 0; p < 3; ++p) {
    producers.emplace_back([&, p] {
      comm::channel_producer prod(o, p);
      produce(prod, g, 7);
    });
  }
  std::vector<consumed> got(2);
  std::vector<std::thread> readers;
  for (int c = 0; c < 2; ++c) readers.emplace_back([&, c] { got[c] = drain(*consumers[c], g, 3); });
  for (auto& t : producers) t.join();
  for (auto& t : readers) t.join();
  std::set<std::pair<std::uint32_t, std::uint64_t>> all;
  for (auto& r : got) {
    CHECK(r.wrong == 0);
    all.insert(r.seen.begin(), r.seen.end());
    CHECK(r.packages > 0);  // both trainers got experience
  }
  CHECK(all.size() == 3 * 7 * g.packages_per_rollout());
  CHECK(got[0].packages + got[1].packages == all.size());
  consumers.clear();
  CHECK(gmi_test::segments_with(tag) == 0);
}

TEST_CASE("channel.migrate.slow_trainer_gets_less" * doctest::timeout(60)) {
  const gmi_test::geometry g{4, 8, 16, 4, 8};
  const auto tag = comm::unique_tag("slow");
  const auto o = options(tag, 1, 2, g, 1, 2);
  comm::channel_consumer fast(o, 0, 1), slow(o, 1, 1);
  comm::producer_stats stats;
  std::thread producer([&] {
    comm::channel_producer p(o, 0);
    produce(p, g, 300);
    stats = p.stats();
  });
  consumed rf, rs;
  std::thread tf([&] { rf = drain(fast, g, 1); });
  std::thread ts([&] { rs = drain(slow, g, 1, 20ms); });
  producer.join();
  tf.join();
  ts.join();
  CHECK(rf.packages + rs.packages == 300);
  CHECK(rf.wrong + rs.wrong == 0);
  MESSAGE("slots to the fast trainer: " << stats.slots_to[0] << ", to the slow one: " << stats.slots_to[1]);
  CHECK(stats.slots_to[0] > 3 * stats.slots_to[1]);
}

TEST_CASE("channel.backpressure.bounded_queue_then_timeout" * doctest::timeout(30)) {
  const gmi_test::geometry g{4, 4, 64, 1, 4};
  const auto tag = comm::unique_tag("bp");
  auto o = options(tag, 1, 2, g, 2, 4);
  o.timeout = 300ms;
  comm::channel_consumer c0(o, 0, 1), c1(o, 1, 1);  // never read
  comm::channel_producer p(o, 0);
  const auto data = gmi_test::make_rollout(0, 0, g.steps, g.envs, g.record_bytes);
  // 2 links x 4 slots x 2 packages = 16 packages fit; the 17th needs a slot nobody gives back.
  for (int i = 0; i < 4; ++i) p.send(data.data(), g.steps, g.envs);
  CHECK(p.stats().slots == 8);
  CHECK(p.queued_bytes() == std::vector<std::uint64_t>{4 * 2 * g.package_bytes(), 4 * 2 * g.package_bytes()});
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(p.send(data.data(), g.steps, g.envs), doctest::Contains("waiting for a free slot"),
                       gmi::comm_error);
  const auto waited = std::chrono::steady_clock::now() - start;
  CHECK(waited >= 250ms);
  CHECK(waited < 3s);
  CHECK(p.stats().waits == 1);
  // The producer's failure breaks the links: the trainers hear of it instead of waiting.
  CHECK_THROWS_AS(c0.next_batch(100ms), gmi::comm_error);
}

TEST_CASE("channel.processes.producers_and_consumers" * doctest::timeout(90)) {
  const gmi_test::geometry g{32, 64, 48, 8, 16};
  const auto tag = comm::unique_tag("proc");
  const auto o = options(tag, 2, 2, g, 2, 8);
  std::vector<pid_t> kids;
  for (int p = 0; p < 2; ++p) {
    kids.push_back(gmi_test::fork_child([&, p] {
      comm::channel_producer prod(o, p);
      produce(prod, g, 20);
      return 0;
    }));
  }
  // Each consumer is its own process too; it exits 0 when every package it got was right.
  for (int c = 0; c < 2; ++c) {
    kids.push_back(gmi_test::fork_child([&, c] {
      comm::channel_consumer cons(o, c, 4);
      const auto r = drain(cons, g, 4);
      std::printf("[consumer %d] %zu packages, %zu wrong, %zu duplicates\n", c, r.packages, r.wrong, r.duplicates);
      return r.wrong == 0 && r.duplicates == 0 && r.packages > 0 ? 0 : 2;
    }));
  }
  for (pid_t k : kids) CHECK(gmi_test::reap(k, 60s) == 0);
  CHECK(gmi_test::segments_with(tag) == 0);
}

TEST_CASE("channel.faults.producer_killed_mid_transfer" * doctest::timeout(60)) {
  const gmi_test::geometry g{4, 16, 64, 4, 4};
  const auto tag = comm::unique_tag("killp");
  auto o = options(tag, 2, 1, g, 1, 4);
  o.timeout = 20s;
  // Producer 0 streams until killed; producer 1 keeps streaming and must hear of the failure through the channel.
  auto endless = [&](int p) {
    return gmi_test::fork_child([&, p] {
      comm::channel_producer prod(o, p);
      const auto data = gmi_test::make_rollout(static_cast<std::uint32_t>(p), 0, g.steps, g.envs, g.record_bytes);
      try {
        for (;;) prod.send(data.data(), g.steps, g.envs);
      } catch (const gmi::comm_error& e) {
        std::printf("[producer %d] expected: %s\n", p, e.what());
        return 0;
      }
    });
  };
  const pid_t victim = endless(0), survivor = endless(1);
  {
    comm::channel_consumer c(o, 0, 1);
    // Kill the victim mid-transfer, i.e. after its data arrived: a producer killed before it attached is a
    // different fault (the attach timeout), and killing it that early made this test flaky.
    for (int i = 0; i < 50 || c.stats().slots_from[0] == 0; ++i) {
      REQUIRE(i < 100000);
      REQUIRE(c.next_batch());
    }
    ::kill(victim, SIGKILL);
    CHECK(gmi_test::reap(victim) == -SIGKILL);
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(
        for (int i = 0; i < 1000000; ++i) { auto b = c.next_batch(); }, doctest::Contains("died"), gmi::comm_error);
    CHECK(std::chrono::steady_clock::now() - start < 3s);
    CHECK(gmi_test::reap(survivor, 10s) == 0);  // the survivor got a comm_error too, well inside its 20 s timeout
  }
  // Checked once the consumer is gone: it owns its links' names until their producers attach, and a broken
  // channel keeps a name whose attach it never polled (a survivor slow to attach under load), so the survivor
  // meets "link is broken" rather than a missing segment. The consumer's destructor removes it.
  CHECK(gmi_test::segments_with(tag) == 0);
}

TEST_CASE("channel.faults.consumer_killed_mid_transfer" * doctest::timeout(60)) {
  const gmi_test::geometry g{4, 16, 64, 4, 4};
  const auto tag = comm::unique_tag("killc");
  auto o = options(tag, 1, 2, g, 1, 4);
  o.timeout = 20s;
  const pid_t victim = gmi_test::fork_child([&] {
    comm::channel_consumer c(o, 1, 1);
    for (int i = 0; i < 20; ++i) c.next_batch();
    ::pause();  // holds its slots, reads no more
    return 0;
  });
  const pid_t survivor = gmi_test::fork_child([&] {
    comm::channel_consumer c(o, 0, 1);
    try {
      for (;;) c.next_batch();
    } catch (const gmi::comm_error& e) {
      std::printf("[consumer 0] expected: %s\n", e.what());
      return 0;
    }
  });
  comm::channel_producer p(o, 0);
  const auto data = gmi_test::make_rollout(0, 0, g.steps, g.envs, g.record_bytes);
  for (int i = 0; i < 40; ++i) p.send(data.data(), g.steps, g.envs);
  ::kill(victim, SIGKILL);
  CHECK(gmi_test::reap(victim) == -SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(
      for (int i = 0; i < 10000000; ++i) p.send(data.data(), g.steps, g.envs), doctest::Contains("died"),
      gmi::comm_error);
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(gmi_test::reap(survivor, 10s) == 0);
  CHECK(gmi_test::segments_with(tag) == 0);
}

TEST_CASE("channel.faults.record_size_or_shape_tag_mismatch" * doctest::timeout(60)) {
  const gmi_test::geometry g{4, 4, 32, 2, 2};
  for (const char* what : {"record bytes", "shape tag"}) {
    CAPTURE(what);
    const auto tag = comm::unique_tag("mis");
    auto o = options(tag, 1, 1, g, 1);
    o.timeout = 20s;
    const pid_t consumer = gmi_test::fork_child([&] {
      comm::channel_consumer c(o, 0, 1);
      try {
        c.next_batch();
      } catch (const gmi::comm_error& e) {
        std::printf("[consumer] expected: %s\n", e.what());
        return std::string(e.what()).find(what) != std::string::npos ? 0 : 3;
      }
      return 2;
    });
    auto mine = o;
    if (std::string(what) == "record bytes") mine.record_bytes = 48; else mine.shape_tag += 1;
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(comm::channel_producer(mine, 0), doctest::Contains(what), gmi::comm_error);
    CHECK(gmi_test::reap(consumer, 10s) == 0);
    CHECK(std::chrono::steady_clock::now() - start < 3s);
    CHECK(gmi_test::segments_with(tag) == 0);
  }
}

TEST_CASE("channel.faults.forged_descriptor_is_refused" * doctest::timeout(30)) {
  const gmi_test::geometry g{4, 4, 32, 2, 2};
  const auto tag = comm::unique_tag("forge");
  const auto o = options(tag, 1, 1, g, 1);
  comm::channel_consumer c(o, 0, 1);
  comm::detail::link_config lc;
  lc.slots = o.slots;
  lc.shape_tag = o.shape_tag;
  lc.record_bytes = o.record_bytes;
  lc.package_steps = o.package_steps;
  lc.package_envs = o.package_envs;
  auto link = comm::detail::channel_link::open(lc, comm::channel_link_tag(tag, 0, 0), 1s);
  comm::detail::slot_descriptor d{};
  d.generation = 1;
  d.shape_tag = o.shape_tag ^ 1;  // a peer that means other records
  d.record_bytes = o.record_bytes;
  d.package_steps = o.package_steps;
  d.package_envs = o.package_envs;
  d.packages = 1;
  d.bytes = g.package_bytes();
  link->publish(d, nullptr);
  CHECK_THROWS_WITH_AS(c.next_batch(1s), doctest::Contains("descriptor shape tag"), gmi::comm_error);
  CHECK(link->broken());  // the producer side hears of it
  CHECK_THROWS_AS(link->try_reclaim(), gmi::comm_error);
}

TEST_CASE("channel.faults.producer_that_never_attaches_times_out" * doctest::timeout(30)) {
  const gmi_test::geometry g{4, 4, 32, 2, 2};
  const auto tag = comm::unique_tag("absent");
  auto o = options(tag, 1, 1, g, 1);
  o.timeout = 200ms;
  comm::channel_consumer c(o, 0, 1);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(c.next_batch(5s), gmi::comm_error);
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  auto nobody = options(comm::unique_tag("nobody"), 1, 1, g, 1);
  nobody.timeout = 100ms;
  CHECK_THROWS_WITH_AS(comm::channel_producer(nobody, 0), doctest::Contains("absent or not ready"), gmi::comm_error);
}
}

// Shared-memory segments (names, permissions, stale cleanup) and SPSC rings (wrap-around, full/empty,
// timeouts, real producer/consumer processes, a peer killed mid-transfer).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <vector>

#include <gmi/comm/spsc_ring.hpp>

#include "fork_util.hpp"

using namespace std::chrono_literals;
namespace comm = gmi::comm;

namespace {
bool shm_exists(const std::string& name) {
  struct stat st{};
  return ::stat(("/dev/shm/" + name).c_str(), &st) == 0;
}
std::span<const std::byte> bytes_of(const void* p, std::size_t n) { return {static_cast<const std::byte*>(p), n}; }
}  // namespace

TEST_SUITE("cpu") {
TEST_CASE("comm.shm.name_permissions_and_unlink") {
  const auto tag = comm::unique_tag("t");
  std::string name;
  {
    auto seg = comm::shm_segment::create(tag, 1000);
    name = seg.name();
    CHECK(name == "gmi-" + std::to_string(::getuid()) + "-" + tag);
    struct stat st{};
    REQUIRE(::stat(("/dev/shm/" + name).c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    CHECK(seg.size() == 1000);
    CHECK(reinterpret_cast<std::uintptr_t>(seg.data()) % 64 == 0);
    CHECK(seg.owner_pid() == ::getpid());
    auto other = comm::shm_segment::open(tag, 100ms);
    static_cast<char*>(seg.data())[7] = 42;
    CHECK(static_cast<char*>(other.data())[7] == 42);
    CHECK_THROWS_AS(comm::shm_segment::create(tag, 10), gmi::comm_error);  // live owner: refused
  }
  CHECK_FALSE(shm_exists(name));
  CHECK_THROWS_AS(comm::segment_name("bad/tag"), gmi::config_error);
}

TEST_CASE("comm.shm.open_times_out" * doctest::timeout(10)) {
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(comm::shm_segment::open(comm::unique_tag("absent"), 50ms), doctest::Contains("absent"),
                       gmi::comm_error);
  CHECK(std::chrono::steady_clock::now() - start < 2s);
}

TEST_CASE("comm.shm.stale_segments_of_dead_owners_are_removed" * doctest::timeout(20)) {
  const auto tag = comm::unique_tag("stale");
  const pid_t child = gmi_test::fork_child([&] {
    auto seg = comm::shm_segment::create(tag, 64);
    ::_exit(0);  // dies without running the destructor, like a crashed run
    return 0;
  });
  REQUIRE(gmi_test::reap(child) == 0);
  const auto name = comm::segment_name(tag);
  REQUIRE(shm_exists(name));
  auto live = comm::shm_segment::create(comm::unique_tag("live"), 64);  // ours and alive: must stay
  CHECK(comm::cleanup_stale_segments() >= 1);
  CHECK_FALSE(shm_exists(name));
  CHECK(shm_exists(live.name()));
}

TEST_CASE("comm.shm.last_opener_removes_a_dead_owners_segment" * doctest::timeout(20)) {
  // The owner dies while others still use the segment (a GMI killed mid-run): the opener that closes it removes
  // the name; while the owner lives, closing an opened segment leaves it alone (the control).
  const auto tag = comm::unique_tag("orphan");
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = gmi_test::fork_child([&] {
    auto seg = comm::shm_segment::create(tag, 64);
    const char one = 1;
    (void)!::write(ready[1], &one, 1);
    ::pause();  // until killed
    return 0;
  });
  char got = 0;
  REQUIRE(::read(ready[0], &got, 1) == 1);
  const auto name = comm::segment_name(tag);
  { auto opened = comm::shm_segment::open(tag, 1000ms); }
  CHECK(shm_exists(name));  // the owner is alive: the opener leaves it
  auto opened = comm::shm_segment::open(tag, 1000ms);
  ::kill(child, SIGKILL);
  gmi_test::reap(child);
  REQUIRE(shm_exists(name));
  opened = comm::shm_segment();  // the last user lets go
  CHECK_FALSE(shm_exists(name));
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST_CASE("comm.ring.wraps_around_in_process") {
  constexpr std::uint32_t cap = 4, slot = 100;
  std::vector<std::byte> mem(comm::spsc_ring::bytes_needed(cap, slot) + 64);
  void* aligned = reinterpret_cast<void*>((reinterpret_cast<std::uintptr_t>(mem.data()) + 63) / 64 * 64);
  auto ring = comm::spsc_ring::format(aligned, comm::spsc_ring::bytes_needed(cap, slot), cap, slot);
  auto reader = comm::spsc_ring::attach(aligned, comm::spsc_ring::bytes_needed(cap, slot));
  std::vector<std::byte> out(slot);
  for (std::uint32_t i = 0; i < 1000; ++i) {
    const std::uint32_t n = 1 + i % slot;
    std::vector<std::byte> msg(n, std::byte(i & 0xff));
    REQUIRE(ring.try_push(msg));
    if (i % 3 == 0) continue;  // let the ring fill and wrap at varying fill levels
    while (auto got = reader.try_pop(out)) {
      CHECK(*got >= 1);
    }
  }
  CHECK_THROWS_AS(ring.try_push(std::vector<std::byte>(slot + 1)), gmi::comm_error);
  CHECK_THROWS_AS(comm::spsc_ring::format(aligned, 1 << 20, 3, slot), gmi::config_error);
}

TEST_CASE("comm.ring.full_ring_times_out" * doctest::timeout(10)) {
  auto r = comm::shm_ring::create(comm::unique_tag("full"), 2, 8);
  const std::uint64_t v = 7;
  CHECK(r->try_push(bytes_of(&v, 8)));
  CHECK(r->try_push(bytes_of(&v, 8)));
  CHECK_FALSE(r->try_push(bytes_of(&v, 8)));
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(r->push(bytes_of(&v, 8), 30ms), doctest::Contains("timed out"), gmi::comm_error);
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  std::uint64_t out = 0;
  CHECK(r->pop(std::span<std::byte>(reinterpret_cast<std::byte*>(&out), 8), 10ms) == 8u);
  CHECK(out == 7);
  r->mark_broken("test says so");
  CHECK_THROWS_WITH_AS(r->push(bytes_of(&v, 8), 10ms), doctest::Contains("test says so"), gmi::comm_error);
}

TEST_CASE("comm.ring.producer_and_consumer_processes" * doctest::timeout(60)) {
  const auto tag = comm::unique_tag("pc");
  auto ring = comm::shm_ring::create(tag, 64, 4096);
  ring->register_consumer();
  constexpr std::uint64_t messages = 100000;
  const pid_t producer = gmi_test::fork_child([&] {
    auto r = comm::shm_ring::open(tag, 5s);
    r->register_producer();
    std::vector<std::uint64_t> msg(512);
    for (std::uint64_t i = 0; i < messages; ++i) {
      const std::size_t words = 1 + i % 512;
      for (std::size_t w = 0; w < words; ++w) msg[w] = i * 1000003 + w;
      r->push(bytes_of(msg.data(), words * 8), 10s);
    }
    r->close();
    return 0;
  });
  std::vector<std::uint64_t> in(512);
  std::uint64_t received = 0, bad = 0;
  while (auto n = ring->pop(std::span<std::byte>(reinterpret_cast<std::byte*>(in.data()), 4096), 10s)) {
    const std::size_t words = *n / 8;
    if (words != 1 + received % 512) ++bad;
    for (std::size_t w = 0; w < words; ++w) bad += in[w] != received * 1000003 + w;
    ++received;
  }
  CHECK(received == messages);
  CHECK(bad == 0);
  CHECK(gmi_test::reap(producer) == 0);
}

TEST_CASE("comm.ring.producer_killed_mid_transfer" * doctest::timeout(30)) {
  const auto tag = comm::unique_tag("kill");
  auto ring = comm::shm_ring::create(tag, 16, 64);
  ring->register_consumer();
  const pid_t producer = gmi_test::fork_child([&] {
    auto r = comm::shm_ring::open(tag, 5s);
    r->register_producer();
    for (std::uint64_t i = 0;; ++i) r->push(bytes_of(&i, 8), 60s);  // killed while blocked on a full ring
    return 0;
  });
  std::uint64_t v = 0;
  auto buf = std::span<std::byte>(reinterpret_cast<std::byte*>(&v), 8);
  for (int i = 0; i < 100; ++i) REQUIRE(ring->pop(buf, 10s));
  ::kill(producer, SIGKILL);
  CHECK(gmi_test::reap(producer) == -SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  // Drains what the producer left, then the dead producer is an error well inside the 20 s timeout.
  CHECK_THROWS_WITH_AS(while (ring->pop(buf, 20s)) {}, doctest::Contains("died"), gmi::comm_error);
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(ring->broken());
}

TEST_CASE("comm.ring.consumer_killed_producer_errors" * doctest::timeout(30)) {
  const auto tag = comm::unique_tag("killc");
  auto ring = comm::shm_ring::create(tag, 4, 64);
  ring->register_producer();
  const pid_t consumer = gmi_test::fork_child([&] {
    auto r = comm::shm_ring::open(tag, 5s);
    r->register_consumer();
    ::pause();  // never reads
    return 0;
  });
  std::this_thread::sleep_for(300ms);  // let it register
  ::kill(consumer, SIGKILL);
  CHECK(gmi_test::reap(consumer) == -SIGKILL);
  std::uint64_t v = 1;
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(for (int i = 0; i < 10; ++i) ring->push(bytes_of(&v, 8), 20s), doctest::Contains("consumer"),
                       gmi::comm_error);
  CHECK(std::chrono::steady_clock::now() - start < 3s);
}
}

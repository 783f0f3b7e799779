// send/recv/allreduce on one segment, driven directly (two contexts in this process): message boundaries,
// empty messages, sizes larger than a ring, and the dead-peer and bad-argument errors.
#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include <gmi/runtime/context.hpp>
#include <gmi/runtime/launcher.hpp>

namespace {

using namespace std::chrono_literals;
using gmi::runtime::context;
using gmi::runtime::segment;

struct pair_fixture {
  std::shared_ptr<segment> seg;
  gmi::runtime::launch_spec spec = gmi::runtime::launch_spec::uniform(0, 2);
  pair_fixture() {
    const std::string run = gmi::runtime::make_run_id();
    seg = std::make_shared<segment>(segment::create(run, 2, 256));
  }
  gmi::runtime::identity id(int rank) const { return spec.identity_of(rank, "test", seg->name()); }
};

}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("runtime.comm.messages_keep_boundaries" * doctest::timeout(30)) {
    pair_fixture f;
    context a(f.id(0), f.seg);
    std::thread t([&] {
      context b(f.id(1), f.seg);
      for (int k = 0; k < 3; ++k) {
        std::vector<float> m = b.recv_as<float>(0);
        std::vector<float> want(static_cast<std::size_t>(k * 1000));
        std::iota(want.begin(), want.end(), static_cast<float>(k));
        CHECK(m == want);
      }
      b.send(std::vector<int>{42}, 0);
    });
    for (int k = 0; k < 3; ++k) {
      std::vector<float> m(static_cast<std::size_t>(k * 1000));  // 0, 4000 and 8000 bytes through a 256-byte ring
      std::iota(m.begin(), m.end(), static_cast<float>(k));
      a.send(m, 1);
    }
    CHECK(a.recv_as<int>(1) == std::vector<int>{42});
    t.join();
  }

  TEST_CASE("runtime.comm.dead_peer_and_bad_rank" * doctest::timeout(30)) {
    pair_fixture f;
    context a(f.id(0), f.seg);
    a.set_timeout(2000ms);
    f.seg->set_state(1, gmi::runtime::gmi_state::dead);
    CHECK_THROWS_WITH_AS((void)a.recv(1), "recv from GMI 1 in GMI 0 (host, slice 0): the peer is dead",
                         gmi::comm_error);
    CHECK_THROWS_AS(a.send(std::vector<int>{1}, 0), gmi::config_error);  // to itself
    CHECK_THROWS_AS(a.send(std::vector<int>{1}, 2), gmi::config_error);  // no such rank
    CHECK_THROWS_AS((void)a.group(1), gmi::config_error);                 // uniform(0, 2) has one group: 0 only
  }

  TEST_CASE("runtime.comm.timeout" * doctest::timeout(30)) {
    pair_fixture f;
    context a(f.id(0), f.seg);
    context b(f.id(1), f.seg);  // alive, never sends
    a.set_timeout(200ms);
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS((void)a.recv(1), "recv from GMI 1 in GMI 0 (host, slice 0): timed out after 200 ms with no data",
                         gmi::comm_error);
    CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  }
}

// send/recv/allreduce on one segment, driven directly (two contexts in this process): message boundaries,
// empty messages, sizes larger than a ring, allreduce (comm::ip_allreduce) in pieces with every op, and the
// dead-peer and bad-argument errors.
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

  TEST_CASE("runtime.comm.allreduce_in_pieces_with_every_op" * doctest::timeout(30)) {
    pair_fixture f;
    const std::size_t n = 3 * gmi::runtime::group_allreduce_bytes / sizeof(double) + 5;  // four pieces
    std::vector<double> from_b;
    std::thread t([&] {
      context b(f.id(1), f.seg);
      std::vector<double> v(n, 2.0);
      b.allreduce(v, b.all());
      from_b = v;
      std::vector<int> hi{7}, lo{7};
      b.allreduce(hi, b.all(), gmi::runtime::reduce_op::max);
      b.allreduce(lo, b.all(), gmi::runtime::reduce_op::min);
      CHECK(hi[0] == 7);
      CHECK(lo[0] == -3);
    });
    context a(f.id(0), f.seg);
    std::vector<double> v(n);
    std::iota(v.begin(), v.end(), 0.0);
    a.allreduce(v, a.all());
    std::vector<int> hi{-3}, lo{-3};
    a.allreduce(hi, a.all(), gmi::runtime::reduce_op::max);
    a.allreduce(lo, a.all(), gmi::runtime::reduce_op::min);
    t.join();
    CHECK(hi[0] == 7);
    CHECK(lo[0] == -3);
    REQUIRE(from_b.size() == n);
    for (std::size_t i = 0; i < n; i += 997) {
      CHECK(v[i] == static_cast<double>(i) + 2.0);
      CHECK(from_b[i] == v[i]);
    }
    CHECK(v.back() == static_cast<double>(n - 1) + 2.0);
  }

  TEST_CASE("runtime.comm.allreduce_with_a_dead_member" * doctest::timeout(30)) {
    pair_fixture f;
    context a(f.id(0), f.seg);
    a.set_timeout(5000ms);
    f.seg->set_state(1, gmi::runtime::gmi_state::dead);
    std::vector<double> v{1.0};
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH_AS(a.allreduce(v, a.all()), doctest::Contains("GMI 1 is dead"), gmi::comm_error);
    CHECK(std::chrono::steady_clock::now() - t0 < 2s);  // the wait's liveness check, not its timeout
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

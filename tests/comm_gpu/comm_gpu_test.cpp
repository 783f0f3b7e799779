// One GPU: the intra-GPU reduce kernel, the hierarchical allreduce between MPS-style GMI processes (CUDA IPC)
// and between green-context GMI threads (plain pointers), and its faults (sizes that differ, a GMI killed).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "kernels.hpp"
#include "spawn_util.hpp"

#include <gmi/comm/shm_segment.hpp>

using namespace std::chrono_literals;

TEST_SUITE("gpu") {
TEST_CASE("comm_gpu.reduce_kernel.matches_host_sum") {
  for (int m : {1, 2, 3, 8, 16}) {
    for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{4}, std::size_t{5}, std::size_t{1023},
                              std::size_t{(1 << 20) + 1}}) {
      for (std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
        CAPTURE(m);
        CAPTURE(count);
        CAPTURE(offset);
        CHECK(gmi_test::reduce_kernel_error(m, count, offset) < 1e-4 * m);
      }
    }
  }
}

TEST_CASE("comm_gpu.hierarchical.green_context_threads" * doctest::timeout(120)) {
  for (int m : {2, 4}) {
    for (bool every_gmi : {true, false}) {
      bool green = false;
      std::string error;
      CAPTURE(m);
      CAPTURE(every_gmi);
      CHECK(gmi_test::threads_hierarchical(m, (1 << 18) + 3, 3, green, error, true, every_gmi) == 0);
      CHECK_MESSAGE(error.empty(), "errors of the GMI threads: " << error);
      error.clear();
      // copy_back off: every thread reads the sum through result() (the GPU's one result buffer)
      CHECK(gmi_test::threads_hierarchical(m, (1 << 18) + 3, 3, green, error, false, every_gmi) == 0);
      CHECK_MESSAGE(error.empty(), "errors of the GMI threads (shared result): " << error);
    }
    bool green = false;
    std::string error;
    CHECK(gmi_test::threads_hierarchical(m, 5, 2, green, error) == 0);  // fewer floats than GMIs x 64: empty slices
    CHECK_MESSAGE(error.empty(), "errors of the GMI threads (5 floats): " << error);
    // std::string: doctest prints a const char* as a pointer.
    MESSAGE("GMI threads ran in "
            << std::string(green ? "green contexts" : "the primary context (no green contexts here)"));
  }
}

TEST_CASE("comm_gpu.hierarchical.ipc_processes" * doctest::timeout(300)) {
  // every_gmi: each GMI sums a slice; leader: the leader sums every buffer. Host handshake (events and host
  // counters) and kernel handshake (flag kernels in device memory).
  for (const char* handshake : {"host", "kernel"}) {
    for (const char* reduce : {"every_gmi", "leader"}) {
      for (int m : {2, 4, 8}) {
        CAPTURE(handshake);
        CAPTURE(reduce);
        CAPTURE(m);
        const auto r = gmi_test::run_workers(
            gmi_test::hier_args(gmi::comm::unique_tag("ipc"), 1, m, "1,3,4,1000,4097,262147,4194304",
                                {std::string("reduce=") + reduce, "rounds=3", std::string("handshake=") + handshake,
                                 std::string("expect_handshake=") + handshake,
                                 std::string("expect_reduce=") + (reduce == std::string("leader") ? "leader" : "every_gmi")}),
            {}, 240s);
        for (int c : r.codes) CHECK(c == 0);
      }
    }
  }
  // The device handshake runs the leader reducer.
  const auto d = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("ipcd"), 1, 4, "1,4097,4194304",
                          {"handshake=device", "rounds=3", "expect_reduce=leader"}),
      {}, 240s);
  for (int c : d.codes) CHECK(c == 0);
}

// Groups of m worker processes with the kernel handshake, non-blocking, for both reducers and each m, on sizes from
// one float to 262147; `extra`: the worker's further arguments. Every worker must exit 0.
static void kernel_handshake_groups_pass(const char* tag, std::initializer_list<int> ms,
                                         std::initializer_list<const char*> extra) {
  for (const char* reduce : {"leader", "every_gmi"}) {
    for (int m : ms) {
      CAPTURE(reduce);
      CAPTURE(m);
      std::vector<std::string> args{std::string("reduce=") + reduce, "handshake=kernel", "blocking=0"};
      args.insert(args.end(), extra.begin(), extra.end());
      const auto r = gmi_test::run_workers(gmi_test::hier_args(gmi::comm::unique_tag(tag), 1, m, "1,4097,262147", args),
                                           {}, 240s);
      for (int c : r.codes) CHECK(c == 0);
    }
  }
}

TEST_CASE("comm_gpu.hierarchical.replayed_in_a_graph" * doctest::timeout(300)) {
  // The kernel handshake (and one GMI alone) inside a CUDA graph: each replay is a new call, its generation taken
  // from the GMI's device counter; eager calls before and after the replays agree with the counters.
  kernel_handshake_groups_pass("graph", {1, 2, 4, 8}, {"rounds=4", "graph=1"});
  // The host handshake waits on the host: a capture is refused with an error on every GMI (exit 3 = an error).
  const auto host = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("graphh"), 1, 2, "4097",
                          {"handshake=host", "blocking=0", "graph=1", "timeout_ms=5000"}),
      {}, 60s);
  for (int c : host.codes) CHECK(c == 3);
}

TEST_CASE("comm_gpu.hierarchical.row_exchange_in_a_kernel" * doctest::timeout(300)) {
  // The row exchange (comm::row_exchange from hierarchical_allreduce::row_exchange()): every GMI sums the group's
  // rows inside its own kernel, eagerly and from graph replays, alternating with allreduce calls; sizes from one
  // float to 262147; both reducers (their allreduce calls share the buffers with the exchange).
  kernel_handshake_groups_pass("xchg", {2, 4, 8}, {"rounds=3", "exchange=1"});
  // One GMI never calls the exchange: the others' waits give up at the deadline (the first) or at once (the
  // rest, on the group's stall word), and every GMI ends with an error (exit 0 = the expected error), in bounded time.
  const auto skip = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("xskip"), 1, 3, "4097",
                          {"rounds=3", "handshake=kernel", "blocking=0", "exchange=1", "exchange_skip_rank=1",
                           "timeout_ms=3000"}),
      {}, 90s);
  for (int c : skip.codes) CHECK(c == 0);
  CHECK(skip.seconds < 60);
}

TEST_CASE("comm_gpu.hierarchical.reducers_that_differ" * doctest::timeout(120)) {
  // One GMI asks for the leader reducer, the others for every_gmi: every GMI of the GPU fails with an error.
  const auto bad = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("rdbad"), 1, 3, "4097", {"reduce=every_gmi", "reduce_rank=2", "timeout_ms=5000"}),
      {}, 60s);
  for (int c : bad.codes) CHECK(c == 0);
  CHECK(bad.seconds < 40);
}

TEST_CASE("comm_gpu.hierarchical.lanes_need_the_kernel_handshake" * doctest::timeout(120)) {
  // reducer::lanes with the host handshake: every GMI fails at once with a config error (the worker's fault path
  // exits 0 only on an error); with the kernel handshake on one GPU it runs as every_gmi and the sums are right.
  const auto bad = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("lnbad"), 1, 2, "4097", {"reduce=lanes", "handshake=host", "expect_error=1"}),
      {}, 60s);
  for (int c : bad.codes) CHECK(c == 0);
  CHECK(bad.seconds < 40);
  const auto ok = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("lnok"), 1, 4, "1,4097,262147",
                          {"reduce=lanes", "handshake=kernel", "blocking=0", "expect_reduce=lanes"}),
      {}, 120s);
  for (int c : ok.codes) CHECK(c == 0);
}

TEST_CASE("comm_gpu.hierarchical.handshake_choice" * doctest::timeout(120)) {
  // automatic picks the kernel handshake between MPS clients and the host one otherwise (these workers are not
  // MPS clients); the device one works where asked for.
  const auto a = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("pick"), 1, 2, "1000", {"expect_handshake=host", "expect_reduce=leader"}),
      {}, 60s);
  for (int c : a.codes) CHECK(c == 0);
  const auto d = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("pickd"), 1, 2, "1000", {"handshake=device", "expect_handshake=device"}),
      {}, 60s);
  for (int c : d.codes) CHECK(c == 0);
}

TEST_CASE("comm_gpu.hierarchical.non_blocking_results_follow_stream_order" * doctest::timeout(300)) {
  // blocking=0: allreduce returns once enqueued; the check kernel after it on the same stream must see the sum.
  for (const char* handshake : {"automatic", "host"}) {
    CAPTURE(handshake);
    const auto r = gmi_test::run_workers(
        gmi_test::hier_args(gmi::comm::unique_tag("nb"), 1, 4, "4097,4194304",
                            {std::string("handshake=") + handshake, "blocking=0", "rounds=5"}),
        {}, 240s);
    for (int c : r.codes) CHECK(c == 0);
  }
}

TEST_CASE("comm_gpu.hierarchical.shared_result" * doctest::timeout(300)) {
  // copy_back=0: no step (c); every GMI reads the sum in the leader's buffer through result(), blocking or not.
  for (const char* blocking : {"blocking=1", "blocking=0"}) {
    CAPTURE(blocking);
    const auto r = gmi_test::run_workers(
        gmi_test::hier_args(gmi::comm::unique_tag("sr"), 1, 4, "1,4097,4194304", {"copy_back=0", blocking, "rounds=4"}),
        {}, 240s);
    for (int c : r.codes) CHECK(c == 0);
  }
  // One GMI asking for the other mode: every GMI of the GPU fails with an error (exit 0 = the expected error).
  const auto bad = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("srbad"), 1, 3, "4097", {"copy_back=0", "copy_back_rank=2", "timeout_ms=5000"}),
      {}, 60s);
  for (int c : bad.codes) CHECK(c == 0);
}

TEST_CASE("comm_gpu.hierarchical.sizes_that_differ_fail_everywhere" * doctest::timeout(120)) {
  const auto r = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("mis"), 1, 3, "1000", {"mismatch_rank=2", "timeout_ms=10000"}), {}, 60s);
  for (int c : r.codes) CHECK(c == 0);  // 0 = the expected comm_error was seen
  CHECK(r.seconds < 15);
}

TEST_CASE("comm_gpu.hierarchical.gmi_killed_mid_collective" * doctest::timeout(120)) {
  // With the device handshake the survivors' streams already wait on the dead GMI's flag: they must be
  // released (and skip its buffer), not hang or fault.
  for (const char* handshake : {"automatic", "host", "kernel"}) {
    for (int victim : {2, 0}) {  // a member, then the leader
      CAPTURE(handshake);
      CAPTURE(victim);
      const auto r = gmi_test::run_workers(
          gmi_test::hier_args(gmi::comm::unique_tag("die"), 1, 3, "262144",
                              {"die_rank=" + std::to_string(victim), "die_round=1", "rounds=3", "timeout_ms=10000",
                               std::string("handshake=") + handshake}),
          {}, 60s);
      REQUIRE(r.codes.size() == 3);
      for (int i = 0; i < 3; ++i) {
        CAPTURE(i);
        CHECK(r.codes[i] == (i == victim ? -SIGKILL : 0));
      }
      CHECK(r.seconds < 30);
    }
  }
  CHECK(gmi::comm::cleanup_stale_segments() >= 0);  // whatever the dead GMI left is removable
}

// comm::peer_allreduce on one GPU (GMI processes; without MPS they time-slice it, which the waits must survive):
// exact sums for odd and even sizes, copy back and shared result, eager and replayed in a graph.
TEST_CASE("comm_gpu.peer.matches_reference" * doctest::timeout(300)) {
  for (int m : {2, 3}) {
    for (const char* copy_back : {"copy_back=1", "copy_back=0"}) {
      CAPTURE(m);
      CAPTURE(copy_back);
      const auto r = gmi_test::run_workers(
          gmi_test::hier_args(gmi::comm::unique_tag("peer"), 1, m, "1,3,1025,262149",
                              {"impl=peer", "rounds=3", "graph=1", copy_back}),
          {}, 200s);
      for (int c : r.codes) CHECK(c == 0);
    }
  }
}

TEST_CASE("comm_gpu.peer.faults" * doctest::timeout(200)) {
  // One GMI with one float more: every GMI gets an error (exit 0 = the expected error), in bounded time.
  const auto mis = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("peermis"), 1, 3, "1000",
                          {"impl=peer", "mismatch_rank=2", "timeout_ms=10000"}),
      {}, 60s);
  for (int c : mis.codes) CHECK(c == 0);
  CHECK(mis.seconds < 30);
  // A member killed before its second call: the others' kernels give up (the host sees the dead pid), no hang.
  const auto die = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("peerdie"), 1, 3, "262144",
                          {"impl=peer", "die_rank=2", "die_round=1", "rounds=3", "timeout_ms=10000"}),
      {}, 60s);
  REQUIRE(die.codes.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(die.codes[i] == (i == 2 ? -SIGKILL : 0));
  }
  CHECK(die.seconds < 30);
  CHECK(gmi::comm::cleanup_stale_segments() >= 0);
  // Grids that cannot fit on the GPU together (they would wait for each other's SMs until the deadline): refused
  // at setup with one line, on every GMI (the others see the group broken), quickly.
  const auto big = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("peerbig"), 1, 2, "4097",
                          {"impl=peer", "expect_error=1", "timeout_ms=10000", "blocks=60000"}),
      {}, 60s);
  for (int c : big.codes) CHECK(c == 0);
  CHECK(big.seconds < 20);
}
}

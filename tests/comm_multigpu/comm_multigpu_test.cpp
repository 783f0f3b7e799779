// n GPUs x m GMIs (GMI_TEST_GPUS = n): the hierarchical allreduce against the exact reference sum for sizes
// from 4 bytes to 256 MB (odd sizes included), a "two-host" run with NCCL on its socket transport, and faults.
#include <doctest/doctest.h>

#include "spawn_util.hpp"

#include <gmi/comm/shm_segment.hpp>

using namespace std::chrono_literals;

#define GMI_STR2(x) #x
#define GMI_STR(x) GMI_STR2(x)
#define GMI_NAME(rest) "comm_multigpu" GMI_STR(GMI_TEST_GPUS) rest

namespace {
constexpr int gpus = GMI_TEST_GPUS;
// Floats: 4 B, 12 B, 4 KB + 4, odd, 1 MB + 20, 16 MB, 256 MB.
const std::string all_sizes = "1,3,1025,4097,262149,4194304,67108864";
}  // namespace

TEST_SUITE("multigpu") {
TEST_CASE(GMI_NAME(".hierarchical.matches_reference") * doctest::timeout(600)) {
  for (int m : {1, 2, 4}) {
    CAPTURE(gpus);
    CAPTURE(m);
    const auto r = gmi_test::run_workers(gmi_test::hier_args(gmi::comm::unique_tag("mg"), gpus, m, all_sizes), {}, 300s);
    for (int c : r.codes) CHECK(c == 0);
  }
  // The leader reducer (every GMI's buffer summed by the GPU's leader alone), and the kernel handshake with both.
  const auto l = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("mgl"), gpus, 4, all_sizes, {"reduce=leader", "expect_reduce=leader"}), {},
      300s);
  for (int c : l.codes) CHECK(c == 0);
  for (const char* reduce : {"every_gmi", "leader"}) {
    CAPTURE(reduce);
    const auto k = gmi_test::run_workers(
        gmi_test::hier_args(gmi::comm::unique_tag("mgk"), gpus, 4, all_sizes,
                            {"handshake=kernel", "expect_handshake=kernel", std::string("reduce=") + reduce}),
        {}, 300s);
    for (int c : k.codes) CHECK(c == 0);
  }
}

TEST_CASE(GMI_NAME(".hierarchical.lanes") * doctest::timeout(600)) {
  // reducer::lanes: every GMI sums its slice and allreduces it over its own NCCL communicator (GMI r of every GPU),
  // kernel handshake; copy back and shared result, every size (256 MB in four chunks: each GMI's NCCL calls on a
  // stream of their own), m = 2 and 4.
  for (int m : {2, 4}) {
    for (const char* copy_back : {"copy_back=1", "copy_back=0"}) {
      CAPTURE(m);
      CAPTURE(copy_back);
      const auto r = gmi_test::run_workers(
          gmi_test::hier_args(gmi::comm::unique_tag("mgln"), gpus, m, all_sizes,
                              {"handshake=kernel", "reduce=lanes", "expect_reduce=lanes", "blocking=0", copy_back}),
          {}, 300s);
      for (int c : r.codes) CHECK(c == 0);
    }
  }
  // Captured into a CUDA graph and replayed, in 64 KiB chunks (262149 floats: 17 chunks, more than the 8 that
  // every_gmi allows; the lane streams forked from the captured one).
  const auto g = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("mglg"), gpus, 4, "1,4097,262149",
                          {"rounds=4", "handshake=kernel", "blocking=0", "graph=1", "reduce=lanes", "chunk_bytes=65536"}),
      {}, 300s);
  for (int c : g.codes) CHECK(c == 0);
}

TEST_CASE(GMI_NAME(".hierarchical.replayed_in_a_graph") * doctest::timeout(600)) {
  // The leaders' NCCL allreduce captured with the kernel handshake (m > 1) or alone (m = 1), replayed.
  for (int m : {1, 4}) {
    CAPTURE(gpus);
    CAPTURE(m);
    const auto r = gmi_test::run_workers(
        gmi_test::hier_args(gmi::comm::unique_tag("mgg"), gpus, m, "1,4097,262149",
                            {"rounds=4", "handshake=kernel", "blocking=0", "graph=1"}),
        {}, 300s);
    for (int c : r.codes) CHECK(c == 0);
  }
  // The leader reducer in 256 KiB chunks: the leader's sum, NCCL and copy back of different chunks on three
  // streams forked from the captured one and joined back (262149 floats: five chunks, the last one short).
  for (const char* copy_back : {"copy_back=1", "copy_back=0"}) {
    CAPTURE(copy_back);
    const auto r = gmi_test::run_workers(
        gmi_test::hier_args(gmi::comm::unique_tag("mggc"), gpus, 4, "1,4097,262149",
                            {"rounds=4", "handshake=kernel", "blocking=0", "graph=1", "reduce=leader", copy_back,
                             "chunk_bytes=262144"}),
        {}, 300s);
    for (int c : r.codes) CHECK(c == 0);
  }
}

TEST_CASE(GMI_NAME(".hierarchical.shared_result") * doctest::timeout(600)) {
  // copy_back=0: every GMI reads the sum in its GPU leader's buffer (result()); non-blocking calls, chunked sizes.
  for (int m : {2, 4}) {
    CAPTURE(m);
    const auto r = gmi_test::run_workers(
        gmi_test::hier_args(gmi::comm::unique_tag("mgsr"), gpus, m, "1,4097,4194304,67108864",
                            {"copy_back=0", "blocking=0", "rounds=3"}),
        {}, 300s);
    for (int c : r.codes) CHECK(c == 0);
  }
}

TEST_CASE(GMI_NAME(".hierarchical.row_exchange_across_gpus") * doctest::timeout(600)) {
  // Every GMI sums every GPU's rows inside its own kernel: the GPU's rows (kernel handshake's row exchange, or one
  // GMI alone), then the GPUs' sums through the inboxes of comm::row_exchange_across_gpus, in peer device memory
  // (the workers see every GPU) and in pinned host memory; eagerly and from graph replays, alternating with
  // allreduce calls over NCCL; one float to 262149.
  for (const char* inbox : {"peer_to_peer", "host"}) {
    for (int m : {1, 2, 4}) {
      CAPTURE(gpus);
      CAPTURE(inbox);
      CAPTURE(m);
      const auto r = gmi_test::run_workers(
          gmi_test::hier_args(gmi::comm::unique_tag("mgx"), gpus, m, "1,4097,262149",
                              {"rounds=3", "handshake=kernel", "blocking=0", "exchange=1",
                               std::string("inbox=") + (inbox == std::string("host") ? "host" : "automatic"),
                               std::string("expect_inbox=") + inbox, "expect_probed=0"}),
          {}, 300s);
      for (int c : r.codes) CHECK(c == 0);
    }
  }
  // The last GMI never calls the exchange: its GPU's waits give up, then every other GPU's on the shared stall
  // word; every GMI ends with an error (exit 0 = the expected error), in bounded time.
  const int m = 2;
  const auto skip = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("mgxskip"), gpus, m, "4097",
                          {"rounds=3", "handshake=kernel", "blocking=0", "exchange=1",
                           "exchange_skip_rank=" + std::to_string(gpus * m - 1), "timeout_ms=3000"}),
      {}, 90s);
  for (int c : skip.codes) CHECK(c == 0);
  CHECK(skip.seconds < 60);
}

TEST_CASE(GMI_NAME(".hierarchical.row_exchange_across_gpus_each_sees_one") * doctest::timeout(600)) {
  // Every worker sees only its own GPU (CUDA_VISIBLE_DEVICES, as an MPS client): the vote finds no peer access,
  // the probe maps the other GPUs' inboxes through CUDA IPC anyway, and the sums meet in peer device memory; the
  // same sums as everywhere else. Then one GMI's probe fails: automatic falls back to host inboxes (right sums),
  // peer_to_peer asked for fails on every GMI with an error (exit 0 = the expected error).
  const auto narrowed = [](int m) {
    std::vector<std::vector<std::string>> env;
    for (int r = 0; r < gpus * m; ++r) env.push_back({gmi_test::only_gpu(r / m)});
    return env;
  };
  for (int m : {1, 2, 4}) {
    CAPTURE(m);
    const auto r = gmi_test::run_workers(
        gmi_test::hier_args(gmi::comm::unique_tag("mgx1"), gpus, m, "1,4097,262149",
                            {"rounds=3", "handshake=kernel", "blocking=0", "exchange=1", "device=0", "inbox=automatic",
                             "expect_inbox=peer_to_peer", "expect_probed=1"}),
        narrowed(m), 300s);
    for (int c : r.codes) CHECK(c == 0);
  }
  const int m = 2;
  const auto fallback = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("mgx1f"), gpus, m, "1,4097",
                          {"rounds=3", "handshake=kernel", "blocking=0", "exchange=1", "device=0", "inbox=automatic",
                           "fail_probe_rank=" + std::to_string(gpus * m - 1), "expect_inbox=host", "expect_probed=1"}),
      narrowed(m), 300s);
  for (int c : fallback.codes) CHECK(c == 0);
  const auto refused = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("mgx1r"), gpus, m, "4097",
                          {"rounds=3", "handshake=kernel", "blocking=0", "exchange=1", "device=0", "inbox=peer_to_peer",
                           "fail_probe_rank=1", "expect_error=1", "timeout_ms=10000"}),
      narrowed(m), 90s);
  for (int c : refused.codes) CHECK(c == 0);
  CHECK(refused.seconds < 60);
}

TEST_CASE(GMI_NAME(".hierarchical.two_hosts_over_sockets") * doctest::timeout(600)) {
  // Each GPU a "host": NCCL's socket transport over loopback, and distinct host ids so NCCL treats the GPUs
  // as separate nodes. cuda-notes 4: NVIDIA/nccl#2057 may break this combination; the next subcase keeps
  // only the distinct host ids.
  const int m = 2;
  for (bool sockets : {true, false}) {
    CAPTURE(sockets);
    std::vector<std::vector<std::string>> env;
    for (int r = 0; r < gpus * m; ++r) {
      std::vector<std::string> e{"NCCL_HOSTID=gmi-host-" + std::to_string(r / m)};
      if (sockets) {
        for (const char* v : {"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_NET=Socket", "NCCL_SOCKET_IFNAME=lo"})
          e.emplace_back(v);
      }
      env.push_back(e);
    }
    const auto r = gmi_test::run_workers(
        gmi_test::hier_args(gmi::comm::unique_tag(sockets ? "sock" : "hostid"), gpus, m, "1,4097,262149,4194304"), env,
        300s);
    for (int c : r.codes) CHECK(c == 0);
  }
}

TEST_CASE(GMI_NAME(".hierarchical.sizes_that_differ_across_gpus") * doctest::timeout(120)) {
  // The leader of the last GPU has one float more: every GMI of every GPU gets an error.
  const int m = 2;
  const auto r = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("mgmis"), gpus, m, "1000",
                          {"mismatch_rank=" + std::to_string((gpus - 1) * m), "timeout_ms=10000"}),
      {}, 90s);
  for (int c : r.codes) CHECK(c == 0);
  CHECK(r.seconds < 60);
}

TEST_CASE(GMI_NAME(".hierarchical.leader_killed_mid_collective") * doctest::timeout(200)) {
  const int m = 2;
  const int victim = (gpus - 1) * m;  // the last GPU's leader, inside NCCL's collective
  for (const char* handshake : {"host", "kernel"}) {
    CAPTURE(handshake);
    const auto r = gmi_test::run_workers(
        gmi_test::hier_args(gmi::comm::unique_tag("mgdie"), gpus, m, "4194304",
                            {"die_rank=" + std::to_string(victim), "die_round=1", "rounds=3", "timeout_ms=10000",
                             std::string("handshake=") + handshake}),
        {}, 90s);
    for (int i = 0; i < static_cast<int>(r.codes.size()); ++i) {
      CAPTURE(i);
      if (i == victim) CHECK(r.codes[i] == -SIGKILL);
      else CHECK(r.codes[i] == 0);  // every survivor saw an error (NCCL abort or broken group), none hung
    }
    CHECK(r.seconds < 60);
  }
}

// comm::peer_allreduce over n GPUs x m GMIs (one kernel a GMI over peer device memory): the exact sum at every
// size from 4 bytes to 256 MB, copy back and shared result; replayed in a graph; faults.
TEST_CASE(GMI_NAME(".peer.matches_reference") * doctest::timeout(600)) {
  for (int m : {1, 2, 4}) {
    for (const char* copy_back : {"copy_back=1", "copy_back=0"}) {
      CAPTURE(gpus);
      CAPTURE(m);
      CAPTURE(copy_back);
      const auto r = gmi_test::run_workers(
          gmi_test::hier_args(gmi::comm::unique_tag("mgp"), gpus, m, all_sizes, {"impl=peer", copy_back}), {}, 300s);
      for (int c : r.codes) CHECK(c == 0);
    }
  }
  const auto g = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("mgpg"), gpus, 3, "1,4097,262149", {"impl=peer", "rounds=4", "graph=1"}),
      {}, 300s);
  for (int c : g.codes) CHECK(c == 0);
}

// Other settings than the defaults (12 of 16 warps on phase 1, launches as programmatic dependents of the stream's
// work): every warp running both phases in turn (16), half the warps on each phase (8), plain launches; sizes of
// one to 16 chunks, eager and replayed back to back in a graph.
TEST_CASE(GMI_NAME(".peer.settings") * doctest::timeout(600)) {
  for (const char* setting : {"producer_warps=16", "producer_warps=8", "early_launch=0"}) {
    CAPTURE(setting);
    const int m = 2;
    const auto r = gmi_test::run_workers(
        gmi_test::hier_args(gmi::comm::unique_tag("mgpw"), gpus, m, "5,262149,4194304,67108864",
                            {"impl=peer", "copy_back=0", "rounds=3", "graph=1", setting}),
        {}, 300s);
    for (int c : r.codes) CHECK(c == 0);
  }
}

TEST_CASE(GMI_NAME(".peer.faults") * doctest::timeout(300)) {
  const int m = 2;
  const auto mis = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("mgpmis"), gpus, m, "1000",
                          {"impl=peer", "mismatch_rank=" + std::to_string(gpus * m - 1), "timeout_ms=10000"}),
      {}, 90s);
  for (int c : mis.codes) CHECK(c == 0);
  CHECK(mis.seconds < 60);
  const int victim = gpus * m - 1;  // the last GPU's second GMI, in the middle of the rounds
  const auto die = gmi_test::run_workers(
      gmi_test::hier_args(gmi::comm::unique_tag("mgpdie"), gpus, m, "4194304",
                          {"impl=peer", "die_rank=" + std::to_string(victim), "die_round=1", "rounds=3",
                           "timeout_ms=10000"}),
      {}, 90s);
  for (int i = 0; i < static_cast<int>(die.codes.size()); ++i) {
    CAPTURE(i);
    if (i == victim) CHECK(die.codes[i] == -SIGKILL);
    else CHECK(die.codes[i] == 0);
  }
  CHECK(die.seconds < 60);
}
}

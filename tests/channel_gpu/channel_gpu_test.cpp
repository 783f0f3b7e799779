// One GPU: the experience channel with device payload between GMI threads (plain device pointers) and between
// GMI processes (CUDA IPC), the pinned-host path, a producer process killed mid-transfer, and the weights board
// in device memory (threads and IPC). Every package is checked word by word against the reference rollouts.
#include <doctest/doctest.h>
#include <signal.h>
#include <spawn.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "channel_gpu/gpu_channel_roles.hpp"
#include "comm/fork_util.hpp"

extern char** environ;
using namespace std::chrono_literals;
namespace comm = gmi::comm;

namespace {
// Starts gmi.test.channel_worker (fork + exec: CUDA must not be used in a forked child of this process).
pid_t spawn_worker(std::vector<std::string> args) {
  args.insert(args.begin(), GMI_CHANNEL_WORKER);
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, GMI_CHANNEL_WORKER, nullptr, nullptr, argv.data(), environ) != 0) return -1;
  return pid;
}

// A producer thread and a consumer thread of this process on GPU 0.
gmi_test::gpu_consumed threads_run(comm::payload_placement placement, const gmi_test::geometry& g, std::uint32_t per_slot,
                                   std::uint32_t per_batch, int rollouts) {
  GMI_CUDA_TRY(cudaSetDevice(0));
  const auto o = gmi_test::gpu_options(comm::unique_tag("gth"), placement, 1, 1, g, per_slot);
  gmi::cuda::stream s;
  comm::channel_consumer c(o, 0, per_batch, s);
  std::string producer_error;
  std::thread producer([&] {
    try {
      GMI_CUDA_TRY(cudaSetDevice(0));
      gmi_test::run_producer(o, 0, g, rollouts);
    } catch (const std::exception& e) {
      producer_error = e.what();
    }
  });
  gmi_test::gpu_consumed r;
  try {
    r = gmi_test::run_consumer(c, s, g);
  } catch (...) {
    producer.join();
    throw;
  }
  producer.join();
  CHECK_MESSAGE(producer_error.empty(), "producer: " << producer_error);
  return r;
}
}  // namespace

TEST_SUITE("gpu") {
TEST_CASE("channel_gpu.device.threads_share_device_pointers" * doctest::timeout(120)) {
  // Narrow packages (2D copies) and full-width ones (merged 1D copies); zero-copy and gathered batches.
  for (std::uint32_t package_envs : {16u, 64u}) {
    for (auto [per_slot, per_batch] : {std::pair{1u, 1u}, std::pair{2u, 1u}, std::pair{2u, 3u}, std::pair{4u, 4u}}) {
      CAPTURE(package_envs);
      CAPTURE(per_slot);
      CAPTURE(per_batch);
      const gmi_test::geometry g{16, 64, 40, 4, package_envs};
      const auto r = threads_run(comm::payload_placement::device, g, per_slot, per_batch, 6);
      CHECK(r.packages == 6 * g.packages_per_rollout());
      CHECK(r.wrong == 0);
      CHECK(r.duplicates == 0);
      if (per_slot % per_batch == 0) CHECK(r.zero_copy == r.batches);
    }
  }
}

TEST_CASE("channel_gpu.pinned.threads_through_pinned_host_memory" * doctest::timeout(120)) {
  for (auto [per_slot, per_batch] : {std::pair{1u, 1u}, std::pair{2u, 3u}}) {
    CAPTURE(per_slot);
    CAPTURE(per_batch);
    const gmi_test::geometry g{16, 64, 40, 4, 16};
    const auto r = threads_run(comm::payload_placement::pinned, g, per_slot, per_batch, 6);
    CHECK(r.packages == 6 * g.packages_per_rollout());
    CHECK(r.wrong == 0);
    CHECK(r.duplicates == 0);
    CHECK(r.zero_copy == 0);  // pinned payload always lands in the trainer's device memory by a copy
  }
}

TEST_CASE("channel_gpu.device_and_pinned.processes" * doctest::timeout(240)) {
  // 2 producers -> 2 consumers, each a process; CUDA IPC (device) or pinned shared memory (pinned).
  const gmi_test::geometry g{16, 64, 40, 4, 16};
  for (const char* placement : {"device", "pinned"}) {
    CAPTURE(placement);
    const std::string tag = comm::unique_tag("gpr");
    std::vector<pid_t> pids;
    for (int c = 0; c < 2; ++c) {
      pids.push_back(spawn_worker({"role=consumer", "tag=" + tag, std::string("placement=") + placement, "producers=2",
                                   "consumers=2", "rank=" + std::to_string(c)}));
    }
    for (int p = 0; p < 2; ++p) {
      pids.push_back(spawn_worker({"role=producer", "tag=" + tag, std::string("placement=") + placement, "producers=2",
                                   "consumers=2", "rank=" + std::to_string(p), "rollouts=8"}));
    }
    for (pid_t p : pids) {
      REQUIRE(p > 0);
      CHECK(gmi_test::reap(p, 120s) == 0);
    }
    CHECK(gmi_test::segments_with(tag) == 0);
  }
}

TEST_CASE("channel_gpu.device.producer_process_killed" * doctest::timeout(120)) {
  GMI_CUDA_TRY(cudaSetDevice(0));
  const gmi_test::geometry g{16, 64, 40, 4, 16};
  const std::string tag = comm::unique_tag("gkill");
  auto o = gmi_test::gpu_options(tag, comm::payload_placement::device, 1, 1, g, 2);
  o.timeout = 20s;
  gmi::cuda::stream s;
  comm::channel_consumer c(o, 0, 2, s);
  const pid_t producer = spawn_worker({"role=producer", "tag=" + tag, "placement=device", "rollouts=-1"});
  REQUIRE(producer > 0);
  const auto r = gmi_test::run_consumer(c, s, g, 20);
  CHECK(r.wrong == 0);
  // Stop reading so the producer blocks on back-pressure with its copies finished, then kill it.
  std::this_thread::sleep_for(500ms);
  ::kill(producer, SIGKILL);
  CHECK(gmi_test::reap(producer) == -SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(
      for (int i = 0; i < 1000; ++i) { auto b = c.next_batch(); }, doctest::Contains("died"), gmi::comm_error);
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(gmi_test::segments_with(tag) == 0);
}

TEST_CASE("channel_gpu.weights.device_threads_and_ipc_reader" * doctest::timeout(120)) {
  GMI_CUDA_TRY(cudaSetDevice(0));
  const std::string tag = comm::unique_tag("gw");
  comm::weights_options w;
  w.tag = tag;
  w.bytes = std::size_t{1} << 20;
  w.readers = 2;
  w.placement = comm::payload_placement::device;
  w.timeout = 30s;
  comm::weights_writer writer(w);
  const pid_t reader_process = spawn_worker({"role=weights_reader", "tag=" + tag, "placement=device", "versions=50"});
  REQUIRE(reader_process > 0);
  std::size_t bad_in_thread = 0;
  std::string thread_error;
  std::thread reader_thread([&] {
    try {
      GMI_CUDA_TRY(cudaSetDevice(0));
      comm::weights_reader reader(w);
      gmi::cuda::device_buffer<std::uint32_t> dst(w.bytes / 4);
      std::vector<std::uint32_t> host(w.bytes / 4);
      gmi::cuda::stream s;
      std::uint64_t have = 0;
      while (have < 50) {
        have = reader.wait_newer(dst.data(), have, s);
        GMI_CUDA_TRY(cudaMemcpy(host.data(), dst.data(), w.bytes, cudaMemcpyDeviceToHost));
        for (std::size_t i = 0; i < host.size(); ++i) bad_in_thread += host[i] != static_cast<std::uint32_t>(have * 7919 + i);
      }
    } catch (const std::exception& e) {
      thread_error = e.what();
    }
  });
  gmi::cuda::device_buffer<std::uint32_t> src(w.bytes / 4);
  std::vector<std::uint32_t> host(w.bytes / 4);
  gmi::cuda::stream s;
  for (std::uint64_t v = 1; v <= 50; ++v) {
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<std::uint32_t>(v * 7919 + i);
    GMI_CUDA_TRY(cudaMemcpyAsync(src.data(), host.data(), w.bytes, cudaMemcpyHostToDevice, s));
    CHECK(writer.publish(src.data(), s) == v);  // the device-side source, copied on the same stream
    std::this_thread::sleep_for(2ms);
  }
  reader_thread.join();
  CHECK_MESSAGE(thread_error.empty(), "reader thread: " << thread_error);
  CHECK(bad_in_thread == 0);
  CHECK(gmi_test::reap(reader_process, 60s) == 0);
  writer.publish(src.data(), s);  // both readers have attached by now: this publish unlinks the name
  CHECK(gmi_test::segments_with(tag) == 0);
}
}

// Split roles' device transport (pipeline/split_channels.hpp) on a GPU: the same learner as over the messages, and a
// lost actor process named by the learner within the timeout.
#include <doctest/doctest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gmi/comm/shm_segment.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>

#include "sac_gpu/split_transport.hpp"

extern char** environ;

// 1 learner and 3 actors as thread GMIs on one GPU: the transitions and weights through the device channels give the
// learner the same weights, bit for bit, as the messages through the host (the same rounds in the same order, the
// transitions one round behind the weights either way); another seed gives other weights (the check can fail).
TEST_CASE("sac_gpu.split_transport_device_matches_host") {
  const auto host = sac_gpu::split_run_on_gpu(3, 6000, false);
  const auto dev = sac_gpu::split_run_on_gpu(3, 6000, true);
  std::printf("sac_gpu split transport: host %zu env steps, %zu updates, %.2f s; device %zu env steps, %zu updates, "
              "%.2f s; table %zu and %zu\n",
              host.env_steps, host.updates, host.seconds, dev.env_steps, dev.updates, dev.seconds, host.table, dev.table);
  CHECK(host.env_steps >= 6000);
  CHECK(dev.env_steps == host.env_steps);
  CHECK(dev.updates == host.updates);
  CHECK(dev.table == host.table);
  CHECK(dev.episodes == host.episodes);
  CHECK(host.updates > 4000);
  REQUIRE(dev.weights.size() == host.weights.size());
  CHECK(std::memcmp(dev.weights.data(), host.weights.data(), dev.weights.size() * sizeof(float)) == 0);
  CHECK(std::vector<float>(host.weights.begin(), host.weights.begin() + long(host.initial.size())) != host.initial);
  const auto other = sac_gpu::split_run_on_gpu(3, 6000, true, 200);
  CHECK(other.weights != dev.weights);
}

// The actor a process of its own (CUDA IPC into the learner's slots and weights board): 2 rounds and their weights
// arrive whole, then it is SIGKILLed halfway through writing round 2; the learner waiting for round 2 gets one error
// naming actor GMI 1, its round and the dead process within the 10 s timeout plus slack, not a hang.
TEST_CASE("sac_gpu.split_transport_lost_actor") {
  GMI_CUDA_TRY(cudaSetDevice(0));
  const std::string tag = gmi::comm::unique_tag("sac-gpu-split-lost");
  const auto s = sac_gpu::lost_actor_spec(tag);
  cudaStream_t stream = nullptr;
  GMI_CUDA_TRY(cudaStreamCreate(&stream));
  gmi::detail::split_channels_learner learner(s, stream);
  std::vector<std::string> args{GMI_SPLIT_ACTOR_WORKER, tag, "2"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  REQUIRE(posix_spawn(&pid, GMI_SPLIT_ACTOR_WORKER, nullptr, nullptr, argv.data(), environ) == 0);
  const std::size_t n = std::size_t(s.envs) * s.steps * s.row_floats;
  gmi::cuda::device_buffer<float> w(s.weight_floats);
  std::vector<float> rows(n), wh(s.weight_floats);
  std::size_t wrong = 0;
  for (std::uint64_t r = 0; r < 2; ++r) {
    (void)learner.take(1, r);
    GMI_CUDA_TRY(cudaMemcpyAsync(rows.data(), learner.payload(1), n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    GMI_CUDA_TRY(cudaStreamSynchronize(stream));
    for (std::size_t i = 0; i < n; ++i) wrong += rows[i] != sac_gpu::lost_actor_row(r, i);
    for (std::size_t i = 0; i < wh.size(); ++i) wh[i] = sac_gpu::lost_actor_weight(r + 1, i);
    GMI_CUDA_TRY(cudaMemcpy(w.data(), wh.data(), wh.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(learner.publish(w.data()) == r + 1);
    learner.release(1);
  }
  CHECK(wrong == 0);
  int st = 0;  // reaped meanwhile, as a launcher reaps its GMIs (a zombie's pid still answers)
  std::thread reaper([&] {
    for (int i = 0; i < 20000 && ::waitpid(pid, &st, WNOHANG) != pid; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  const auto t0 = std::chrono::steady_clock::now();
  std::string what;
  try {
    (void)learner.take(1, 2);
  } catch (const gmi::error& e) {
    what = e.what();
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  reaper.join();
  std::printf("sac_gpu split transport lost actor: after %.2f s: %s\n", waited, what.c_str());
  CHECK(WIFSIGNALED(st));
  CHECK((WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL));
  CHECK(what.find("split roles (device transport): actor GMI 1 (waiting for its round 2)") != std::string::npos);
  CHECK(what.find("died") != std::string::npos);
  CHECK(waited < 10.0 + 2.0);
}

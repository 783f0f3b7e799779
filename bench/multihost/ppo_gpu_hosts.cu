// Synchronous PPO (Cartpole, one trainer a GPU) over the GPUs of every host of a multi-host job: each launcher
// process is a host (torchrun-style variables, mpirun or srun; none: one host) that runs one trainer thread per
// GPU of its share (runtime::host_gpus). All trainers form one NCCL communicator (global rank = host x GPUs a
// host + k), bootstrapped through a rendezvous directory; gradients and rollout statistics are NCCL allreduces.
// Host 0 appends one result line (env steps/s over the timed iterations, with "hosts") to --out.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/comm/nccl.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/metrics/summary.hpp>
#include <gmi/rl/ppo.cuh>
#include <gmi/runtime/flags.hpp>
#include <gmi/runtime/hosts.hpp>

namespace {
using net = gmi::agents::gaussian_mlp<>::network<4, 1>;
using trainer = gmi::rl::ppo_trainer<gmi::envs::cartpole, net, gmi::exec::cuda>;
}  // namespace

int main(int argc, char** argv) {
  CLI::App app("gmi multi-host synchronous PPO on GPUs", "gmi.bench.multihost_ppo");
  int gpus_per_host = 0, envs = 8192, iterations = 30, warmup = 5;
  std::string rendezvous = "/tmp", out_path, transport = "default", host_id;
  app.add_option("--gpus-per-host", gpus_per_host, "GPUs a host (0: this host's share of the visible GPUs)");
  app.add_option("--envs", envs, "environments a GPU")->check(CLI::Range(1, 1 << 22));
  app.add_option("--iterations", iterations, "timed PPO iterations")->check(CLI::Range(1, 100000));
  app.add_option("--warmup", warmup, "untimed iterations first")->check(CLI::Range(0, 1000));
  app.add_option("--rendezvous", rendezvous, "a directory every host sees, for the NCCL id (fresh for each job)");
  app.add_option("--transport", transport, "what NCCL was told, for the result line (e.g. sockets)");
  app.add_option("--host-id", host_id, "this host's id");
  app.add_option("--out", out_path, "result line file (host 0 appends)");
  if (auto code = gmi::runtime::parse_flags(app, argc, argv)) return *code;
  try {
    gmi::comm::disable_nvls();
    const gmi::runtime::host_info h = gmi::runtime::detect_host(host_id);
    int visible = 0;
    GMI_CUDA_TRY(cudaGetDeviceCount(&visible));
    std::vector<int> gpus = gmi::runtime::host_gpus(visible, h);
    if (gpus_per_host > 0) {
      gmi::require(gpus_per_host <= static_cast<int>(gpus.size()), "--gpus-per-host", gpus_per_host,
                   "at most this host's " + std::to_string(gpus.size()) + " GPUs");
      gpus.resize(static_cast<std::size_t>(gpus_per_host));
    }
    const int per_host = static_cast<int>(gpus.size()), world = h.hosts * per_host;
    gmi::comm::nccl_id id;
    if (h.hosts > 1) {
      gmi::comm::launch_env env{h.host, h.hosts, h.local_index, h.local_count, h.source, h.job};
      id = gmi::comm::bootstrap_id(env, {"", rendezvous});
    } else {
      id = gmi::comm::nccl_id::generate();
    }
    gmi::rl::ppo_config config;
    std::vector<double> seconds;  // GMI 0 of this host: each timed iteration
    std::exception_ptr failed;
    std::mutex m;
    std::vector<std::thread> threads;
    for (int k = 0; k < per_host; ++k) {
      threads.emplace_back([&, k] {
        try {
          GMI_CUDA_TRY(cudaSetDevice(gpus[static_cast<std::size_t>(k)]));
          const int rank = h.host * per_host + k;
          gmi::cuda::stream stream;
          gmi::comm::nccl_communicator comm(world, id, rank);
          gmi::cuda::device_buffer<double> stats(4096);
          gmi::exec::cuda policy;
          policy.stream = stream.get();
          trainer t(envs, 1000 + static_cast<std::uint64_t>(rank), config, {}, policy);
          gmi::rl::ppo_sync s;
          s.rank = rank;
          s.world = world;
          s.sum_device = [&comm](float* d, std::size_t n, CUstream_st* st) { comm.allreduce(d, d, n, st); };
          s.sum_stats = [&](double* d, std::size_t n) {
            gmi::require(n <= stats.size(), "statistics sum", n, "<= 4096 values");
            GMI_CUDA_TRY(cudaMemcpyAsync(stats.data(), d, n * sizeof(double), cudaMemcpyHostToDevice, stream.get()));
            comm.allreduce(stats.data(), stats.data(), n, ncclFloat64, ncclSum, stream.get());
            GMI_CUDA_TRY(cudaMemcpyAsync(d, stats.data(), n * sizeof(double), cudaMemcpyDeviceToHost, stream.get()));
            comm.synchronize(stream.get());
          };
          t.set_sync(std::move(s));
          for (int i = 0; i < warmup + iterations; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            t.iterate();
            comm.synchronize(stream.get());
            const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (k == 0 && i >= warmup) seconds.push_back(dt);
          }
        } catch (...) {
          std::lock_guard lock(m);
          if (!failed) failed = std::current_exception();
        }
      });
    }
    for (auto& t : threads) t.join();
    if (failed) std::rethrow_exception(failed);
    const double steps = static_cast<double>(world) * envs * config.horizon;
    std::vector<double> rates;
    for (double s : seconds) rates.push_back(steps / s);
    const auto run = gmi::metrics::describe_run();
    auto line = gmi::metrics::result_line(run, "multihost", "gmi", "env_steps_per_s", gmi::metrics::summarize(rates));
    line["case"] = "cartpole_ppo_sync";
    line["hosts"] = h.hosts;
    line["gpus_per_host"] = per_host;
    line["gmis_per_gpu"] = 1;
    line["envs_per_gmi"] = envs;
    line["transport"] = transport;
    line["launcher"] = h.source;
    line["host_id"] = h.id;
    std::printf("%s\n", line.dump().c_str());
    if (h.host == 0 && !out_path.empty()) std::ofstream(out_path, std::ios::app) << line.dump() << '\n';
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi.bench.multihost_ppo: %s\n", e.what());
    return 1;
  }
}

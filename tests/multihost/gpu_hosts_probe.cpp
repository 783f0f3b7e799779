// runtime::gpu_hosts without GPUs, as gmi::run's colocated layout uses it across hosts: under mpirun each process
// is a host whose --gpus x --gmis-per-gpu GMIs are threads (thread_group, the spec placed by gpu_hosts::place).
// Every GMI sums a row of doubles over every GMI of every host (--rounds times) and checks the result; the
// launcher gathers a checksum of the sums from every host. Each host prints one JSON line: its place in the job,
// host 0's NCCL id as every host received it (a made-up id: no NCCL call), the sums' checksum and the median time
// of a sum on the host's GMI 0, with GMI 0's phases (gpu_hosts::phases: seconds in the sums, in MPI, waiting) and
// the wall time of its rounds; or its one error line "gmi: host H 'id': ..." (with the wall time it was
// detected, for the killed-host test).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <gmi/core/hash.hpp>
#include <gmi/runtime/flags.hpp>
#include <gmi/runtime/gpu_hosts.hpp>
#include <gmi/runtime/supervisor.hpp>

#include "hosts_program.hpp"

using gmi_test::wall_now;

int main(int argc, char** argv) {
  CLI::App app("runtime::gpu_hosts probe", "gmi.multihost.gpu_hosts_probe");
  int gpus = 1, gmis_per_gpu = 2, rounds = 20, busy_poll_us = 20, timeout_ms = 60000, late_ms = 0, gather_timeout_ms = 0;
  gmi_test::host_flags f;
  f.kill_at = 3;
  f.add_to(app, "this round");
  app.add_option("--gpus", gpus, "GPUs a host (none are used)")->check(CLI::Range(1, 64));
  app.add_option("--gmis-per-gpu", gmis_per_gpu, "GMIs on each")->check(CLI::Range(1, 64));
  app.add_option("--rounds", rounds, "sums every GMI makes")->check(CLI::Range(1, 1000000));
  app.add_option("--busy-poll-us", busy_poll_us, "the link thread's poll while a gather is in flight (0: spin)")->check(CLI::Range(0, 100000));
  app.add_option("--timeout-ms", timeout_ms, "a sum's or gather's bound between the hosts")->check(CLI::Range(100, 600000));
  app.add_option("--late-ms", late_ms, "host 0 reaches the final gather this late (as gmi::run's evaluation makes it)")
      ->check(CLI::Range(0, 600000));
  app.add_option("--gather-timeout-ms", gather_timeout_ms, "the final gather's bound (0: the sums' bound)")
      ->check(CLI::Range(0, 600000));
  if (auto code = gmi::runtime::parse_flags(app, argc, argv)) return *code;
  gmi::runtime::host_info h;
  try {
    h = gmi::runtime::detect_host(f.host_id);
    gmi::runtime::gpu_hosts_options o;
    o.gpus = gpus;
    o.gmis_per_gpu = gmis_per_gpu;
    o.link.heartbeat_timeout = std::chrono::milliseconds(f.heartbeat_ms);
    o.link.busy_poll = std::chrono::microseconds(busy_poll_us);
    o.timeout = std::chrono::milliseconds(timeout_ms);
    o.make_id = [&h] {  // host 0 only: a made-up id that names its maker
      if (h.host != 0) throw std::logic_error("make_id called on host " + std::to_string(h.host));
      gmi::comm::nccl_id id;
      for (std::size_t i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) id.id.internal[i] = static_cast<char>((i * 7 + 3) & 0xff);
      std::snprintf(id.id.internal, 24, "from %s", h.id.c_str());
      return id;
    };
    gmi::runtime::gpu_hosts hosts(h, o);
    gmi::runtime::launch_spec spec = gmi::runtime::launch_spec::uniform(gpus, gmis_per_gpu);
    hosts.place(spec);
    std::vector<std::uint64_t> checks(static_cast<std::size_t>(hosts.gmis()), 0);
    std::vector<double> sum_us;  // GMI 0 of this host: each sum, start to end
    double wall_seconds = 0;     // GMI 0 of this host: its rounds, start to end
    gmi::runtime::sum_phases phases0;
    const int world = hosts.global_world();
    gmi::runtime::thread_group group(spec, [&](gmi::runtime::context& ctx) {
      const int r = ctx.id().global_rank();
      const auto started = std::chrono::steady_clock::now();
      const gmi::runtime::sum_phases before = hosts.phases(ctx.rank());
      for (int round = 0; round < rounds; ++round) {
        if (ctx.rank() == 0) f.maybe_kill(h.host, round);
        // rank r's row: {r + round / 8, 1, r^2}: sums are world(world-1)/2 + world * round / 8, world, sum of r^2
        std::vector<double> row{r + round / 8.0, 1.0, static_cast<double>(r) * r};
        const auto t0 = std::chrono::steady_clock::now();
        hosts.sum(ctx.rank(), row.data(), row.size(), [&ctx] { return ctx.stop_requested(); });
        if (ctx.rank() == 0) {
          sum_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        }
        const double w = world;
        const double want[3] = {w * (w - 1) / 2 + w * round / 8.0, w, (w - 1) * w * (2 * w - 1) / 6};
        for (int k = 0; k < 3; ++k) {
          if (std::fabs(row[static_cast<std::size_t>(k)] - want[k]) > 1e-9 * std::fabs(want[k]) + 1e-12) {
            throw std::runtime_error("sum " + std::to_string(k) + " of round " + std::to_string(round) + ": got " +
                                     std::to_string(row[static_cast<std::size_t>(k)]) + ", need " + std::to_string(want[k]));
          }
        }
        auto& c = checks[static_cast<std::size_t>(ctx.rank())];
        c = c * 1099511628211ull ^ gmi::fnv1a(row.data(), row.size() * sizeof(double));
        ctx.heartbeat();
      }
      if (ctx.rank() == 0) {
        phases0 = hosts.phases(0).since(before);
        wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      }
    });
    const gmi::runtime::run_report report = group.wait();
    if (report.first_failure) {
      std::fprintf(stderr, "gmi: %s: %s (detected at %.3f)\n", hosts.describe().c_str(),
                   report.first_failure->message.c_str(), wall_now());
      if (report.first_failure->rank >= 0) hosts.notify_failure(hosts.describe() + ": " + report.first_failure->message);
      std::fflush(nullptr);
      std::_Exit(1);
    }
    for (const std::uint64_t c : checks) {
      if (c != checks.front()) throw std::runtime_error("this host's GMIs got different bits from one sum");
    }
    if (h.host == 0 && late_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
    const std::vector<std::uint64_t> every =
        gather_timeout_ms > 0 ? hosts.gather(checks.front(), std::chrono::milliseconds(gather_timeout_ms))
                              : hosts.gather(checks.front());
    hosts.finish();
    const nlohmann::json line = {{"host", h.host},
                                 {"hosts", hosts.hosts()},
                                 {"host_id", h.id},
                                 {"first_rank", hosts.first_rank()},
                                 {"global_world", world},
                                 {"global_gpus", hosts.global_gpus()},
                                 {"first_global_gpu", hosts.global_gpu(0)},
                                 {"leaders_id", std::string(hosts.leaders_id().id.internal)},
                                 {"nccl_host", hosts.nccl_host()},
                                 {"sums_check", checks.front()},
                                 {"busy_poll_us", busy_poll_us},
                                 {"phases", {{"sums", phases0.sums},
                                             {"sum_seconds", phases0.sum_seconds},
                                             {"mpi_seconds", phases0.mpi_seconds},
                                             {"wait_seconds", phases0.wait_seconds},
                                             {"wall_seconds", wall_seconds}}},
                                 {"sum_us_median", [&] {
                                    std::sort(sum_us.begin(), sum_us.end());
                                    return sum_us[sum_us.size() / 2];
                                  }()},
                                 {"same_on_every_host", std::all_of(every.begin(), every.end(),
                                                                    [&](std::uint64_t c) { return c == checks.front(); })}};
    std::printf("%s\n", line.dump().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi: host %d '%s': %s\n", h.host, h.id.c_str(), e.what());
    std::fflush(nullptr);
    std::_Exit(1);
  }
}

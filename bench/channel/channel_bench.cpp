// gmi.bench.channel: the experience channel on one GPU, a producer GMI thread and a consumer GMI thread of one
// process (device payload: plain device pointers; pinned: through pinned shared host memory), for package sizes
// 4 KiB .. 64 MiB. Per size: throughput (bytes/s and packages/s, steady state, timed on the consumer between rep
// boundaries) and latency (one package, send -> the consumer's stream has it), beside a plain cudaMemcpyAsync
// device-to-device copy of the same bytes measured in the same run, and the channel/copy ratio.
// Result lines (bench "channel") go to stdout and, with --out, to a file.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <gmi/comm/channel.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/device.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/metrics/summary.hpp>

namespace comm = gmi::comm;
using clock_type = std::chrono::steady_clock;

namespace {
struct options {
  int reps = 5;
  std::string out, run_id;
  std::vector<std::size_t> sizes{std::size_t{4} << 10,  std::size_t{16} << 10, std::size_t{64} << 10,
                                 std::size_t{256} << 10, std::size_t{1} << 20,  std::size_t{4} << 20,
                                 std::size_t{16} << 20,  std::size_t{64} << 20};
  std::vector<std::string> placements{"device", "pinned"};
  std::uint32_t slots = 4;
  double bytes_per_rep = 4.0 * (1u << 30);
  int max_packages = 20000;
};

double seconds(clock_type::duration d) { return std::chrono::duration<double>(d).count(); }

struct measured {
  gmi::metrics::summary throughput_s;  // seconds per rep of n packages
  gmi::metrics::summary latency_s;
};

// n packages of `bytes` per rep, reps + 1 (the first is warm-up); then `pings` single-package round trips.
measured run_channel(comm::payload_placement placement, std::size_t bytes, std::size_t n, int reps, int pings,
                     std::uint32_t slots) {
  comm::channel_options o;
  o.tag = comm::unique_tag("bench");
  o.record_bytes = static_cast<std::uint32_t>(bytes);
  o.shape_tag = 1;
  o.slots = slots;
  o.placement = placement;
  gmi::cuda::stream consumer_stream, producer_stream;
  comm::channel_consumer consumer(o, 0, 1, consumer_stream);
  gmi::cuda::device_buffer<std::byte> rollout(bytes);
  rollout.fill_bytes(1, producer_stream);
  producer_stream.synchronize();
  std::atomic<std::int64_t> send_start_ns{0};
  std::atomic<int> acked{0};
  std::string producer_error;
  std::thread producer([&] {
    try {
      GMI_CUDA_TRY(cudaSetDevice(0));
      comm::channel_producer p(o, 0, producer_stream);
      for (std::size_t i = 0; i < n * static_cast<std::size_t>(reps + 1); ++i) p.send(rollout.data(), 1, 1);
      for (int k = 0; k < pings; ++k) {
        // Wait until the consumer has the previous ping, so each one crosses an idle channel.
        while (acked.load(std::memory_order_acquire) < k) std::this_thread::yield();
        send_start_ns.store(clock_type::now().time_since_epoch().count(), std::memory_order_release);
        p.send(rollout.data(), 1, 1);
      }
      p.close();
    } catch (const std::exception& e) {
      producer_error = e.what();
    }
  });
  std::vector<double> per_rep, latency;
  try {
    auto mark = clock_type::now();
    for (int r = 0; r < reps + 1; ++r) {
      for (std::size_t i = 0; i < n; ++i) {
        auto b = consumer.next_batch();
        if (!b) throw gmi::comm_error("bench: channel ended early");
      }  // each batch goes back as soon as its wait is queued: the consumer only orders, never copies
      consumer_stream.synchronize();
      const auto now = clock_type::now();
      if (r > 0) per_rep.push_back(seconds(now - mark));  // rep 0 is warm-up
      mark = now;
    }
    for (int k = 0; k < pings; ++k) {
      auto b = consumer.next_batch();
      if (!b) throw gmi::comm_error("bench: channel ended early");
      consumer_stream.synchronize();
      const auto done = clock_type::now().time_since_epoch().count();
      latency.push_back(static_cast<double>(done - send_start_ns.load(std::memory_order_acquire)) * 1e-9);
      b->release();
      acked.store(k + 1, std::memory_order_release);
    }
    if (consumer.next_batch()) throw gmi::comm_error("bench: more batches than sent");
  } catch (...) {
    producer.join();
    throw;
  }
  producer.join();
  if (!producer_error.empty()) throw gmi::comm_error("bench producer: " + producer_error);
  return {gmi::metrics::summarize(per_rep), gmi::metrics::summarize(latency)};
}

// The same bytes with plain cudaMemcpyAsync device-to-device, into `slots` destinations in turn, same timing.
measured run_d2d(std::size_t bytes, std::size_t n, int reps, int pings, std::uint32_t slots) {
  gmi::cuda::stream s;
  gmi::cuda::device_buffer<std::byte> src(bytes), dst(bytes * slots);
  src.fill_bytes(1, s);
  s.synchronize();
  std::vector<double> per_rep, latency;
  for (int r = 0; r < reps + 1; ++r) {
    const auto t0 = clock_type::now();
    for (std::size_t i = 0; i < n; ++i) {
      GMI_CUDA_TRY(cudaMemcpyAsync(dst.data() + (i % slots) * bytes, src.data(), bytes, cudaMemcpyDeviceToDevice, s));
    }
    s.synchronize();
    if (r > 0) per_rep.push_back(seconds(clock_type::now() - t0));
  }
  for (int k = 0; k < pings; ++k) {
    const auto t0 = clock_type::now();
    GMI_CUDA_TRY(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, s));
    s.synchronize();
    latency.push_back(seconds(clock_type::now() - t0));
  }
  return {gmi::metrics::summarize(per_rep), gmi::metrics::summarize(latency)};
}

gmi::metrics::summary rate(const gmi::metrics::summary& per_rep, double amount) {
  return {amount / per_rep.median, amount / per_rep.max, amount / per_rep.min, per_rep.reps};
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gmi.bench.channel: experience channel throughput and latency on one GPU vs a D2D copy",
               "gmi.bench.channel"};
  options o;
  std::vector<std::string> sizes_flag;
  app.add_option("--reps", o.reps, "timed repetitions (after one warm-up)")->check(CLI::Range(1, 1000));
  app.add_option("--out", o.out, "append result lines to this file");
  app.add_option("--run-id", o.run_id, "run id for the result lines (shared with runs beside this one)");
  app.add_option("--sizes", o.sizes, "package sizes in bytes")->check(CLI::Range(std::size_t{16}, std::size_t{1} << 31));
  app.add_option("--placements", o.placements, "device, pinned")->check(CLI::IsMember({"device", "pinned"}));
  app.add_option("--slots", o.slots, "slots per link (power of two <= 64)")->check(CLI::IsMember({1, 2, 4, 8, 16, 32, 64}));
  app.add_option("--bytes-per-rep", o.bytes_per_rep, "bytes moved per repetition (package count = this / size)")
      ->check(CLI::Range(1e6, 1e12));
  app.add_option("--max-packages", o.max_packages, "cap on packages per repetition")->check(CLI::Range(16, 10000000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // a bad flag: one line naming it, exit code 2
  }
  try {
    const auto gpus = gmi::cuda::device_count();
    if (!gpus || *gpus < 1) {
      std::fprintf(stderr, "gmi.bench.channel: SKIPPED, no GPU (%s)\n", gpus ? "0 devices" : gpus.error().message().c_str());
      return 77;
    }
    GMI_CUDA_TRY(cudaSetDevice(0));
    comm::cleanup_stale_segments();
    auto run = gmi::metrics::describe_run();
    if (!o.run_id.empty()) run.run_id = o.run_id;
    std::ofstream file;
    if (!o.out.empty()) file.open(o.out, std::ios::app);
    auto emit = [&](const std::string& impl, const std::string& metric, const gmi::metrics::summary& s,
                    const nlohmann::json& extra) {
      auto line = gmi::metrics::result_line(run, "channel", impl, metric, s);
      for (auto& [k, v] : extra.items()) line[k] = v;
      std::cout << line.dump() << std::endl;
      if (file) file << line.dump() << '\n' << std::flush;
    };
    std::fprintf(stderr, "%-9s %10s %8s %12s %12s %7s %12s %12s %12s\n", "placement", "bytes", "packages", "chan GB/s",
                 "d2d GB/s", "ratio", "packages/s", "chan lat us", "d2d lat us");
    for (const auto& placement_name : o.placements) {
      const auto placement = placement_name == "device" ? comm::payload_placement::device : comm::payload_placement::pinned;
      for (const std::size_t bytes : o.sizes) {
        const auto n = static_cast<std::size_t>(
            std::clamp<double>(o.bytes_per_rep / static_cast<double>(bytes), 16.0, static_cast<double>(o.max_packages)));
        const int pings = bytes <= (std::size_t{1} << 20) ? 200 : 30;
        const auto base = run_d2d(bytes, n, o.reps, pings, o.slots);
        const auto chan = run_channel(placement, bytes, n, o.reps, pings, o.slots);
        const double total = static_cast<double>(bytes) * static_cast<double>(n);
        const auto chan_bw = rate(chan.throughput_s, total), base_bw = rate(base.throughput_s, total);
        const double ratio = chan_bw.median / base_bw.median;
        const nlohmann::json cfg = {{"case", "one_gpu_threads"}, {"placement", placement_name},
                                    {"package_bytes", bytes},    {"packages_per_rep", n},
                                    {"slots", o.slots},          {"gpus_used", 1}};
        auto with_ratio = cfg;
        with_ratio["ratio_to_d2d_copy"] = ratio;
        emit("gmi_channel", "bytes_per_s", chan_bw, with_ratio);
        emit("gmi_channel", "packages_per_s", rate(chan.throughput_s, static_cast<double>(n)), cfg);
        emit("gmi_channel", "latency_s", chan.latency_s, cfg);
        emit("cuda_memcpy_d2d", "bytes_per_s", base_bw, cfg);
        emit("cuda_memcpy_d2d", "latency_s", base.latency_s, cfg);
        std::fprintf(stderr, "%-9s %10zu %8zu %12.2f %12.2f %7.3f %12.0f %12.1f %12.1f\n", placement_name.c_str(), bytes,
                     n, chan_bw.median * 1e-9, base_bw.median * 1e-9, ratio, static_cast<double>(n) / chan.throughput_s.median,
                     chan.latency_s.median * 1e6, base.latency_s.median * 1e6);
      }
    }
  } catch (const gmi::config_error& e) {
    std::fprintf(stderr, "gmi.bench.channel: %s\n", e.what());
    return 2;
  } catch (const gmi::error& e) {
    std::fprintf(stderr, "gmi.bench.channel: %s\n", e.what());
    return 1;
  }
  return 0;
}

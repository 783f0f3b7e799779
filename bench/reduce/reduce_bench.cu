// gmi.bench.reduce: (i) intra-GPU reduce over m GMIs' buffers (one kernel) vs the paper's CPU-staged IP path
// (device -> shared host memory, CPU sum, back), m = 2, 4, 8; (ii) hierarchical allreduce of m GMIs per GPU
// x n GPUs (one process per GMI, CUDA IPC + NCCL among leaders) vs one flat NCCL allreduce of the same bytes
// with one rank per GPU. JSON result lines (bench-spec) on stdout; per-stage host timings of the leader of GPU 0
// and of its first member on stderr ("[breakdown] ..." lines, medians in microseconds).
// A rep is `iters` calls back to back after a start barrier (as nccl-tests times them): the hierarchical calls
// non-blocking, the flat ones plain ncclAllReduce, then one wait for the stream; the rep's time / iters is one
// call's time. Both sides are timed the same way, on rank 0.
// (iii) `peer`: comm::peer_allreduce (one kernel a GMI over peer device memory, no NCCL) of m GMIs per GPU x n
// GPUs beside the same flat NCCL allreduce; impls "gmi_peer" (copy back) and "gmi_peer_shared_result"
// (blocks=, chunk_floats=, producer_warps=, early_launch=: the workers' peer_allreduce_options fields of those
// names; copy_back=0|1: only the shared-result or only the copy-back lines where m > 1; trace=1: every GMI prints
// on stderr where its blocks spent one call, bench/reduce/trace_summary.py lines them up).
// Usage: gmi.bench.reduce [intra] [hier] [peer] [gpus=n] [reps=20] [iters=20] [handshake=host|device] [n=g] [m=k]
//        [bytes=b] [chunk=bytes] [overlap=blocks] [reduce=every_gmi|leader|lanes] [share=1] [lane_ctas=k]
// (n, m, bytes: run only that GPU count / GMIs-per-GPU count / size in hier; chunk: the GMIs'
// hierarchical_options::chunk_bytes; overlap: their hierarchical_options::overlap_blocks, the grid of sum kernels
// that may run beside NCCL;
// reduce=every_gmi|leader|lanes: only the variants of that reducer (lanes: handshake=kernel only, every GMI allreduces
// its slice over its own NCCL communicator); share=1: under MPS each GMI gets 1/m of the SMs, as in gmi::run;
// lane_ctas: the lanes' nccl_options::max_ctas, NCCL's blocks a lane, 0: NCCL's default; unset: lane_max_ctas(m))
// Impls: "gmi" (every GMI gets the sum in its own buffer; every GMI sums a slice), "gmi_shared_result" (copy_back
// off: GMIs read the sum in the GPU's result buffer), "gmi_leader_reduce" and "gmi_leader_reduce_shared_result"
// (the same with the leader summing every buffer alone), "gmi_kernel_handshake_lanes[_shared_result]" (reduce=lanes),
// "gmi_device_handshake" (handshake=device); workers are
// this binary re-executed with worker=...
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmi/comm/hierarchical.cuh>
#include <gmi/comm/peer_allreduce.cuh>
#include <gmi/metrics/run_info.hpp>
#include <gmi/metrics/summary.hpp>

extern char** environ;
namespace comm = gmi::comm;
using clock_type = std::chrono::steady_clock;

namespace {
std::map<std::string, std::string> args;
// An integer argument k=value (d when absent); anything but a whole integer is one config_error naming it.
long long arg(const char* k, long long d) {
  if (!args.count(k)) return d;
  const std::string& v = args[k];
  std::size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (v.empty() || used != v.size()) throw gmi::config_error(gmi::got_need(k, v, "an integer"));
  return x;
}

void emit(const gmi::metrics::run_info& run, const std::string& impl, const std::string& metric,
          const gmi::metrics::summary& s, nlohmann::json extra) {
  auto line = gmi::metrics::result_line(run, "reduce", impl, metric, s);
  for (auto& [k, v] : extra.items()) line[k] = v;
  std::cout << line.dump() << std::endl;
}

// (i) One process: m buffers of one GPU. The kernel is the one the hierarchical leader runs on IPC-mapped
// buffers; the IP path is m threads staging through one shared-memory ip_allreduce group.
void bench_intra(const gmi::metrics::run_info& run, int reps) {
  GMI_CUDA_TRY(cudaSetDevice(0));
  for (std::size_t bytes : {std::size_t{1} << 20, std::size_t{16} << 20, std::size_t{64} << 20}) {
    const std::size_t count = bytes / 4;
    for (int m : {2, 4, 8}) {
      std::vector<gmi::cuda::device_buffer<float>> bufs;
      std::vector<const float*> in;
      std::vector<float*> out;
      for (int k = 0; k < m; ++k) {
        bufs.emplace_back(count);
        bufs.back().fill_bytes(0, nullptr);
        in.push_back(bufs.back().data());
        out.push_back(bufs.back().data());
      }
      GMI_CUDA_TRY(cudaDeviceSynchronize());
      gmi::cuda::stream s;
      gmi::cuda::event a(gmi::cuda::event::timing::enabled), b(gmi::cuda::event::timing::enabled);
      std::vector<double> dev;
      for (int r = 0; r < reps + 3; ++r) {
        a.record(s);
        comm::reduce_broadcast(in, out, count, s);  // the one-GPU hierarchical step: sum, every GMI gets it
        b.record(s);
        b.synchronize();
        if (r >= 3) dev.push_back(elapsed_ms(a, b) * 1e-3);
      }
      // CPU-staged: each GMI (a thread with its own stream) copies to its shm slot, the GMIs sum, copy back.
      const std::string tag = comm::unique_tag("benchip");
      auto group0 = comm::ip_allreduce::create(tag, m, bytes);
      std::vector<double> ip;
      std::vector<std::thread> threads;
      for (int k = 0; k < m; ++k) {
        threads.emplace_back([&, k] {
          GMI_CUDA_TRY(cudaSetDevice(0));
          auto g = k == 0 ? std::move(group0) : comm::ip_allreduce::open(tag, k);
          gmi::cuda::stream ts;
          // The staging slots are pageable shm; registering them gives the copies DMA speed (the paper's best case).
          auto slot = g.stage<float>(count);
          GMI_CUDA_TRY(cudaHostRegister(slot.data(), bytes, cudaHostRegisterDefault));
          for (int r = 0; r < reps + 3; ++r) {
            g.finish();
            const auto t0 = clock_type::now();
            GMI_CUDA_TRY(cudaMemcpyAsync(slot.data(), bufs[k].data(), bytes, cudaMemcpyDeviceToHost, ts));
            ts.synchronize();
            auto result = g.reduce<float>(count);
            GMI_CUDA_TRY(cudaMemcpyAsync(bufs[k].data(), result.data(), bytes, cudaMemcpyHostToDevice, ts));
            ts.synchronize();
            g.finish();
            if (k == 0 && r >= 3) ip.push_back(std::chrono::duration<double>(clock_type::now() - t0).count());
          }
          cudaHostUnregister(slot.data());
        });
      }
      for (auto& t : threads) t.join();
      const auto sd = gmi::metrics::summarize(dev), si = gmi::metrics::summarize(ip);
      const nlohmann::json cfg = {{"case", "intra_gpu"}, {"gmis_per_gpu", m}, {"bytes", bytes}, {"gpus_used", 1}};
      emit(run, "gmi", "latency_s", sd, cfg);
      emit(run, "ip_cpu_staged", "latency_s", si, cfg);
      auto cfg2 = cfg;
      cfg2["speedup_vs_ip"] = si.median / sd.median;
      emit(run, "gmi", "bytes_per_s", {bytes / sd.median, bytes / sd.max, bytes / sd.min, sd.reps}, cfg2);
      emit(run, "ip_cpu_staged", "bytes_per_s", {bytes / si.median, bytes / si.max, bytes / si.min, si.reps}, cfg);
    }
  }
}

// One GMI's traced call on stderr, the GPU clock in ns, over its blocks: "[trace] n= m= bytes= gpu= r= start=first,last
// ready=last phases=first,last done=first,last end=last" (bench/reduce/trace_summary.py lines up a GPU's GMIs).
void print_trace(const gmi::cuda::device_buffer<unsigned long long>& stamps, int n, int m, int gpu, int r,
                 std::size_t bytes) {
  constexpr int points = comm::detail::peer_trace_points;
  std::vector<unsigned long long> t(stamps.size());
  GMI_CUDA_TRY(cudaMemcpy(t.data(), stamps.data(), t.size() * sizeof t[0], cudaMemcpyDeviceToHost));
  std::array<unsigned long long, points> lo, hi;
  lo.fill(~0ull);
  hi.fill(0);
  for (std::size_t i = 0; i < t.size(); ++i) {
    lo[i % points] = std::min(lo[i % points], t[i]);
    hi[i % points] = std::max(hi[i % points], t[i]);
  }
  char line[512];  // one write: the GMIs' lines must not interleave
  const int len = std::snprintf(line, sizeof line,
                                "[trace] n=%d m=%d bytes=%zu gpu=%d r=%d start=%llu,%llu ready=%llu phases=%llu,%llu "
                                "done=%llu,%llu end=%llu\n",
                                n, m, bytes, gpu, r, lo[0], hi[0], hi[1], lo[2], hi[2], lo[3], hi[3], hi[4]);
  if (len > 0 && ::write(2, line, static_cast<std::size_t>(std::min<int>(len, sizeof line - 1))) < 0) std::perror("trace");
}

// A worker: one GMI (hier) or one flat NCCL rank (flat). Rank 0 prints its per-rep times on stdout as
// "times t1 t2 ..."; every rep starts after a shm barrier so all ranks start together. The leader of GPU 0
// and its first member print their stage medians on stderr.
int worker(const std::string& kind) {
  const std::string tag = args["tag"];
  const int gpus = static_cast<int>(arg("gpus", 1)), m = static_cast<int>(arg("per_gpu", 1));
  const int rank = static_cast<int>(arg("rank", 0)), reps = static_cast<int>(arg("reps", 20));
  const int iters = static_cast<int>(arg("iters", 20));
  const std::size_t count = static_cast<std::size_t>(arg("bytes", 1 << 20)) / 4;
  const int gpu = rank / m, local = rank % m, world = gpus * m;
  // share=1: each GMI an MPS client with 1/m of the SMs (rounded up), as gmi::run starts MPS GMIs; before any
  // CUDA call. The flat ranks (one per GPU) keep the whole GPU.
  if ((kind == "hier" || kind == "peer") && arg("share", 0) != 0) {
    setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string((100 + m - 1) / m).c_str(), 1);
  }
  GMI_CUDA_TRY(cudaSetDevice(gpu));
  auto barrier = rank == 0 ? comm::ip_allreduce::create(tag + "-b", world, 64) : comm::ip_allreduce::open(tag + "-b", rank);
  std::unique_ptr<comm::nccl_communicator> nc;
  std::optional<comm::nccl_id_exchange> ids;
  const bool lanes = kind == "hier" && args["reduce"] == "lanes";
  if (gpus > 1 && kind != "peer" && (local == 0 || lanes)) {  // the leaders', or with lanes this GMI's lane
    const std::string id_tag = tag + "-id" + (lanes ? "-lane" + std::to_string(local) : "");
    comm::nccl_id id;
    if (gpu == 0) {
      ids = comm::nccl_id_exchange::create(id_tag);
      id = comm::nccl_id::generate();
      ids->publish(id, 1);
    } else {
      ids = comm::nccl_id_exchange::open(id_tag);
      id = ids->receive(1);
    }
    comm::nccl_options no;
    if (lanes) no.max_ctas = args.count("lane_ctas") ? static_cast<int>(arg("lane_ctas", 0)) : comm::lane_max_ctas(m);
    nc = std::make_unique<comm::nccl_communicator>(gpus, id, gpu, no);
  }
  gmi::cuda::device_buffer<float> buf(count);
  buf.fill_bytes(0, nullptr);
  gmi::cuda::stream s;
  std::optional<comm::hierarchical_allreduce> h;
  std::optional<comm::peer_allreduce> peer;
  if (kind == "peer") {
    comm::peer_allreduce_options o;
    o.tag = tag + "-peer";
    o.rank = rank;
    o.gpus = gpus;
    o.world = world;
    o.copy_back = arg("copy_back", 1) != 0;
    o.blocks = static_cast<unsigned>(arg("blocks", 0));
    o.chunk_floats = static_cast<std::size_t>(arg("chunk_floats", 0));
    o.producer_warps = static_cast<unsigned>(arg("producer_warps", 0));
    o.early_launch = arg("early_launch", 1) != 0;
    peer.emplace(o, buf.data(), count);
    if (rank == 0) {
      std::fprintf(stderr, "[peer] %u blocks a GMI, %d chunks, %u producer warps\n", peer->blocks(), peer->chunks(),
                   peer->producer_warps());
    }
  }
  if (kind == "hier") {
    comm::hierarchical_options o;
    o.tag = tag + "-g" + std::to_string(gpu);
    o.local_rank = local;
    o.local_size = m;
    const std::string hs = args.count("handshake") ? args["handshake"] : "automatic";
    o.sync = hs == "host"     ? comm::handshake::host
             : hs == "device" ? comm::handshake::device
             : hs == "kernel" ? comm::handshake::kernel
                              : comm::handshake::automatic;
    o.copy_back = arg("copy_back", 1) != 0;
    o.reduce = args["reduce"] == "leader"      ? comm::reducer::leader
               : args["reduce"] == "every_gmi" ? comm::reducer::every_gmi
               : lanes                         ? comm::reducer::lanes
                                               : comm::reducer::automatic;
    o.chunk_bytes = static_cast<std::size_t>(arg("chunk", 0));
    o.overlap_blocks = static_cast<unsigned>(arg("overlap", 0));
    o.blocking = false;
    h.emplace(o, buf.data(), count, nc.get());
  }
  // trace=1: one call in the middle of the last rep traced on the device (where each GMI's blocks spent it).
  std::optional<gmi::cuda::device_buffer<unsigned long long>> stamps;
  if (peer && arg("trace", 0) != 0) {
    stamps.emplace(std::size_t{peer->blocks()} * comm::detail::peer_trace_points);
    stamps->fill_bytes(0, nullptr);
    peer->trace(stamps->data(), static_cast<std::uint32_t>((reps + 4) * iters + iters / 2));
  }
  std::vector<double> times;
  // Stages, microseconds: waiting at the start barrier, the call (host wait, enqueue, device wait inside it),
  // the stream synchronize after it, waiting at the end barrier for the slowest rank.
  std::vector<double> start_b, call, host_wait, enqueue, device_wait, sync, end_b;
  for (int r = 0; r < reps + 5; ++r) {
    const auto tb = clock_type::now();
    barrier.finish();
    const auto t0 = clock_type::now();
    for (int i = 0; i < iters; ++i) {
      if (peer) {
        peer->allreduce(s);
      } else if (h) {
        h->allreduce(s);
      } else if (nc) {
        nc->allreduce(buf.data(), buf.data(), count, s);
      }
    }
    const auto t1 = clock_type::now();
    if (peer) peer->wait(s); else if (h) h->wait(s); else if (nc) nc->synchronize(s);
    s.synchronize();
    const auto t2 = clock_type::now();
    barrier.finish();  // every rank done before the next rep starts (not timed)
    const auto t3 = clock_type::now();
    if (r >= 5) {
      times.push_back(std::chrono::duration<double>(t2 - t0).count() / iters);
      const auto us = [](auto d) { return std::chrono::duration<double, std::micro>(d).count(); };
      start_b.push_back(us(t0 - tb));
      call.push_back(us(t1 - t0));
      sync.push_back(us(t2 - t1));
      end_b.push_back(us(t3 - t2));
      if (h) {
        host_wait.push_back(h->last_timing().host_wait_us);
        enqueue.push_back(h->last_timing().enqueue_us);
        device_wait.push_back(h->last_timing().device_wait_us);
      }
    }
  }
  if (stamps) print_trace(*stamps, gpus, m, gpu, local, count * 4);
  if (rank == 0) {
    std::printf("times");
    for (double t : times) std::printf(" %.9g", t);
    std::printf("\n");
    std::fflush(stdout);
  }
  if (rank == 0 || (h && rank == 1)) {
    const auto med = [](const std::vector<double>& v) { return v.empty() ? 0.0 : gmi::metrics::summarize(v).median; };
    const std::string who = peer ? "peer GMI 0" : !h ? "flat rank 0" : rank == 0 ? "leader of GPU 0" : "member 1 of GPU 0";
    const char* hs = !h ? "-" : h->sync() == comm::handshake::device ? "device" : "host";
    std::fprintf(stderr,
                 "[breakdown] %s handshake=%s gpus=%d per_gpu=%d bytes=%zu %s, median us: call %.1f (host_wait %.1f "
                 "+ enqueue %.1f + device_wait %.1f) | stream_sync %.1f | end_barrier %.1f | start_barrier %.1f | "
                 "rep %.1f\n",
                 kind.c_str(), hs, gpus, m, count * 4, who.c_str(), med(call), med(host_wait), med(enqueue),
                 med(device_wait), med(sync), med(end_b), med(start_b), med(times) * 1e6);
  }
  barrier.finish();
  return 0;
}

// Runs `world` workers of this binary; returns rank 0's times.
std::vector<double> spawn(const std::string& kind, int gpus, int m, std::size_t bytes, int reps,
                          const std::string& handshake = "host", bool copy_back = true,
                          const std::string& reduce = "automatic") {
  const std::string tag = comm::unique_tag("bench");
  int pipefd[2];
  if (::pipe(pipefd) != 0) throw gmi::comm_error("pipe failed");
  std::vector<pid_t> pids;
  for (int r = 0; r < gpus * m; ++r) {
    std::vector<std::string> a{"/proc/self/exe", "worker=" + kind, "tag=" + tag, "gpus=" + std::to_string(gpus),
                               "per_gpu=" + std::to_string(m), "rank=" + std::to_string(r),
                               "bytes=" + std::to_string(bytes), "reps=" + std::to_string(reps),
                               "handshake=" + handshake, "copy_back=" + std::string(copy_back ? "1" : "0"),
                               "reduce=" + reduce, "share=" + std::to_string(arg("share", 0)),
                               "iters=" + std::to_string(arg("iters", 20)), "trace=" + std::to_string(arg("trace", 0))};
    // The components' tuning, as the user gave it (checked in main): the workers set their options' fields.
    for (const char* k : {"blocks", "chunk_floats", "producer_warps", "early_launch", "chunk", "overlap", "lane_ctas"}) {
      if (args.count(k)) a.push_back(std::string(k) + "=" + args[k]);
    }
    std::vector<char*> argv;
    for (auto& x : a) argv.push_back(x.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (r == 0) posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
    posix_spawn_file_actions_addclose(&fa, pipefd[0]);
    pid_t pid = -1;
    static const std::string self = [] {
      char path[4096];
      const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
      return std::string(path, n > 0 ? n : 0);
    }();
    posix_spawn(&pid, self.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    pids.push_back(pid);
  }
  ::close(pipefd[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  ::close(pipefd[0]);
  bool ok = true;
  for (pid_t p : pids) {
    int st = 0;
    ::waitpid(p, &st, 0);
    ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  std::vector<double> times;
  const auto at = out.find("times");
  if (!ok || at == std::string::npos) throw gmi::comm_error("bench workers failed (" + kind + ")");
  std::istringstream in(out.substr(at + 5));
  for (double t; in >> t;) times.push_back(t);
  return times;
}

// One flat NCCL allreduce of `bytes` with one rank a GPU (n > 1), its lines emitted: what every m x n line is beside.
std::optional<gmi::metrics::summary> flat_beside(const gmi::metrics::run_info& run, int n, std::size_t bytes, int reps) {
  if (n < 2) return std::nullopt;
  const auto flat = gmi::metrics::summarize(spawn("flat", n, 1, bytes, reps));
  const nlohmann::json cfg = {{"case", "allreduce"}, {"gmis_per_gpu", 1}, {"gpus_used", n}, {"bytes", bytes},
                              {"iters_per_rep", arg("iters", 20)}};
  emit(run, "nccl_flat", "latency_s", flat, cfg);
  emit(run, "nccl_flat", "bytes_per_s", {bytes / flat.median, bytes / flat.max, bytes / flat.min, flat.reps}, cfg);
  return flat;
}

void bench_hier(const gmi::metrics::run_info& run, int reps, int max_gpus, const std::string& mode) {
  for (int n = 1; n <= max_gpus; n *= 2) {
    if (args.count("n") && arg("n", 0) != n) continue;
    for (std::size_t bytes : {std::size_t{1} << 20, std::size_t{16} << 20, std::size_t{256} << 20}) {
      if (args.count("bytes") && arg("bytes", 0) != static_cast<long long>(bytes)) continue;
      const std::optional<gmi::metrics::summary> flat = flat_beside(run, n, bytes, reps);
      for (int m : {1, 2, 4, 8}) {
        if (n == 1 && m == 1) continue;
        if (args.count("m") && arg("m", 0) != m) continue;
        struct variant {
          std::string impl, handshake;
          bool copy_back;
          std::string reduce;
        };
        // every_gmi (the default with the host handshake: each GMI sums a slice), beside the leader reducer.
        std::vector<variant> variants;
        if (m == 1) variants.push_back({"gmi", "host", true, "every_gmi"});
        if (m > 1 && (mode == "host" || mode == "kernel")) {
          const std::string hs = mode == "kernel" ? "_kernel_handshake" : "";
          if (!args.count("reduce") || args["reduce"] == "every_gmi") {
            variants.push_back({"gmi" + hs, mode, true, "every_gmi"});
            variants.push_back({"gmi" + hs + "_shared_result", mode, false, "every_gmi"});
          }
          if (!args.count("reduce") || args["reduce"] == "leader") {
            variants.push_back({"gmi" + hs + "_leader_reduce", mode, true, "leader"});
            variants.push_back({"gmi" + hs + "_leader_reduce_shared_result", mode, false, "leader"});
          }
          if (mode == "kernel" && (!args.count("reduce") || args["reduce"] == "lanes")) {
            variants.push_back({"gmi" + hs + "_lanes", mode, true, "lanes"});
            variants.push_back({"gmi" + hs + "_lanes_shared_result", mode, false, "lanes"});
          }
        }
        if (m > 1 && mode == "device") variants.push_back({"gmi_device_handshake", "device", true, "leader"});
        for (const auto& [impl, handshake, copy_back, reduce] : variants) {
          const auto s = gmi::metrics::summarize(spawn("hier", n, m, bytes, reps, handshake, copy_back, reduce));
          nlohmann::json cfg = {{"case", "allreduce"}, {"gmis_per_gpu", m}, {"gpus_used", n}, {"bytes", bytes},
                                {"iters_per_rep", arg("iters", 20)}};
          if (m > 1) cfg["handshake"] = handshake;
          if (m > 1) cfg["copy_back"] = copy_back;
          if (m > 1) cfg["reduce"] = reduce == "leader" || reduce == "lanes" ? reduce : "every_gmi";
          if (m > 1 && reduce == "lanes" && n > 1) {
            cfg["lane_ctas"] = args.count("lane_ctas") ? arg("lane_ctas", 0) : comm::lane_max_ctas(m);
            cfg["lane_ctas_default"] = !args.count("lane_ctas");
          }
          if (m > 1) cfg["mps_share_per_gmi"] = arg("share", 0) != 0 ? (100 + m - 1) / m : 100;
          if (args.count("chunk")) cfg["chunk_bytes"] = arg("chunk", 0);
          if (args.count("overlap")) cfg["overlap_blocks"] = arg("overlap", 0);
          if (flat) cfg["ratio_to_nccl_flat"] = s.median / flat->median;
          emit(run, impl, "latency_s", s, cfg);
          emit(run, impl, "bytes_per_s", {bytes / s.median, bytes / s.max, bytes / s.min, s.reps}, cfg);
        }
      }
    }
  }
}
// The peer allreduce's settings a run may sweep: bench argument (the workers' peer_allreduce_options field of that
// name), allowed range, field of the result lines.
struct peer_knob {
  const char* arg;
  long long lo, hi;
  const char* field;
  const char* what;
};
constexpr peer_knob peer_knobs[] = {
    {"blocks", 0, 65535, "blocks_per_gmi", "a peer GMI's grid, 0: the default"},
    {"chunk_floats", 0, 1ll << 40, "chunk_floats", "a peer chunk's floats, 0: the default"},
    {"producer_warps", 0, 16, "producer_warps",
     "a peer block's warps on phase 1, 0: the default, 16: both phases in turn"},
    {"early_launch", 0, 1, "early_launch", "0: plain peer kernel launches, 1: as programmatic dependents (the default)"},
};

// comm::peer_allreduce beside one flat NCCL allreduce of the same bytes (one rank a GPU), copy back and shared result.
void bench_peer(const gmi::metrics::run_info& run, int reps, int max_gpus) {
  for (int n = 1; n <= max_gpus; n *= 2) {
    if (args.count("n") && arg("n", 0) != n) continue;
    for (std::size_t bytes : {std::size_t{1} << 20, std::size_t{16} << 20, std::size_t{256} << 20}) {
      if (args.count("bytes") && arg("bytes", 0) != static_cast<long long>(bytes)) continue;
      const std::optional<gmi::metrics::summary> flat = flat_beside(run, n, bytes, reps);
      for (int m : {1, 2, 4, 8}) {
        if ((n == 1 && m == 1) || (args.count("m") && arg("m", 0) != m)) continue;
        for (bool copy_back : {true, false}) {
          if (m == 1 && !copy_back) continue;  // one GMI: the result is its buffer either way
          if (m > 1 && args.count("copy_back") && (arg("copy_back", 1) != 0) != copy_back) continue;
          const auto s = gmi::metrics::summarize(spawn("peer", n, m, bytes, reps, "host", copy_back));
          nlohmann::json cfg = {{"case", "allreduce"}, {"gmis_per_gpu", m}, {"gpus_used", n}, {"bytes", bytes},
                                {"iters_per_rep", arg("iters", 20)}, {"reduce", "peer"}, {"copy_back", copy_back},
                                {"mps_share_per_gmi", arg("share", 0) != 0 ? (100 + m - 1) / m : 100}};
          for (const peer_knob& k : peer_knobs) {
            if (args.count(k.arg)) cfg[k.field] = arg(k.arg, 0);
          }
          if (flat) cfg["ratio_to_nccl_flat"] = s.median / flat->median;
          const std::string impl = copy_back ? "gmi_peer" : "gmi_peer_shared_result";
          emit(run, impl, "latency_s", s, cfg);
          emit(run, impl, "bytes_per_s", {bytes / s.median, bytes / s.max, bytes / s.min, s.reps}, cfg);
        }
      }
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  comm::disable_nvls();
  bool intra = false, hier = false, peer = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    if (eq != std::string::npos) args[a.substr(0, eq)] = a.substr(eq + 1);
    intra = intra || a == "intra";
    hier = hier || a == "hier";
    peer = peer || a == "peer";
  }
  try {
    if (args.count("worker")) return worker(args["worker"]);
    if (!intra && !hier && !peer) intra = hier = true;
    // The arguments first: bad ones are refused on any machine, before the GPU is looked for.
    const std::string mode = args.count("handshake") ? args["handshake"] : "host";
    if (mode != "host" && mode != "device" && mode != "kernel") {
      std::fprintf(stderr, "gmi.bench.reduce: handshake=%s; need host, device or kernel\n", mode.c_str());
      return 2;
    }
    if (arg("iters", 20) < 1 || arg("reps", 20) < 1) {
      std::fprintf(stderr, "gmi.bench.reduce: iters=%lld reps=%lld; need >= 1 each\n", arg("iters", 20), arg("reps", 20));
      return 2;
    }
    if (args.count("reduce") && args["reduce"] != "leader" && args["reduce"] != "every_gmi" && args["reduce"] != "lanes") {
      std::fprintf(stderr, "gmi.bench.reduce: reduce=%s; need leader, every_gmi or lanes\n", args["reduce"].c_str());
      return 2;
    }
    if (args.count("reduce") && args["reduce"] == "lanes" && mode != "kernel") {
      std::fprintf(stderr, "gmi.bench.reduce: reduce=lanes with handshake=%s; lanes need handshake=kernel\n", mode.c_str());
      return 2;
    }
    if (args.count("lane_ctas") && arg("lane_ctas", 0) < 0) {
      std::fprintf(stderr, "gmi.bench.reduce: lane_ctas=%lld; need >= 0 blocks a lane (0: NCCL's default)\n",
                   arg("lane_ctas", 0));
      return 2;
    }
    for (const char* k : {"n", "m", "bytes", "gpus", "share", "chunk", "overlap", "lane_ctas", "blocks", "chunk_floats",
                          "producer_warps", "early_launch", "copy_back", "trace"}) {
      arg(k, 0);  // integers
    }
    // The peer allreduce's knobs: checked here, passed to the workers as arguments (spawn).
    for (const peer_knob& k : peer_knobs) {
      if (!args.count(k.arg)) continue;
      if (arg(k.arg, 0) < k.lo || arg(k.arg, 0) > k.hi) {
        std::fprintf(stderr, "gmi.bench.reduce: %s=%lld; need %lld..%lld (%s)\n", k.arg, arg(k.arg, 0), k.lo, k.hi, k.what);
        return 2;
      }
    }
    if (args.count("chunk") && arg("chunk", 0) < 0) {
      std::fprintf(stderr, "gmi.bench.reduce: chunk=%lld; need >= 0 bytes (0: the default chunks)\n", arg("chunk", 0));
      return 2;
    }
    if (args.count("overlap") && arg("overlap", 0) < 0) {
      std::fprintf(stderr, "gmi.bench.reduce: overlap=%lld; need >= 0 blocks (0: uncapped)\n", arg("overlap", 0));
      return 2;
    }
    const auto n = gmi::cuda::device_count();
    if (!n || *n < 1) {
      std::fprintf(stderr, "gmi.bench.reduce: no GPU (%s)\n", n.error().message().c_str());
      return 77;
    }
    comm::cleanup_stale_segments();
    const auto run = gmi::metrics::describe_run();
    const int reps = static_cast<int>(arg("reps", 20));
    if (intra) bench_intra(run, reps);
    const int gpus = static_cast<int>(std::min<long long>(arg("gpus", *n), *n));
    if (hier) bench_hier(run, reps, gpus, mode);
    if (peer) bench_peer(run, reps, gpus);
    return 0;
  } catch (const gmi::config_error& e) {
    std::fprintf(stderr, "gmi.bench.reduce: %s\n", e.what());
    return 2;
  } catch (const gmi::error& e) {
    std::fprintf(stderr, "gmi.bench.reduce: %s\n", e.what());
    return 1;
  }
}

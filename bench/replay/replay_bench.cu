// Replay bench (bench-spec.md): sample and collect 8192 windows of 64 steps (obs 108, act 21, reward, done),
// prioritized draws of 8192 from 10 M items, and insert throughput; gmi's device table against the CPU-staged
// baseline in the same run; and one global prioritized draw of 8192 over 4 device shards of 2.5 M items each
// (device_shard_set::sample_global); with --cases global2, the same draw over 2 GPUs' shards (multi_gpu_shard_set)
// after it. Every timing is wall-clock around the call plus a wait for its stream, repeated
// `reps` times after warm-up; one JSON line per (case, impl, metric) with min/median/max.
#include <gmi/replay/cpu_staged.hpp>
#include <gmi/replay/device_placement.cuh>
#include <gmi/replay/device_table.cuh>
#include <gmi/replay/multi_gpu_shards.cuh>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string g_run_id = "local", g_device = "unknown", g_git = GMI_GIT_REVISION;
std::ofstream g_file;

struct stats {
  double min, median, max;
};

stats time_reps(int reps, const std::function<void()>& body) {
  for (int i = 0; i < 3; ++i) body();
  std::vector<double> s;
  for (int r = 0; r < reps; ++r) {
    const auto a = std::chrono::steady_clock::now();
    body();
    s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(s.begin(), s.end());
  return {s.front(), s[s.size() / 2], s.back()};
}

void emit(const std::string& c, const char* impl, const char* metric, double med, double lo, double hi,
          const std::string& extra = "") {
  char line[1024];
  std::snprintf(line, sizeof line,
                "{\"bench\": \"replay\", \"case\": \"%s\", \"impl\": \"%s\", \"metric\": \"%s\", \"median\": %.6g, "
                "\"min\": %.6g, \"max\": %.6g, \"device\": \"%s\", \"git\": \"%s\", \"run_id\": \"%s\"%s}",
                c.c_str(), impl, metric, med, lo, hi, g_device.c_str(), g_git.c_str(), g_run_id.c_str(), extra.c_str());
  std::puts(line);
  std::fflush(stdout);
  if (g_file) g_file << line << '\n' << std::flush;
}

using gmi::replay::column;
using gmi::replay::sampler;

gmi::replay::table_spec window_spec(std::size_t capacity, std::size_t device_capacity) {
  gmi::replay::table_spec s;
  s.columns = {column{"obs", 108}, column{"act", 21}, column{"reward", 1}, column{"done", 1}};
  s.capacity = capacity;
  s.device_capacity = device_capacity;
  s.done_column = "done";
  return s;
}

// A rollout [horizon, envs] of every column with values from a Philox stream; done about once in 200 steps.
std::vector<std::vector<float>> host_rollout(const gmi::replay::table_spec& s, std::size_t h, std::size_t e,
                                             std::uint64_t seed) {
  std::vector<std::vector<float>> cols;
  gmi::rng r(seed, 0);
  for (const auto& c : s.columns) {
    cols.emplace_back(h * e * c.width);
    for (auto& v : cols.back()) v = r.uniform();
  }
  if (!s.done_column.empty()) {
    auto& d = cols[gmi::replay::column_index(s, s.done_column)];
    for (auto& v : d) v = v < 0.005f ? 1.0f : 0.0f;
  }
  return cols;
}

struct device_rollout {
  std::vector<gmi::cuda::device_buffer<float>> cols;
  gmi::cuda::device_buffer<float> prio;
  gmi::replay::rollout r;
  device_rollout(const std::vector<std::vector<float>>& host, std::size_t h, std::size_t e, const std::vector<float>& p) {
    for (const auto& c : host) {
      cols.emplace_back(c.size());
      GMI_CUDA_TRY(cudaMemcpy(cols.back().data(), c.data(), c.size() * 4, cudaMemcpyHostToDevice));
      r.columns.push_back(cols.back().data());
    }
    if (!p.empty()) {
      prio = gmi::cuda::device_buffer<float>(p.size());
      GMI_CUDA_TRY(cudaMemcpy(prio.data(), p.data(), p.size() * 4, cudaMemcpyHostToDevice));
      r.priorities = prio.data();
    }
    r.horizon = h;
    r.envs = e;
  }
};

gmi::replay::rollout host_view(const std::vector<std::vector<float>>& host, std::size_t h, std::size_t e,
                               const std::vector<float>& p) {
  gmi::replay::rollout r;
  for (const auto& c : host) r.columns.push_back(c.data());
  r.horizon = h;
  r.envs = e;
  if (!p.empty()) r.priorities = p.data();
  return r;
}

void bench_windows(std::size_t capacity, std::size_t device_capacity, const std::string& name, unsigned threads,
                   int reps, bool with_cpu) {
  const std::size_t H = 64, E = 4096, B = 8192, L = 64;
  const auto spec = window_spec(capacity, device_capacity);
  const auto host = host_rollout(spec, H, E, 1);
  gmi::replay::device_table dt(spec);
  auto w = dt.make_writer(E);
  device_rollout dr(host, H, E, {});
  for (std::size_t i = 0; i < capacity / (H * E) + 1; ++i) dt.insert(w, dr.r);
  GMI_CUDA_TRY(cudaStreamSynchronize(dt.stream()));
  gmi::replay::device_batch batch;
  std::uint64_t seed = 0;
  const auto g = time_reps(reps, [&] {
    dt.sample(sampler::uniform(), B, L, ++seed, batch);
    GMI_CUDA_TRY(cudaStreamSynchronize(dt.stream()));
  });
  const double bytes = static_cast<double>(B * L * (108 + 21 + 2 + 1) * 4);
  const std::string extra = ", \"batch\": " + std::to_string(B) + ", \"length\": " + std::to_string(L) +
                            ", \"capacity\": " + std::to_string(capacity) + ", \"device_capacity\": " +
                            std::to_string(std::min(capacity, device_capacity));
  emit(name, "gmi", "seconds", g.median, g.min, g.max, extra);
  emit(name, "gmi", "bytes_per_s", bytes / g.median, bytes / g.max, bytes / g.min, extra);
  // Insert throughput of the same rollout shape (device arrays in, FIFO eviction once full).
  const auto ins = time_reps(reps, [&] {
    dt.insert(w, dr.r);
    GMI_CUDA_TRY(cudaStreamSynchronize(dt.stream()));
  });
  const double items = static_cast<double>(H * E);
  emit("insert_" + name, "gmi", "items_per_s", items / ins.median, items / ins.max, items / ins.min, extra);
  if (!with_cpu) return;
  gmi::replay::cpu_staged cs(spec, threads);
  auto hw = cs.table().make_writer(E);
  for (std::size_t i = 0; i < capacity / (H * E) + 1; ++i) cs.table().insert(hw, host_view(host, H, E, {}));
  gmi::cuda::stream s;
  const auto c = time_reps(reps, [&] { cs.sample(sampler::uniform(), B, L, ++seed, s); });
  const std::string cextra = extra + ", \"cpu_threads\": " + std::to_string(threads);
  emit(name, "cpu_staged", "seconds", c.median, c.min, c.max, cextra);
  emit(name, "cpu_staged", "bytes_per_s", bytes / c.median, bytes / c.max, bytes / c.min, cextra);
  // The baseline's insert brings the GMI's rollout to the host first (device -> host), then inserts it.
  std::vector<std::vector<float>> staged(host.size());
  for (std::size_t k = 0; k < host.size(); ++k) staged[k].resize(host[k].size());
  const auto ci = time_reps(reps, [&] {
    for (std::size_t k = 0; k < host.size(); ++k)
      GMI_CUDA_TRY(cudaMemcpy(staged[k].data(), dr.cols[k].data(), staged[k].size() * 4, cudaMemcpyDeviceToHost));
    cs.table().insert(hw, host_view(staged, H, E, {}));
  });
  emit("insert_" + name, "cpu_staged", "items_per_s", items / ci.median, items / ci.max, items / ci.min, cextra);
}

void bench_prioritized(std::size_t capacity, unsigned threads, int reps) {
  const std::size_t H = 1000, E = 1000, B = 8192;
  gmi::replay::table_spec spec;
  spec.columns = {column{"reward", 1}};
  spec.capacity = capacity;
  std::vector<float> p(H * E);
  gmi::rng r(7, 0);
  for (auto& v : p) v = r.uniform(0.01f, 10.0f);
  const std::vector<std::vector<float>> host = {std::vector<float>(H * E, 1.0f)};
  gmi::replay::device_table dt(spec);
  auto w = dt.make_writer(E);
  device_rollout dr(host, H, E, p);
  for (std::size_t i = 0; i < capacity / (H * E); ++i) dt.insert(w, dr.r);
  GMI_CUDA_TRY(cudaStreamSynchronize(dt.stream()));
  const std::string extra = ", \"batch\": " + std::to_string(B) + ", \"items\": " + std::to_string(dt.size());
  // The draw alone: the kernel that descends the device sum-tree, timed with CUDA events.
  gmi::cuda::device_buffer<std::int32_t> keys(B);
  gmi::cuda::device_buffer<double> prob(B);
  cudaEvent_t a, b;
  GMI_CUDA_TRY(cudaEventCreate(&a));
  GMI_CUDA_TRY(cudaEventCreate(&b));
  std::vector<double> us;
  for (int i = 0; i < reps + 3; ++i) {
    GMI_CUDA_TRY(cudaEventRecord(a, dt.stream()));
    gmi::replay::detail::draw_kernel<<<gmi::replay::detail::blocks_for(B), 256, 0, dt.stream()>>>(
        dt.ref(), true, 100 + i, nullptr, static_cast<std::int64_t>(B), keys.data(), prob.data());
    GMI_CUDA_TRY(cudaEventRecord(b, dt.stream()));
    GMI_CUDA_TRY(cudaEventSynchronize(b));
    float ms = 0;
    GMI_CUDA_TRY(cudaEventElapsedTime(&ms, a, b));
    if (i >= 3) us.push_back(ms * 1e3);
  }
  std::sort(us.begin(), us.end());
  emit("prioritized_draw_10M", "gmi", "us_kernel", us[us.size() / 2], us.front(), us.back(), extra);
  // The whole sample call (draw + gather of one step, host bookkeeping, stream wait).
  gmi::replay::device_batch batch;
  std::uint64_t seed = 0;
  const auto g = time_reps(reps, [&] {
    dt.sample(sampler::prioritized(), B, 1, ++seed, batch);
    GMI_CUDA_TRY(cudaStreamSynchronize(dt.stream()));
  });
  emit("prioritized_draw_10M", "gmi", "us_call", g.median * 1e6, g.min * 1e6, g.max * 1e6, extra);
  // Batched priority updates of the drawn keys.
  gmi::cuda::device_buffer<float> newp(B);
  GMI_CUDA_TRY(cudaMemcpy(newp.data(), p.data(), B * 4, cudaMemcpyHostToDevice));
  const auto u = time_reps(reps, [&] {
    dt.update_priorities(batch.keys.data(), newp.data(), B);
    GMI_CUDA_TRY(cudaStreamSynchronize(dt.stream()));
  });
  emit("priority_update_10M", "gmi", "us_call", u.median * 1e6, u.min * 1e6, u.max * 1e6, extra);
  gmi::replay::cpu_staged cs(spec, threads);
  auto hw = cs.table().make_writer(E);
  for (std::size_t i = 0; i < capacity / (H * E); ++i) cs.table().insert(hw, host_view(host, H, E, p));
  gmi::cuda::stream s;
  const auto c = time_reps(reps, [&] { cs.sample(sampler::prioritized(), B, 1, ++seed, s); });
  emit("prioritized_draw_10M", "cpu_staged", "us_call", c.median * 1e6, c.min * 1e6, c.max * 1e6,
       extra + ", \"cpu_threads\": " + std::to_string(threads));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}

// `shards` device tables of `per` items each on the current GPU, priorities uniform in [0.01, 10) times (first + the
// table's number + 1, so the totals differ).
std::vector<std::unique_ptr<gmi::replay::device_table>> make_shards(std::size_t per, int shards, int first) {
  const std::size_t H = 500, E = 1000;
  gmi::replay::table_spec spec;
  spec.columns = {column{"reward", 1}};
  spec.capacity = per;
  const std::vector<std::vector<float>> host = {std::vector<float>(H * E, 1.0f)};
  std::vector<std::unique_ptr<gmi::replay::device_table>> tables;
  for (int k = first; k < first + shards; ++k) {
    std::vector<float> p(H * E);
    gmi::rng r(11, std::uint64_t(k));
    for (auto& v : p) v = r.uniform(0.01f, 10.0f) * float(k + 1);
    tables.push_back(std::make_unique<gmi::replay::device_table>(spec));
    auto w = tables.back()->make_writer(E);
    device_rollout dr(host, H, E, p);
    for (std::size_t i = 0; i < per / (H * E); ++i) tables.back()->insert(w, dr.r);
    GMI_CUDA_TRY(cudaStreamSynchronize(tables.back()->stream()));
  }
  return tables;
}

// 8192 draws over `shards` device tables that hold `capacity` items in all (priorities uniform in [0.01, 10) times
// the shard's number + 1, so the totals differ), windows of one step, weights with beta 0.4: the whole call with its
// stream wait, and the kernels alone between CUDA events.
void bench_global(std::size_t capacity, int shards, int reps) {
  const std::size_t B = 8192;
  auto tables = make_shards(capacity / std::size_t(shards), shards, 0);
  std::vector<gmi::replay::device_table*> ptrs;
  for (auto& t : tables) ptrs.push_back(t.get());
  std::size_t items = 0;
  for (auto* t : ptrs) items += t->size();
  gmi::replay::device_shard_set set(ptrs, gmi::replay::placement_rule{});
  gmi::replay::global_device_batch out;
  const std::string extra = ", \"batch\": " + std::to_string(B) + ", \"items\": " + std::to_string(items) +
                            ", \"shards\": " + std::to_string(shards);
  std::uint64_t seed = 0;
  const auto g = time_reps(reps, [&] {
    set.sample_global(sampler::prioritized(), B, 1, ++seed, 0.4, out);
    GMI_CUDA_TRY(cudaStreamSynchronize(set.stream()));
  });
  emit("global_prioritized_draw_10M", "gmi", "us_call", g.median * 1e6, g.min * 1e6, g.max * 1e6, extra);
  gmi::cuda::event a(gmi::cuda::event::timing::enabled), b(gmi::cuda::event::timing::enabled);
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    a.record(set.stream());
    set.sample_global(sampler::prioritized(), B, 1, ++seed, 0.4, out);
    b.record(set.stream());
    b.synchronize();
    float ms = 0;
    GMI_CUDA_TRY(cudaEventElapsedTime(&ms, a.get(), b.get()));
    us.push_back(ms * 1e3);
  }
  std::sort(us.begin(), us.end());
  emit("global_prioritized_draw_10M", "gmi", "us_kernels", us[us.size() / 2], us.front(), us.back(), extra);
}

// The same draw over the shards of 2 GPUs (multi_gpu_shard_set): `capacity` items in all, shards_per_gpu tables on
// each (the same priorities as bench_global's shards of the same number), 8192 draws, windows of one step, beta 0.4;
// the whole call (the totals' gather, the plan, each GPU's draw, the weights) and a wait for both GPUs' streams.
void bench_global_2gpu(std::size_t capacity, int shards_per_gpu, int reps) {
  const std::size_t B = 8192;
  std::vector<std::unique_ptr<gmi::replay::device_table>> tables;
  std::vector<gmi::replay::gpu_shards> gpus;
  for (int g = 0; g < 2; ++g) {
    GMI_CUDA_TRY(cudaSetDevice(g));
    auto part = make_shards(capacity / std::size_t(2 * shards_per_gpu), shards_per_gpu, g * shards_per_gpu);
    gpus.push_back({g, {}});
    for (auto& t : part) {
      gpus.back().tables.push_back(t.get());
      tables.push_back(std::move(t));
    }
  }
  GMI_CUDA_TRY(cudaSetDevice(0));
  std::size_t items = 0;
  for (auto& t : tables) items += t->size();
  gmi::replay::multi_gpu_shard_set set(gpus);
  std::vector<gmi::replay::global_device_batch> out;
  int peer = 0;
  GMI_CUDA_TRY(cudaDeviceCanAccessPeer(&peer, 0, 1));
  const std::string extra = ", \"batch\": " + std::to_string(B) + ", \"items\": " + std::to_string(items) +
                            ", \"shards\": " + std::to_string(2 * shards_per_gpu) +
                            ", \"gpus\": 2, \"peer_access\": " + (peer ? "true" : "false");
  std::uint64_t seed = 0;
  std::vector<double> share0;
  const auto g = time_reps(reps, [&] {
    const auto plan = set.sample(sampler::prioritized(), B, 1, ++seed, 0.4, out);
    share0.push_back(double(plan.shares[0]) / double(B));
    for (std::size_t k = 0; k < 2; ++k) {
      GMI_CUDA_TRY(cudaSetDevice(set.device(k)));
      GMI_CUDA_TRY(cudaStreamSynchronize(set.set(k).stream()));
    }
    GMI_CUDA_TRY(cudaSetDevice(0));
  });
  std::sort(share0.begin(), share0.end());
  emit("global_prioritized_draw_10M_2gpu", "gmi", "us_call", g.median * 1e6, g.min * 1e6, g.max * 1e6, extra);
  emit("global_prioritized_draw_10M_2gpu", "gmi", "gpu0_share", share0[share0.size() / 2], share0.front(),
       share0.back(), extra);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t window_capacity = std::size_t{1} << 20, prio_capacity = 10'000'000;
  int reps = 20;
  std::string cases = "all";
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--run-id") g_run_id = v;
    else if (k == "--device") g_device = v;
    else if (k == "--git") g_git = v;
    else if (k == "--out") g_file.open(v, std::ios::app);
    else if (k == "--reps") reps = std::stoi(v);
    else if (k == "--window-capacity") window_capacity = std::stoull(v);
    else if (k == "--prio-capacity") prio_capacity = std::stoull(v);
    else if (k == "--cpu-threads") threads = static_cast<unsigned>(std::stoul(v));
    else if (k == "--cases") cases = v;
    else {
      std::fprintf(stderr, "gmi.bench.replay: unknown flag %s: got it, need one of --run-id --device --git --out "
                           "--reps --window-capacity --prio-capacity --cpu-threads --cases\n", k.c_str());
      return 2;
    }
  }
  if (cases != "all" && cases != "global" && cases != "global2") {
    std::fprintf(stderr, "gmi.bench.replay: --cases: got %s, need all, global or global2\n", cases.c_str());
    return 2;
  }
  int gpus = 0;
  if (cases == "global2" && (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 2)) {
    std::fprintf(stderr, "gmi.bench.replay: --cases global2: got %d GPUs, need 2 or more\n", gpus);
    return 2;
  }
  try {
    if (cases == "all") {
      bench_windows(window_capacity, window_capacity, "sample_collect_8192x64", threads, reps, true);
      bench_windows(window_capacity, window_capacity / 2, "sample_collect_8192x64_half_pinned", threads, reps, false);
      bench_prioritized(prio_capacity, threads, reps);
    }
    bench_global(prio_capacity, 4, reps);
    if (cases == "global2") bench_global_2gpu(prio_capacity, 2, reps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gmi.bench.replay: %s\n", e.what());
    return 1;
  }
  return 0;
}

// gmi.bench.env: environment steps per second of every task (random actions drawn on the device each step),
// at the paper's env count and 4x and 16x that, on one GPU. Writes bench-spec result lines (bench "env",
// metric steps_per_s, median/min/max of the reps) to --out and stdout.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/event.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/registry.hpp>
#include <gmi/rl/env_batch.cuh>

namespace {
template <class T>
struct random_actions {
  float* act;
  std::uint64_t seed;
  std::uint64_t step;
  __device__ void operator()(std::size_t i) const {
    gmi::rng r(seed, step * (1ull << 32) + i);
    for (int k = 0; k < T::act_dim; ++k) act[i * T::act_dim + k] = r.uniform(-1.0f, 1.0f);
  }
};

// A no-op visitor: a named type, since nvcc warns about captureless template lambdas.
struct name_check {
  template <class T>
  void operator()() const {}
};

struct options {
  std::string out, run_id, git = "unknown", tasks = "all";
  int reps = 5, steps = 200, warmup = 50;
  std::vector<int> multipliers{1, 4, 16};
};

template <class T>
void bench_task(const options& o, const std::string& device, std::ofstream& file) {
  for (int mult : o.multipliers) {
    const int n = gmi::envs::paper_num_envs<T>() * mult;
    gmi::cuda::stream stream;
    gmi::rl::env_batch<T, gmi::exec::cuda> b(n, 1, {}, gmi::exec::cuda{stream.get()});
    gmi::cuda::device_buffer<float> obs(std::size_t(n) * T::obs_dim), act(std::size_t(n) * T::act_dim), rew(n);
    gmi::cuda::device_buffer<std::uint8_t> te(n), tr(n);
    b.reset(obs.span(), stream.get());
    std::uint64_t step = 0;
    auto run = [&](int steps) {
      for (int s = 0; s < steps; ++s) {
        gmi::exec::for_each(gmi::exec::cuda{stream.get()}, n, random_actions<T>{act.data(), 99, step++});
        b.step(act, obs.span(), rew.span(), te.span(), tr.span(), stream.get());
      }
    };
    run(o.warmup);
    std::vector<double> rates;
    gmi::cuda::event start(gmi::cuda::event::timing::enabled), stop(gmi::cuda::event::timing::enabled);
    for (int r = 0; r < o.reps; ++r) {
      start.record(stream.get());
      run(o.steps);
      stop.record(stream.get());
      stop.synchronize();
      rates.push_back(double(n) * o.steps / (elapsed_ms(start, stop) * 1e-3));
    }
    std::sort(rates.begin(), rates.end());
    const auto stats = b.read_stats(stream.get());
    nlohmann::json line = {{"run_id", o.run_id}, {"bench", "env"}, {"task", T::name}, {"impl", "gmi"},
                           {"num_envs", n}, {"gmis_per_gpu", 1}, {"partition", "none"}, {"gpus", 1},
                           {"device", device}, {"metric", "steps_per_s"}, {"median", rates[rates.size() / 2]},
                           {"min", rates.front()}, {"max", rates.back()}, {"reps", o.reps}, {"git", o.git},
                           {"steps_per_rep", o.steps}, {"actions", "uniform(-1,1) drawn on device each step"},
                           {"episodes_finished", stats.episodes}};
    std::cout << line.dump() << std::endl;
    if (file) file << line.dump() << '\n';
  }
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gmi.bench.env: env-step throughput of every task"};
  options o;
  app.add_option("--out", o.out, "append result lines to this file");
  app.add_option("--run-id", o.run_id, "run id shared with the anchor run (default: UTC time)");
  app.add_option("--git", o.git, "git revision to record");
  app.add_option("--reps", o.reps, "timed repetitions")->check(CLI::Range(1, 1000));
  app.add_option("--steps", o.steps, "env steps per repetition")->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", o.warmup, "untimed steps first")->check(CLI::Range(0, 1000000));
  app.add_option("--multipliers", o.multipliers, "env counts as multiples of the paper's")->check(CLI::Range(1, 1024));
  app.add_option("--tasks", o.tasks, "comma-separated task names, or all");
  CLI11_PARSE(app, argc, argv);
  try {
    if (o.run_id.empty()) {
      char buf[32];
      const std::time_t now = std::time(nullptr);
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
      o.run_id = buf;
    }
    std::vector<std::string> wanted;
    if (o.tasks == "all") {
      for (auto name : gmi::envs::task_names) wanted.emplace_back(name);
    } else {
      std::size_t at = 0;
      while (at <= o.tasks.size()) {
        const std::size_t comma = std::min(o.tasks.find(',', at), o.tasks.size());
        wanted.push_back(o.tasks.substr(at, comma - at));
        at = comma + 1;
      }
    }
    for (const auto& name : wanted) gmi::envs::visit_task(name, name_check{});  // bad names before the GPU
    cudaDeviceProp prop{};
    GMI_CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
    const std::string device = prop.name;
    std::ofstream file;
    if (!o.out.empty()) file.open(o.out, std::ios::app);
    for (const auto& name : wanted) gmi::envs::visit_task(name, [&]<class T>() { bench_task<T>(o, device, file); });
  } catch (const gmi::config_error& e) {
    std::fprintf(stderr, "gmi.bench.env: %s\n", e.what());
    return 2;
  } catch (const gmi::error& e) {
    std::fprintf(stderr, "gmi.bench.env: %s\n", e.what());
    return 1;
  }
  return 0;
}

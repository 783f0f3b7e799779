// gmi.bench.physics: physics steps per second of gmi::physics's batched device path (one thread per
// environment, float, element-major data) for MJCF models at several env counts. Controls are fixed per
// environment (a sine over the env index); the number is physics only: no observation, reward or policy. The
// constraint solve runs the model's <option iterations> (default 100) sweeps at most, or --iterations.
// Writes bench-spec result lines (bench "physics", metric steps_per_s, median/min/max of the reps) to stdout
// and --out.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <gmi/cuda/event.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/metrics/summary.hpp>
#include <gmi/physics/batch.cuh>
#include <gmi/physics/mjcf.hpp>

namespace {
struct options {
  std::string out, run_id, git, models = "ant_tree,ant_floor,humanoid_tree,chain3";
  std::string model_dir = GMI_PHYSICS_MODELS;
  std::vector<int> envs{1024, 4096, 16384, 65536};
  int reps = 5, steps = 100, warmup = 20, substeps = 1, block = 128;
  int iterations = 0;  // 0: the model's <option iterations>
};

void bench_model(const options& o, const gmi::metrics::run_info& run, const std::string& name, std::ofstream& file) {
  auto m = gmi::physics::load_mjcf_file(o.model_dir + "/" + name + ".xml").cast<float>();
  if (o.iterations > 0) m.iterations = o.iterations;
  for (const int n : o.envs) {
    gmi::cuda::stream stream;
    gmi::physics::batch<float> b(m, n, stream.get());
    std::vector<float> ctrl(static_cast<std::size_t>(m.size.nu) * n);
    for (int u = 0; u < m.size.nu; ++u)
      for (int e = 0; e < n; ++e) ctrl[static_cast<std::size_t>(u) * n + e] = 0.8f * std::sin(0.1f * e + u);
    if (!ctrl.empty()) {
      GMI_CUDA_TRY(cudaMemcpyAsync(b.field(b.layout().ctrl), ctrl.data(), ctrl.size() * sizeof(float),
                                   cudaMemcpyHostToDevice, stream.get()));
    }
    for (int s = 0; s < o.warmup; ++s) b.step(stream.get(), o.substeps, o.block);
    gmi::cuda::event start(gmi::cuda::event::timing::enabled), stop(gmi::cuda::event::timing::enabled);
    std::vector<double> rates;
    for (int r = 0; r < o.reps; ++r) {
      start.record(stream.get());
      for (int s = 0; s < o.steps; ++s) b.step(stream.get(), o.substeps, o.block);
      stop.record(stream.get());
      stop.synchronize();
      rates.push_back(double(n) * o.steps * o.substeps / (elapsed_ms(start, stop) * 1e-3));
    }
    nlohmann::json line =
        gmi::metrics::result_line(run, "physics", "gmi", "steps_per_s", gmi::metrics::summarize(rates));
    line.update({{"task", name}, {"num_envs", n}, {"gmis_per_gpu", 1}, {"partition", "none"}, {"gpus", 1},
                 {"steps_per_rep", o.steps * o.substeps}, {"physics_only", true}, {"precision", "float"},
                 {"contact_pairs", m.size.npair}, {"contact_capacity", m.size.ncon_max},
                 {"solver_iterations", m.iterations}, {"block_size", o.block},
                 {"layout", "element-major, thread per env"}, {"bytes_per_env", b.bytes_per_env()},
                 {"nq", m.size.nq}, {"nv", m.size.nv}, {"nbody", m.size.nbody}});
    std::cout << line.dump() << std::endl;
    if (file) file << line.dump() << '\n';
  }
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gmi.bench.physics: physics-only steps per second of gmi::physics on one GPU"};
  options o;
  app.add_option("--out", o.out, "append result lines to this file");
  app.add_option("--run-id", o.run_id, "run id (default: time, device and a random tag)");
  app.add_option("--git", o.git, "git revision to record (default: GMI_GIT_REVISION or the build's)");
  app.add_option("--models", o.models, "comma-separated model names (files <name>.xml in --model-dir)");
  app.add_option("--model-dir", o.model_dir, "folder of the MJCF files");
  app.add_option("--envs", o.envs, "environment counts")->check(CLI::Range(1, 1 << 24));
  app.add_option("--reps", o.reps, "timed repetitions")->check(CLI::Range(1, 1000));
  app.add_option("--steps", o.steps, "batched steps per repetition")->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", o.warmup, "untimed steps first")->check(CLI::Range(0, 1000000));
  app.add_option("--substeps", o.substeps, "physics steps per kernel launch")->check(CLI::Range(1, 1000));
  app.add_option("--block", o.block, "threads per block")->check(CLI::Range(32, 1024));
  app.add_option("--iterations", o.iterations, "solver sweeps at most (0: the model's)")->check(CLI::Range(0, 100000));
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<std::string> names;
    for (std::size_t at = 0; at <= o.models.size();) {
      const std::size_t comma = std::min(o.models.find(',', at), o.models.size());
      names.push_back(o.models.substr(at, comma - at));
      at = comma + 1;
    }
    // Bad files before the GPU.
    for (const auto& name : names) (void)gmi::physics::load_mjcf_file(o.model_dir + "/" + name + ".xml");
    gmi::metrics::run_info run = gmi::metrics::describe_run();
    if (!o.run_id.empty()) run.run_id = o.run_id;
    if (!o.git.empty()) run.git = o.git;
    std::ofstream file;
    if (!o.out.empty()) file.open(o.out, std::ios::app);
    for (const auto& name : names) bench_model(o, run, name, file);
  } catch (const gmi::config_error& e) {
    std::fprintf(stderr, "gmi.bench.physics: %s\n", e.what());
    return 2;
  } catch (const gmi::error& e) {
    std::fprintf(stderr, "gmi.bench.physics: %s\n", e.what());
    return 1;
  }
  return 0;
}

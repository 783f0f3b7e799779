// gmi.bench.physics_tasks: env steps per second of the physics tasks (ant, humanoid, anymal, isaac_ant, isaac_humanoid)
// through the gmi::env driver on one GPU (gmi::rl::env_batch over exec::cuda: a thread per environment, state word-
// major, the pipeline's scratch in per-thread local memory), physics + observation + reward + auto-reset, random
// actions drawn on the device every step. Writes bench-spec result lines (bench "physics", metric steps_per_s,
// median/min/max of the reps) to stdout and --out. With --physics-only: physics steps per second of the same models in
// physics/batch_local.cuh (the tasks' layout without the env driver: fixed controls, the task's substeps per launch),
// to set beside gmi.bench.physics (batch.cuh) on the same models. With --compare-paths: physics-only env steps per
// second (an env step = the task's substeps) of the thread-per-env layout (batch_local.cuh) and the warp-per-env layout
// (batch_warp.cuh), side by side under the same controls. With --driver-paths: env steps per second through the env
// driver that training and serving use (env_batch over exec::cuda: physics + observation + reward + auto-reset) with
// params.step_path threads, then warp, each line carrying the path that ran and the path the rule picks for that task
// and count ("chosen"). --tile-lanes and --solver-rows list the warp path's layouts to measure in both modes (lanes per
// environment 8, 16, 32 or 0 for the model's default; the constraint rows in shared memory or global slots); each warp
// line carries its layout, its environments per block and how many environments an SM holds at once. --thread-shared-
// reals lists shared slices (floats a thread, physics/thread_shared.hpp) for the thread path: a pass each, in the
// default mode and before the warp layouts with --driver-paths; each thread line carries the slice and the kernel that
// ran; --thread-max-l1 adds a pass of the plain kernel with its carveout at the largest L1. --physics-step staged
// measures the staged path (a kernel per stage, rl/physics_staged_step.cuh) in the default mode, a pass for each
// --staged-block; its lines carry the block and its kernels per env step; --staged-shared-reals lists the stage
// kernels' shared slices to measure (floats a thread for each stage's hottest arrays, physics/stage_shared.hpp; -1:
// auto), a pass each, each line carrying the slice asked, the slice a thread got and the floats each of stages 0-3
// placed in it.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/event.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/ant.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid.hpp>
#include <gmi/envs/isaac_ant.hpp>
#include <gmi/envs/isaac_humanoid.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/metrics/summary.hpp>
#include <gmi/physics/batch_local.cuh>
#include <gmi/physics/batch_warp.cuh>
#include <gmi/physics/stage_shared.hpp>
#include <gmi/physics/step_path.hpp>
#include <gmi/physics/thread_shared.hpp>
#include <gmi/rl/env_batch.cuh>
#include <gmi/rl/physics_env_step.cuh>

namespace {
// Calls f.template operator()<T>() for the physics task named `name` (main checks the names first).
template <class F>
void with_task(const std::string& name, F&& f) {
  if (name == "ant") f.template operator()<gmi::envs::ant>();
  if (name == "humanoid") f.template operator()<gmi::envs::humanoid>();
  if (name == "anymal") f.template operator()<gmi::envs::anymal>();
  if (name == "isaac_ant") f.template operator()<gmi::envs::isaac_ant>();
  if (name == "isaac_humanoid") f.template operator()<gmi::envs::isaac_humanoid>();
}

template <class T>
struct random_actions {
  float* act;
  std::uint64_t step;
  __device__ void operator()(std::size_t i) const {
    gmi::rng r(99, step * (1ull << 32) + i);
    for (int k = 0; k < T::act_dim; ++k) act[i * T::act_dim + k] = r.uniform(-1.0f, 1.0f);
  }
};

struct options {
  std::string out, run_id, git, tasks = "ant,humanoid,anymal";
  std::vector<int> envs{4096, 16384, 65536};
  int reps = 5, steps = 50, warmup = 10;
  bool physics_only = false;
  bool compare_paths = false;
  bool driver_paths = false;
  std::string physics_step;  // gmi::physics::request_step_path: "", auto, threads, warp, staged
  std::vector<int> warps_per_block{0};
  std::vector<int> staged_blocks{0};  // the staged path's blocks to measure (0: physics::default_staged_block)
  std::vector<int> staged_shared{0};  // physics::request_staged_shared_reals for the staged path, one pass each
  std::vector<int> tile_lanes{32};
  std::vector<std::string> solver_rows{"shared"};
  std::vector<int> thread_shared{0};  // physics::request_thread_shared_reals for the thread path, one pass each
  bool thread_max_l1 = false;          // a second pass of the plain kernel (slice 0) with the largest L1
  // The thread passes: (slice, largest L1) in order.
  [[nodiscard]] std::vector<std::pair<int, bool>> thread_passes() const {
    std::vector<std::pair<int, bool>> p;
    for (const int s : thread_shared) {
      p.emplace_back(s, false);
      if (s == 0 && thread_max_l1) p.emplace_back(0, true);
    }
    return p;
  }
};

// Physics steps per env step of a task.
template <class T>
int substeps_of() {
  const typename T::params p{};
  return T::physics_substeps(p);
}

template <class T>
void bench_physics(const options& o, const gmi::metrics::run_info& run, std::ofstream& file) {
  using M = typename T::sim::model_type;
  const int sub = substeps_of<T>();
  for (const int n : o.envs) {
    gmi::cuda::stream stream;
    gmi::physics::local_batch<M> b(n, stream.get());
    std::vector<float> ctrl(std::size_t(T::sim::nu) * n);
    for (int u = 0; u < T::sim::nu; ++u)
      for (int e = 0; e < n; ++e) ctrl[std::size_t(u) * n + e] = 0.8f * std::sin(0.1f * e + u);
    GMI_CUDA_TRY(cudaMemcpyAsync(b.ctrl(), ctrl.data(), ctrl.size() * sizeof(float), cudaMemcpyHostToDevice,
                                 stream.get()));
    for (int s = 0; s < o.warmup; ++s) b.step(stream.get(), sub);
    gmi::cuda::event start(gmi::cuda::event::timing::enabled), stop(gmi::cuda::event::timing::enabled);
    std::vector<double> rates;
    for (int r = 0; r < o.reps; ++r) {
      start.record(stream.get());
      for (int s = 0; s < o.steps; ++s) b.step(stream.get(), sub);
      stop.record(stream.get());
      stop.synchronize();
      rates.push_back(double(n) * o.steps * sub / (elapsed_ms(start, stop) * 1e-3));
    }
    nlohmann::json line =
        gmi::metrics::result_line(run, "physics", "gmi", "steps_per_s", gmi::metrics::summarize(rates));
    line.update({{"task", T::name}, {"num_envs", n}, {"gmis_per_gpu", 1}, {"partition", "none"}, {"gpus", 1},
                 {"steps_per_rep", o.steps * sub}, {"physics_only", true}, {"precision", "float"},
                 {"layout", "local scratch, thread per env (batch_local.cuh)"},
                 {"bytes_per_env", b.bytes_per_env()}, {"scratch_bytes_per_env", b.scratch_bytes_per_env()}});
    std::cout << line.dump() << std::endl;
    if (file) file << line.dump() << '\n';
  }
}

// Env steps per second (physics only) of one batch layout B over the task's substeps per launch.
template <class T, class B>
void bench_path(const options& o, const gmi::metrics::run_info& run, std::ofstream& file, B& b, int n,
                const char* path, nlohmann::json extra, cudaStream_t s) {
  const int sub = substeps_of<T>();
  std::vector<float> ctrl(std::size_t(T::sim::nu) * n);
  for (int u = 0; u < T::sim::nu; ++u)
    for (int e = 0; e < n; ++e) ctrl[std::size_t(u) * n + e] = 0.8f * std::sin(0.1f * e + u);
  GMI_CUDA_TRY(cudaMemcpyAsync(b.ctrl(), ctrl.data(), ctrl.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  for (int k = 0; k < o.warmup; ++k) b.step(s, sub);
  gmi::cuda::event start(gmi::cuda::event::timing::enabled), stop(gmi::cuda::event::timing::enabled);
  std::vector<double> rates;
  for (int r = 0; r < o.reps; ++r) {
    start.record(s);
    for (int k = 0; k < o.steps; ++k) b.step(s, sub);
    stop.record(s);
    stop.synchronize();
    rates.push_back(double(n) * o.steps / (elapsed_ms(start, stop) * 1e-3));
  }
  nlohmann::json line =
      gmi::metrics::result_line(run, "physics", "gmi", "steps_per_s", gmi::metrics::summarize(rates));
  line.update({{"task", T::name}, {"num_envs", n}, {"gmis_per_gpu", 1}, {"partition", "none"}, {"gpus", 1},
               {"steps_per_rep", o.steps}, {"substeps", sub}, {"physics_only", true}, {"precision", "float"},
               {"what", "env steps, physics only (the task's substeps each), fixed controls"}, {"path", path},
               {"bytes_per_env", b.bytes_per_env()}});
  line.update(extra);
  std::cout << line.dump() << std::endl;
  if (file) file << line.dump() << '\n';
}

template <class T>
void compare_paths(const options& o, const gmi::metrics::run_info& run, std::ofstream& file) {
  using M = typename T::sim::model_type;
  for (const int n : o.envs) {
    gmi::cuda::stream stream;
    {
      gmi::physics::local_batch<M> b(n, stream.get());
      bench_path<T>(o, run, file, b, n, "thread_per_env",
                    {{"layout", "batch_local.cuh"}, {"scratch_bytes_per_env", b.scratch_bytes_per_env()}},
                    stream.get());
    }
    for (const int lanes : o.tile_lanes) {
      for (const std::string& rows : o.solver_rows) {
        for (const int w : o.warps_per_block) {
          const gmi::physics::tile_layout layout{lanes != 0 ? lanes : gmi::physics::default_tile_lanes(M::sizes()),
                                                 rows == "global"};
          gmi::physics::warp_batch<M> b(n, stream.get(), w, layout);
          const gmi::physics::tile_plan& plan = b.plan();
          bench_path<T>(o, run, file, b, n, "warp_per_env",
                        {{"layout", "batch_warp.cuh"}, {"lanes", layout.lanes}, {"solver_rows", rows},
                         {"envs_per_block", plan.envs_per_block}, {"warps_per_block", b.warps_per_block()},
                         {"resident_envs_per_sm", plan.resident_envs_per_sm}, {"blocks", b.blocks()},
                         {"registers_per_thread", plan.registers_per_thread},
                         {"tile_max_registers", GMI_PHYSICS_TILE_MAX_REGISTERS},
                         {"shared_bytes_per_block", b.shared_bytes()},
                         {"scratch_bytes_per_env", b.scratch_bytes_per_env(layout)},
                         {"spill_bytes", b.spill_bytes()}},
                        stream.get());
        }
      }
    }
  }
}

// Env steps per second through env_batch; paths: the params.step_path values to measure, one line each.
template <class T>
void bench_task(const options& o, const gmi::metrics::run_info& run, std::ofstream& file,
                const std::vector<gmi::physics::step_path>& paths = {gmi::physics::step_path::automatic}) {
  for (const int n : o.envs) {
    for (const gmi::physics::step_path path : paths) {
      gmi::cuda::stream stream;
      typename T::params params{};
      params.step_path = path;
      gmi::rl::env_batch<T, gmi::exec::cuda> b(n, 1, params, gmi::exec::cuda{stream.get()});
      gmi::cuda::device_buffer<float> obs(std::size_t(n) * T::obs_dim), act(std::size_t(n) * T::act_dim), rew(n);
      gmi::cuda::device_buffer<std::uint8_t> te(n), tr(n);
      b.reset(obs.span(), stream.get());
      std::uint64_t step = 0;
      auto steps = [&](int count) {
        for (int s = 0; s < count; ++s) {
          gmi::exec::for_each(gmi::exec::cuda{stream.get()}, n, random_actions<T>{act.data(), step++});
          b.step(act, obs.span(), rew.span(), te.span(), tr.span(), stream.get());
        }
      };
      steps(o.warmup);
      gmi::cuda::event start(gmi::cuda::event::timing::enabled), stop(gmi::cuda::event::timing::enabled);
      std::vector<double> rates;
      for (int r = 0; r < o.reps; ++r) {
        start.record(stream.get());
        steps(o.steps);
        stop.record(stream.get());
        stop.synchronize();
        rates.push_back(double(n) * o.steps / (elapsed_ms(start, stop) * 1e-3));
      }
      const gmi::rl::episode_stats stats = b.read_stats(stream.get());
      const typename T::params p{};
      nlohmann::json line =
          gmi::metrics::result_line(run, "physics", "gmi", "steps_per_s", gmi::metrics::summarize(rates));
      line.update({{"task", T::name}, {"num_envs", n}, {"gmis_per_gpu", 1}, {"partition", "none"}, {"gpus", 1},
                   {"steps_per_rep", o.steps}, {"physics_only", false}, {"precision", "float"},
                   {"what", "env steps: physics + observation + reward + auto-reset, random actions"},
                   {"layout", "env_batch: state word-major"},
                   {"driver", "env_batch<exec::cuda>::step (training and serving's env driver)"},
                   {"path", gmi::rl::env_step_path_name(b)},
                   {"chosen", gmi::rl::env_step_path_name<T>(typename T::params{}, std::size_t(n))},
                   {"asked", gmi::physics::step_path_name(path)},
                   {"solver_iterations", p.solver_iterations}, {"solver_tolerance", p.solver_tolerance},
                   {"physics_dt", T::sim::model_type::options().timestep},
                   {"physics_substeps", T::physics_substeps(p)},
                   {"control_dt", T::sim::model_type::options().timestep * T::physics_substeps(p)},
                   {"state_bytes_per_env", sizeof(typename T::state)},
                   {"scratch_bytes_per_env", T::sim::scratch_reals * sizeof(float)},
                   {"episodes_finished", stats.episodes}, {"mean_episode_length", stats.mean_length()}});
      if (std::string(gmi::rl::env_step_path_name(b)) == "staged_per_env") {
        const int block = gmi::physics::requested_staged_block();
        const int slice = gmi::rl::staged_slice_reals_for(std::size_t(n), block);
        std::vector<int> placed;
        for (int k = 0; k < gmi::physics::step_stages; ++k)
          placed.push_back(gmi::physics::stage_shared_used(T::sim::sizes_v, k, slice));
        line.update({{"staged_block", block},
                     {"staged_shared_reals", gmi::physics::requested_staged_shared_reals()},
                     {"staged_slice_reals", slice}, {"staged_slice_floats_per_stage", placed},
                     {"staged_kernels_per_step", 2 + gmi::physics::step_stages * T::physics_substeps(p)},
                     {"staged_bytes_per_env", gmi::rl::staged_bytes<T>(1)}});
      } else if (std::string(gmi::rl::env_step_path_name(b)) == "warp_per_env") {
        const gmi::physics::tile_plan plan = gmi::rl::warp_env_plan<T>();
        line.update({{"lanes", plan.layout.lanes}, {"solver_rows", plan.layout.spill_rows ? "global" : "shared"},
                     {"envs_per_block", plan.envs_per_block}, {"resident_envs_per_sm", plan.resident_envs_per_sm},
                     {"registers_per_thread", plan.registers_per_thread}, {"shared_bytes_per_block", plan.shared_bytes},
                     {"tile_max_registers", GMI_PHYSICS_TILE_MAX_REGISTERS},
                     {"shared_bytes_per_env",
                      gmi::physics::warp_batch<typename T::sim::model_type>::scratch_bytes_per_env(plan.layout)}});
      } else {
        const int slice = gmi::rl::physics_thread_shared_reals<T>();
        line.update({{"thread_min_blocks", gmi::rl::physics_thread_min_blocks}, {"thread_shared_reals", slice},
                     {"thread_max_l1", slice == 0 && gmi::physics::requested_thread_max_l1()},
                     {"thread_shared_used", gmi::physics::thread_shared_used(T::sim::sizes_v, slice)},
                     {"thread_kernel", slice > 0 ? "physics_thread_shared_kernel (128 a block, launch bound 4)"
                                                 : "physics_thread_step_kernel (256 a block, launch bound "
                                                   "GMI_PHYSICS_THREAD_MIN_BLOCKS)"}});
      }
      std::cout << line.dump() << std::endl;
      if (file) file << line.dump() << '\n';
    }
  }
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gmi.bench.physics_tasks: env steps per second of ant, humanoid, anymal, isaac_ant and isaac_humanoid on one GPU"};
  options o;
  app.add_option("--out", o.out, "append result lines to this file");
  app.add_option("--run-id", o.run_id, "run id (default: time, device and a random tag)");
  app.add_option("--git", o.git, "git revision to record (default: GMI_GIT_REVISION or the build's)");
  app.add_option("--tasks", o.tasks, "comma-separated: ant, humanoid, anymal, isaac_ant, isaac_humanoid");
  app.add_option("--envs", o.envs, "environment counts")->check(CLI::Range(1, 1 << 24));
  app.add_option("--reps", o.reps, "timed repetitions")->check(CLI::Range(1, 1000));
  app.add_option("--steps", o.steps, "env steps per repetition")->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", o.warmup, "untimed steps first")->check(CLI::Range(0, 1000000));
  app.add_flag("--physics-only", o.physics_only, "physics steps of the models in batch_local.cuh instead");
  app.add_flag("--compare-paths", o.compare_paths,
               "physics-only env steps of thread per env (batch_local.cuh) and warp per env (batch_warp.cuh)");
  app.add_flag("--driver-paths", o.driver_paths,
               "env steps through env_batch with a thread per env, then a warp per env (params.step_path)");
  app.add_option("--physics-step", o.physics_step,
                 "the env driver's path for every batch: auto (the rule), threads, warp or staged (a kernel per "
                 "stage; wins over params)");
  app.add_option("--warps-per-block", o.warps_per_block,
                 "warp path: environments per block to measure (0: the occupancy calculator's best)")
      ->check(CLI::Range(0, 128));
  app.add_option("--tile-lanes", o.tile_lanes,
                 "warp path: lanes per environment to measure (8, 16, 32; 0: the model's default)")
      ->check(CLI::IsMember({0, 8, 16, 32}));
  app.add_option("--thread-shared-reals", o.thread_shared,
                 "thread path: floats of shared memory a thread for the hottest arrays, to measure (0: the plain "
                 "kernel; physics/thread_shared.hpp)")
      ->check(CLI::Range(0, gmi::physics::max_thread_shared_reals));
  app.add_flag("--thread-max-l1", o.thread_max_l1,
               "thread path: measure the plain kernel (slice 0) also with its preferred carveout at the largest L1");
  app.add_option("--staged-block", o.staged_blocks,
                 "staged path (--physics-step staged): threads a block of its kernels, to measure (0: the default)")
      ->check(CLI::IsMember({0, 32, 64, 128, 256}));
  app.add_option("--staged-shared-reals", o.staged_shared,
                 "staged path: floats of shared memory a thread for each stage's hottest arrays, to measure (0: none; "
                 "-1: auto, the most that keeps every environment resident; physics/stage_shared.hpp)")
      ->check(CLI::Range(-1, gmi::physics::max_staged_shared_reals));
  app.add_option("--solver-rows", o.solver_rows,
                 "warp path: where the constraint rows' arrays live, to measure (shared, global)")
      ->check(CLI::IsMember({"shared", "global"}));
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<std::string> names;
    for (std::size_t at = 0; at <= o.tasks.size();) {
      const std::size_t comma = std::min(o.tasks.find(',', at), o.tasks.size());
      names.push_back(o.tasks.substr(at, comma - at));
      at = comma + 1;
    }
    for (const auto& name : names)
      gmi::require(name == "ant" || name == "humanoid" || name == "anymal" || name == "isaac_ant" ||
                       name == "isaac_humanoid",
                   "--tasks", name, "a comma-separated list of ant, humanoid, anymal, isaac_ant, isaac_humanoid");
    gmi::physics::request_step_path(o.physics_step, "--physics-step");
    gmi::metrics::run_info run = gmi::metrics::describe_run();
    if (!o.run_id.empty()) run.run_id = o.run_id;
    if (!o.git.empty()) run.git = o.git;
    std::ofstream file;
    if (!o.out.empty()) file.open(o.out, std::ios::app);
    for (const auto& name : names) {
      if (o.compare_paths) {
        with_task(name, [&]<class T>() { compare_paths<T>(o, run, file); });
        continue;
      }
      if (o.driver_paths) {
        // Thread per env once, then the warp path in each layout asked for (the rule's "chosen" follows the layout).
        const std::vector<gmi::physics::step_path> threads{gmi::physics::step_path::threads},
            warp{gmi::physics::step_path::warp};
        // Thread per env once for each shared slice asked for (--thread-shared-reals), then the warp layouts.
        const std::vector<std::pair<int, bool>> tp = o.thread_passes();
        const int thread_passes = static_cast<int>(tp.size());
        for (int pass = -thread_passes; pass < static_cast<int>(o.tile_lanes.size() * o.solver_rows.size()); ++pass) {
          const auto& paths = pass < 0 ? threads : warp;
          gmi::physics::request_thread_shared_reals(pass < 0 ? tp[pass + thread_passes].first : 0);
          gmi::physics::request_thread_max_l1(pass < 0 && tp[pass + thread_passes].second);
          if (pass >= 0)
            gmi::physics::request_tile_layout(o.tile_lanes[pass / o.solver_rows.size()],
                                              o.solver_rows[pass % o.solver_rows.size()]);
          with_task(name, [&]<class T>() { bench_task<T>(o, run, file, paths); });
        }
        gmi::physics::request_tile_layout(0, "global");  // the default layout again, for the next task's rule
        continue;
      }
      if (o.physics_only) {
        with_task(name, [&]<class T>() { bench_physics<T>(o, run, file); });
        continue;
      }
      for (const int block : o.staged_blocks)  // only the staged path reads these two: one pass each
        for (const int staged_reals : o.staged_shared) {
          gmi::physics::request_staged_block(block);
          gmi::physics::request_staged_shared_reals(staged_reals);
          for (const auto& [reals, l1] : o.thread_passes()) {
            gmi::physics::request_thread_shared_reals(reals);
            gmi::physics::request_thread_max_l1(l1);
            with_task(name, [&]<class T>() { bench_task<T>(o, run, file); });
          }
        }
      gmi::physics::request_staged_block(0);
      gmi::physics::request_staged_shared_reals(0);
      gmi::physics::request_thread_shared_reals(0);
      gmi::physics::request_thread_max_l1(false);
    }
  } catch (const gmi::config_error& e) {
    std::fprintf(stderr, "gmi.bench.physics_tasks: %s\n", e.what());
    return 2;
  } catch (const gmi::error& e) {
    std::fprintf(stderr, "gmi.bench.physics_tasks: %s\n", e.what());
    return 1;
  }
  return 0;
}

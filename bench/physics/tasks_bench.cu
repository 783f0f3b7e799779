// gmi.bench.physics_tasks: env steps per second of the physics tasks (ant_v4, humanoid_v4, anymal, ant, humanoid)
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
//
// main parses the options and picks the task by name; each task's measurements are compiled in their own file
// (tasks_bench_<task>.cu instantiates task_bench<task>, tasks_bench.cuh), so that the tasks compile in parallel.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/envs/ant.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid.hpp>
#include <gmi/envs/humanoid_v4.hpp>
#include <gmi/envs/renamed_tasks.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/physics/stage_shared.hpp>
#include <gmi/physics/step_path.hpp>
#include <gmi/physics/thread_shared.hpp>

#include "tasks_bench.hpp"

namespace {
using physics_tasks_bench::options;
using physics_tasks_bench::task_bench;

// Calls f.template operator()<task_bench<T>>() for the physics task T named `name` (main checks the names first).
template <class F>
void with_task(const std::string& name, F&& f) {
  if (name == "ant_v4") f.template operator()<task_bench<gmi::envs::ant_v4>>();
  if (name == "humanoid_v4") f.template operator()<task_bench<gmi::envs::humanoid_v4>>();
  if (name == "anymal") f.template operator()<task_bench<gmi::envs::anymal>>();
  if (name == "ant") f.template operator()<task_bench<gmi::envs::ant>>();
  if (name == "humanoid") f.template operator()<task_bench<gmi::envs::humanoid>>();
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gmi.bench.physics_tasks: env steps per second of ant_v4, humanoid_v4, anymal, ant and humanoid on one GPU"};
  options o;
  app.add_option("--out", o.out, "append result lines to this file");
  app.add_option("--run-id", o.run_id, "run id (default: time, device and a random tag)");
  app.add_option("--git", o.git, "git revision to record (default: GMI_GIT_REVISION or the build's)");
  app.add_option("--tasks", o.tasks, "comma-separated: ant_v4, humanoid_v4, anymal, ant, humanoid");
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
    for (const auto& name : names) {
      if (const std::string renamed = gmi::envs::renamed_task(name); !renamed.empty()) throw gmi::config_error(renamed);
      gmi::require(name == "ant_v4" || name == "humanoid_v4" || name == "anymal" || name == "ant" ||
                       name == "humanoid",
                   "--tasks", name, "a comma-separated list of ant_v4, humanoid_v4, anymal, ant, humanoid");
    }
    gmi::physics::request_step_path(o.physics_step, "--physics-step");
    gmi::metrics::run_info run = gmi::metrics::describe_run();
    if (!o.run_id.empty()) run.run_id = o.run_id;
    if (!o.git.empty()) run.git = o.git;
    std::ofstream file;
    if (!o.out.empty()) file.open(o.out, std::ios::app);
    for (const auto& name : names) {
      if (o.compare_paths) {
        with_task(name, [&]<class B>() { B::compare_paths(o, run, file); });
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
          with_task(name, [&]<class B>() { B::driver(o, run, file, paths); });
        }
        gmi::physics::request_tile_layout(0, "global");  // the default layout again, for the next task's rule
        continue;
      }
      if (o.physics_only) {
        with_task(name, [&]<class B>() { B::physics(o, run, file); });
        continue;
      }
      for (const int block : o.staged_blocks)  // only the staged path reads these two: one pass each
        for (const int staged_reals : o.staged_shared) {
          gmi::physics::request_staged_block(block);
          gmi::physics::request_staged_shared_reals(staged_reals);
          for (const auto& [reals, l1] : o.thread_passes()) {
            gmi::physics::request_thread_shared_reals(reals);
            gmi::physics::request_thread_max_l1(l1);
            with_task(name, [&]<class B>() { B::driver(o, run, file); });
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

#pragma once
// The per-task halves of gmi.bench.physics_tasks (tasks_bench.cu): its options, and task_bench<T>, whose members are
// defined in tasks_bench.cuh and instantiated once per task, each task in its own file (tasks_bench_<task>.cu), so
// that the tasks compile in parallel.
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gmi/metrics/run_info.hpp>
#include <gmi/physics/step_path.hpp>

namespace physics_tasks_bench {
struct options {
  std::string out, run_id, git, tasks = "ant_v4,humanoid_v4,anymal";
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

// What the bench measures of the task T (tasks_bench.cu's header says what each mode measures).
template <class T>
struct task_bench {
  // --physics-only: physics steps per second of T's model in physics/batch_local.cuh.
  static void physics(const options& o, const gmi::metrics::run_info& run, std::ofstream& file);
  // --compare-paths: physics-only env steps per second, thread per env then warp per env in each layout asked.
  static void compare_paths(const options& o, const gmi::metrics::run_info& run, std::ofstream& file);
  // Env steps per second through env_batch; paths: the params.step_path values to measure, one line each.
  static void driver(const options& o, const gmi::metrics::run_info& run, std::ofstream& file,
                     const std::vector<gmi::physics::step_path>& paths = {gmi::physics::step_path::automatic});
};
}  // namespace physics_tasks_bench

#pragma once
// The per-task device runs behind physics_tasks_runs.hpp: physics_task_runs<T>'s members are defined in
// physics_task_runs.cuh and instantiated once per task, each task in its own file (physics_tasks_runs_<task>.cu), so
// that the tasks compile in parallel; physics_tasks_runs.cu picks the task by name and calls these.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gmi/physics/step_path.hpp>

#include "physics_tasks_runs.hpp"

template <class T>
struct physics_task_runs {
  static trajectory run(int n, int steps, std::uint64_t seed, std::uint64_t action_seed);
  static trajectory run_from(int n, std::uint64_t seed, std::uint64_t action_seed,
                             const std::vector<batch_snapshot>& before);
  static std::string path_of(int n);
  static std::vector<float> run_layout(bool warp, int n, const std::vector<float>& ctrl, int launches, int substeps,
                                       gmi::physics::tile_layout layout, int max_blocks);
  static std::pair<std::vector<float>, std::vector<float>> run_stepwise(int n, const std::vector<float>& ctrl,
                                                                        int launches, int substeps,
                                                                        gmi::physics::tile_layout layout,
                                                                        int max_blocks);
  static paired_paths both_paths(int n, int steps, std::uint64_t seed, std::uint64_t action_seed, bool via_dynamics);
  static rule_probe probe_rule();
};

// The device side of physics_tasks_gpu_test.cpp: env_batch<task, exec::cuda> for ant_v4, humanoid_v4, anymal, ant and
// humanoid. This file picks the task by name; each task's device code is compiled in its own file
// (physics_tasks_runs_<task>.cu instantiates physics_task_runs<task>, physics_task_runs.cuh).
#include "physics_tasks_runs.hpp"

#include <stdexcept>
#include <string>

#include <gmi/envs/ant.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid.hpp>
#include <gmi/envs/humanoid_v4.hpp>
#include <gmi/physics/step_path.hpp>

#include "physics_task_runs.hpp"

namespace {
// Calls f.template operator()<physics_task_runs<T>>() for the physics task T named `task`; another name:
// invalid_argument naming `what`.
template <class F>
decltype(auto) with_physics_task(std::string_view task, const char* what, F&& f) {
  if (task == "ant_v4") return f.template operator()<physics_task_runs<gmi::envs::ant_v4>>();
  if (task == "humanoid_v4") return f.template operator()<physics_task_runs<gmi::envs::humanoid_v4>>();
  if (task == "anymal") return f.template operator()<physics_task_runs<gmi::envs::anymal>>();
  if (task == "ant") return f.template operator()<physics_task_runs<gmi::envs::ant>>();
  if (task == "humanoid") return f.template operator()<physics_task_runs<gmi::envs::humanoid>>();
  throw std::invalid_argument(std::string(what) + ": task: got " + std::string(task) +
                              ", need ant_v4, humanoid_v4, anymal, ant or humanoid");
}
}  // namespace

trajectory step_physics_task_gpu_from(std::string_view task, int n, std::uint64_t seed, std::uint64_t action_seed,
                                      const std::vector<batch_snapshot>& before) {
  return with_physics_task(task, "step_physics_task_gpu_from",
                           [&]<class R>() { return R::run_from(n, seed, action_seed, before); });
}

std::string physics_task_path_gpu(std::string_view task, int n) {
  return with_physics_task(task, "physics_task_path_gpu", [&]<class R>() { return R::path_of(n); });
}

trajectory run_physics_task_gpu(std::string_view task, int n, int steps, std::uint64_t seed,
                                std::uint64_t action_seed) {
  return with_physics_task(task, "run_physics_task_gpu",
                           [&]<class R>() { return R::run(n, steps, seed, action_seed); });
}

std::pair<std::vector<float>, std::vector<float>> run_physics_layouts_stepwise(std::string_view task, int n,
                                                                               const std::vector<float>& ctrl,
                                                                               int launches, int substeps,
                                                                               gmi::physics::tile_layout layout,
                                                                               int max_blocks) {
  return with_physics_task(task, "run_physics_layouts_stepwise", [&]<class R>() {
    return R::run_stepwise(n, ctrl, launches, substeps, layout, max_blocks);
  });
}

std::vector<float> run_physics_layout(std::string_view task, bool warp_per_env, int n, const std::vector<float>& ctrl,
                                      int launches, int substeps, gmi::physics::tile_layout layout, int max_blocks) {
  return with_physics_task(task, "run_physics_layout", [&]<class R>() {
    return R::run_layout(warp_per_env, n, ctrl, launches, substeps, layout, max_blocks);
  });
}

paired_paths step_physics_task_both_paths(std::string_view task, int n, int steps, std::uint64_t seed,
                                          std::uint64_t action_seed, bool via_dynamics, int lanes, bool spill_rows) {
  // The layout for this run only; a throw in between leaves the default too.
  struct layout_guard {
    ~layout_guard() { gmi::physics::request_tile_layout(0, "shared"); }
  } guard;
  gmi::physics::request_tile_layout(lanes, spill_rows ? "global" : "shared");
  return with_physics_task(task, "step_physics_task_both_paths",
                           [&]<class R>() { return R::both_paths(n, steps, seed, action_seed, via_dynamics); });
}

rule_probe probe_physics_rule(std::string_view task, int lanes, bool spill_rows) {
  struct layout_guard {
    ~layout_guard() { gmi::physics::request_tile_layout(0, "shared"); }
  } guard;
  gmi::physics::request_tile_layout(lanes, spill_rows ? "global" : "shared");
  return with_physics_task(task, "probe_physics_rule", [&]<class R>() { return R::probe_rule(); });
}

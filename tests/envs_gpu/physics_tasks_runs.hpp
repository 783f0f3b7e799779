#pragma once
// Host entry to the physics tasks on the device (physics_tasks_runs.cu): the same driver and actions as the host
// run of physics_tasks_gpu_test.cpp.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gmi/physics/step_path.hpp>

#include "envs/batch_snapshot.hpp"
#include "gpu_runs.hpp"

// Steps num_envs environments of the physics task `task` (ant_v4, humanoid_v4, anymal, ant, humanoid) with
// env_batch on the device.
trajectory run_physics_task_gpu(std::string_view task, int num_envs, int steps, std::uint64_t seed,
                                std::uint64_t action_seed);

// The path (gmi::rl::env_step_path_name) an env_batch of num_envs environments of `task` on the device takes under
// the process-wide requests.
std::string physics_task_path_gpu(std::string_view task, int num_envs);

// Teacher forcing: a device batch of the task (num_envs, seed) is reset (its first observations open obs), then
// for each t stepped once from the host snapshot before[t] under test_action(action_seed, t, ...); every step's
// observations, rewards and flags are appended.
trajectory step_physics_task_gpu_from(std::string_view task, int num_envs, std::uint64_t seed,
                                      std::uint64_t action_seed, const std::vector<batch_snapshot>& before);

// The ant_v4's model in physics/batch_local.cuh: n environments from qpos0 under controls ctrl (nu x n,
// element-major), `launches` launches of `substeps` physics steps; returns qpos (nq x n, element-major).
std::vector<float> run_local_batch_ant_v4(int n, const std::vector<float>& ctrl, int launches, int substeps);

// The model of task (ant_v4, humanoid_v4, anymal, ant, humanoid) physics only, n environments from qpos0 under
// controls ctrl (nu x n, element-major), `launches` launches of `substeps` physics steps, with a thread per environment
// (physics/batch_local.cuh) or a tile of lanes per environment (physics/batch_warp.cuh, in `layout`; max_blocks > 0
// caps its grid so that each tile steps several environments in turn); returns qpos (nq x n) then qvel (nv x n),
// element-major.
std::vector<float> run_physics_layout(std::string_view task, bool warp_per_env, int n, const std::vector<float>& ctrl,
                                      int launches, int substeps, gmi::physics::tile_layout layout = {},
                                      int max_blocks = 0);

// Both layouts of the same model in step: thread per env runs free from qpos0 under ctrl; before each of
// `launches` launches the warp-per-env batch takes its qpos and qvel, and both take one launch of `substeps`
// steps. Returns each layout's states after every launch (qpos then qvel, element-major, launch after launch).
std::pair<std::vector<float>, std::vector<float>> run_physics_layouts_stepwise(std::string_view task, int n,
                                                                               const std::vector<float>& ctrl,
                                                                               int launches, int substeps,
                                                                               gmi::physics::tile_layout layout = {},
                                                                               int max_blocks = 0);

// The env driver's two device paths (params.step_path, rl/physics_env_step.cuh) side by side: two env_batch<task,
// exec::cuda> of n environments from one seed, one with a thread per environment and one with a warp per
// environment; before each of `steps` steps the warp batch takes the thread batch's state arrays (the same states
// step by step; free-running contact-rich runs part under rounding alone), then both step under
// test_action(action_seed, t, ...). The first observations open each trajectory. The paths are as each batch
// reported them (gmi::rl::env_step_path_name), and auto_path is what the rule chose for n environments.
// via_dynamics: the warp batch is stepped by rl::batched_dynamics (the batched rollout's env step, which PPO's
// batched collection and batched serving run) instead of env_batch::step; warp_path is then batched_dynamics::path().
// lanes and spill_rows: the warp path's layout (physics::request_tile_layout for the run; lanes 0: the model's
// default), restored to the default afterwards.
struct paired_paths {
  trajectory threads, warp;
  std::string threads_path, warp_path, auto_path;
};
paired_paths step_physics_task_both_paths(std::string_view task, int num_envs, int steps, std::uint64_t seed,
                                          std::uint64_t action_seed, bool via_dynamics = false, int lanes = 0,
                                          bool spill_rows = false);

// The env driver's rule on this device for `task` in the warp layout (lanes 0: the model's default): the resident
// count the occupancy calculator gave, the SMs, and the path auto picks at warp_max_waves x resident x SMs
// environments and at one more.
struct rule_probe {
  std::size_t resident_envs_per_sm = 0, sm_count = 0, shared_bytes_per_env = 0;
  int lanes = 0, envs_per_block = 0;
  std::string at_bound, past_bound;
};
rule_probe probe_physics_rule(std::string_view task, int lanes, bool spill_rows);

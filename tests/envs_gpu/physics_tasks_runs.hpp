#pragma once
// Host entry to the physics tasks on the device (physics_tasks_runs.cu): the same driver and actions as the host
// run of physics_tasks_gpu_test.cpp.
#include <cstdint>
#include <string_view>
#include <vector>

#include "gpu_runs.hpp"

// Steps num_envs environments of the physics task `task` (ant, humanoid, anymal) with env_batch on the device.
trajectory run_physics_task_gpu(std::string_view task, int num_envs, int steps, std::uint64_t seed,
                                std::uint64_t action_seed);

// The ant's model in physics/batch_local.cuh: n environments from qpos0 under controls ctrl (nu x n,
// element-major), `launches` launches of `substeps` physics steps; returns qpos (nq x n, element-major).
std::vector<float> run_local_batch_ant(int n, const std::vector<float>& ctrl, int launches, int substeps);

// The humanoid_v4's device runs for physics_tasks_gpu_test.cpp (physics_task_runs.cuh), in a file of their own.
#include <gmi/envs/humanoid_v4.hpp>

#include "physics_task_runs.cuh"

template struct physics_task_runs<gmi::envs::humanoid_v4>;

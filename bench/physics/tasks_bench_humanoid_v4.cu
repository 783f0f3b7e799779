// gmi.bench.physics_tasks's measurements of the humanoid_v4 (tasks_bench.cuh), in a file of their own.
#include <gmi/envs/humanoid_v4.hpp>

#include "tasks_bench.cuh"

template struct physics_tasks_bench::task_bench<gmi::envs::humanoid_v4>;

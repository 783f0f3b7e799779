// gmi.bench.physics_tasks's measurements of the isaac_ant (tasks_bench.cuh), in a file of their own.
#include <gmi/envs/isaac_ant.hpp>

#include "tasks_bench.cuh"

template struct physics_tasks_bench::task_bench<gmi::envs::isaac_ant>;

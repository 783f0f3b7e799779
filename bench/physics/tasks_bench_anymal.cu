// gmi.bench.physics_tasks's measurements of the anymal (tasks_bench.cuh), in a file of their own.
#include <gmi/envs/anymal.hpp>

#include "tasks_bench.cuh"

template struct physics_tasks_bench::task_bench<gmi::envs::anymal>;

// gmi.bench.wide: serving with the ant-size policy (its own translation unit: see wide_bench.hpp).
#include "wide_cases.cuh"

void gmi_wide::serving_ant(const options& o) { serving<envs::ant_proxy, ant_ac>(o, "ant_mlp"); }

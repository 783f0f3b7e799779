// gmi.bench.wide: serving with the humanoid-size policy (its own translation unit: see wide_bench.hpp).
#include "wide_cases.cuh"

void gmi_wide::serving_humanoid(const options& o) { serving<envs::humanoid_proxy, humanoid_ac>(o, "humanoid_mlp"); }

// gmi.bench.wide: the wide-network rule's threshold case with a 64x64 Ant policy (its own translation unit:
// see wide_bench.hpp).
#include "wide_cases.cuh"

void gmi_wide::threshold_ant_64(const options& o, const char* rule) {
  training<envs::ant_proxy, ant_64_ac>(o, "ant_64x64", "fp32", rule);
}

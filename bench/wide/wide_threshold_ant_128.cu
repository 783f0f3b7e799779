// gmi.bench.wide: the wide-network rule's threshold case with a 128x128 Ant policy (its own translation unit:
// see wide_bench.hpp).
#include "wide_cases.cuh"

void gmi_wide::threshold_ant_128(const options& o, const char* rule) {
  training<envs::ant_proxy, ant_128_ac>(o, "ant_128x128", "fp32", rule);
}

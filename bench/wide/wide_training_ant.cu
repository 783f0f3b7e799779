// gmi.bench.wide: PPO training with the Ant-size policy, by the rule and with the rule forced either way (its own
// translation unit: see wide_bench.hpp).
#include "wide_cases.cuh"

void gmi_wide::training_ant(const options& o, const std::string& p, const std::string& k) {
  training<envs::ant_proxy, ant_ac>(o, "ant_mlp", p, "auto", k);
}

void gmi_wide::threshold_ant(const options& o, const char* rule) {
  training<envs::ant_proxy, ant_ac>(o, "ant_mlp", "fp32", rule);
}

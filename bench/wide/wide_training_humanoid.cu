// gmi.bench.wide: PPO training with the humanoid-size policy (its own translation unit: see wide_bench.hpp).
#include "wide_cases.cuh"

void gmi_wide::training_humanoid(const options& o, const std::string& p, const std::string& k) {
  training<envs::humanoid_proxy, humanoid_ac>(o, "humanoid_mlp", p, "auto", k);
}

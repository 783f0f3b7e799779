// gmi.bench.wide: PPO training with the shadow_hand-size policy (its own translation unit: see wide_bench.hpp).
#include "wide_cases.cuh"

void gmi_wide::training_shadow_hand(const options& o, const std::string& p, const std::string& k) {
  training<envs::shadow_hand_proxy, shadow_hand_ac>(o, "shadow_hand_mlp", p, "auto", k);
}

// gmi.bench.wide: serving with the shadow_hand-size policy (its own translation unit: see wide_bench.hpp).
#include "wide_cases.cuh"

void gmi_wide::serving_shadow_hand(const options& o) { serving<envs::shadow_hand_proxy, shadow_hand_ac>(o, "shadow_hand_mlp"); }

#pragma once
// PopArt's output-preserving rescale (van Hasselt et al., "Learning values across many orders of magnitude",
// NeurIPS 2016): when the return normalizer's mean and std change from (m, s) to (m', s'), the value head's row
// becomes w' = w s / s' and its bias b' = (b s + m - m') / s', so the denormalized value y s + m of every input is
// the same before and after. Without it, each change of the statistics moves every value prediction, and a critic
// whose return scale shifts as the policy improves chases its own normalization.

#include <gmi/core/hd.hpp>

namespace gmi::rl {

// Rescales the value row (`hidden` weights at params + weight_at, its bias at params + bias_at) from the statistics
// (old_mean, old_std) to (new_mean, new_std). Host and device round alike (no fused multiply-adds).
GMI_HD inline void popart_rescale_weight(float* params, int weight_at, int k, float old_std, float new_std) {
#if GMI_IN_DEVICE_CODE
  params[weight_at + k] = __fdiv_rn(__fmul_rn(params[weight_at + k], old_std), new_std);
#else
  params[weight_at + k] = params[weight_at + k] * old_std / new_std;
#endif
}
GMI_HD inline void popart_rescale_bias(float* params, int bias_at, float old_mean, float old_std, float new_mean,
                                       float new_std) {
#if GMI_IN_DEVICE_CODE
  params[bias_at] = __fdiv_rn(__fadd_rn(__fmul_rn(params[bias_at], old_std), __fsub_rn(old_mean, new_mean)), new_std);
#else
  params[bias_at] = (params[bias_at] * old_std + (old_mean - new_mean)) / new_std;
#endif
}
GMI_HD inline void popart_rescale(float* params, int weight_at, int bias_at, int hidden, float old_mean, float old_std,
                                  float new_mean, float new_std) {
  for (int k = 0; k < hidden; ++k) popart_rescale_weight(params, weight_at, k, old_std, new_std);
  popart_rescale_bias(params, bias_at, old_mean, old_std, new_mean, new_std);
}

}  // namespace gmi::rl

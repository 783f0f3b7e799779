#pragma once
// The PPO loss of one sample and its gradient with respect to the policy's outputs (mean and log-std of a diagonal
// Gaussian, or a categorical's logits) and the value. Callers scale by 1 / minibatch size and back-propagate
// through the network.

#include <cmath>

#include <gmi/core/hd.hpp>
#include <gmi/nn/heads.hpp>

namespace gmi::rl {

struct ppo_sample_terms {
  float policy_loss;  // -min(r A, clip(r) A)
  float value_loss;   // (v - R)^2, or the clipped variant's max
  float entropy;
  float ratio;
  float approx_kl;    // (r - 1) - log r, Schulman's low-variance estimator
  float bounds_loss;  // sum over action dims of how far the mean is outside [-action_soft_bound, action_soft_bound], squared
  bool clipped;       // the clipped branch (or the dual clip) was taken: no policy gradient
};

// Environments clamp actions to [-1, 1]. A mean far outside that range saturates every sampled action, so the
// policy gradient of the mean averages to zero and the policy can not come back (seen in Cartpole runs that
// collapsed under the adaptive-KL schedule, docs/training.md): rl_games' bounds loss pulls the mean back once it
// leaves [-1.1, 1.1].
inline constexpr float action_soft_bound = 1.1f;

// log N(a; mu, exp(log_std)) summed over ActDim dimensions.
template <int ActDim>
GMI_HD inline float gaussian_log_prob(const float* action, const float* mu, const float* log_std) {
  constexpr float half_log_2pi = 0.91893853320467274178f;
  float lp = 0.0f;
  for (int j = 0; j < ActDim; ++j) {
    const float z = (action[j] - mu[j]) * expf(-log_std[j]);
    lp += -0.5f * z * z - log_std[j] - half_log_2pi;
  }
  return lp;
}

template <int ActDim>
GMI_HD inline float gaussian_entropy(const float* log_std) {
  constexpr float half_log_2pie = 1.41893853320467274178f;  // 0.5 + 0.5 log 2 pi
  float h = 0.0f;
  for (int j = 0; j < ActDim; ++j) h += half_log_2pie + log_std[j];
  return h;
}

namespace detail {
// The clipped surrogate of a sample given its log-probability: fills ratio, approx_kl, policy_loss and clipped,
// returns d policy_loss / d log_prob.
GMI_HD inline float ppo_policy_terms(float lp, float old_log_prob, float advantage, float clip, float dual_clip,
                                     ppo_sample_terms& t) {
  const float log_ratio = lp - old_log_prob;
  t.ratio = expf(log_ratio);
  t.approx_kl = (t.ratio - 1.0f) - log_ratio;
  const float unclipped = t.ratio * advantage;
  const float clipped_ratio = fminf(fmaxf(t.ratio, 1.0f - clip), 1.0f + clip);
  const float clipped = clipped_ratio * advantage;
  t.clipped = clipped < unclipped;
  t.policy_loss = -fminf(unclipped, clipped);
  if (dual_clip > 0.0f && advantage < 0.0f && t.ratio > dual_clip) {  // then -min(...) = -r A > -dual_clip A
    t.clipped = true;
    t.policy_loss = -dual_clip * advantage;
  }
  return t.clipped ? 0.0f : -advantage * t.ratio;
}

// The value loss (plain or clipped) and d(loss)/d(value), scaled.
GMI_HD inline void ppo_value_terms(float value, float old_value, float target, float value_coef, bool clip_value,
                                   float value_clip, float scale, ppo_sample_terms& t, float* d_value) {
  const float err = value - target;
  if (clip_value) {
    const float v_clipped = old_value + fminf(fmaxf(value - old_value, -value_clip), value_clip);
    const float err_clipped = v_clipped - target;
    const bool use_clipped = err_clipped * err_clipped > err * err;
    t.value_loss = use_clipped ? err_clipped * err_clipped : err * err;
    const bool inside = fabsf(value - old_value) < value_clip;
    *d_value = scale * value_coef * (use_clipped ? (inside ? 2.0f * err_clipped : 0.0f) : 2.0f * err);
  } else {
    t.value_loss = err * err;
    *d_value = scale * value_coef * 2.0f * err;
  }
}
}  // namespace detail

// Computes the terms and d(loss)/d(mu), d(loss)/d(log_std), d(loss)/d(value) for
// loss = policy_loss + value_coef * value_loss - entropy_coef * entropy + bounds_coef * bounds_loss, all
// multiplied by `scale`. dual_clip > 1 (0: off) is dual-clip PPO (Ye et al., AAAI 2020): a sample with a negative
// advantage whose ratio is above dual_clip keeps the loss -dual_clip * A and adds no policy gradient, so the steps
// data from lagging actors finds far likelier under pi than under the policy that acted (ratios of e^4 and more
// were seen in the split layout, docs/training.md) can not pull the update with weight r.
template <int ActDim>
GMI_HD inline ppo_sample_terms ppo_sample_gradient(const float* action, const float* mu, const float* log_std, float value,
                                                   float old_log_prob, float old_value, float advantage, float target,
                                                   float clip, float value_coef, float entropy_coef, float bounds_coef,
                                                   bool clip_value, float value_clip, float scale, float* d_mu, float* d_log_std,
                                                   float* d_value, float dual_clip = 0.0f) {
  using head = nn::gaussian<ActDim, float>;
  ppo_sample_terms t{};
  const float d_log_prob =
      detail::ppo_policy_terms(gaussian_log_prob<ActDim>(action, mu, log_std), old_log_prob, advantage, clip, dual_clip, t);
  t.entropy = gaussian_entropy<ActDim>(log_std);
  t.bounds_loss = head::policy_gradient(mu, log_std, action, d_log_prob, entropy_coef, action_soft_bound, bounds_coef,
                                        scale, d_mu, d_log_std);
  detail::ppo_value_terms(value, old_value, target, value_coef, clip_value, value_clip, scale, t, d_value);
  return t;
}

// The same loss for any actor-critic through its policy interface (nn/actor_critic.hpp): out = the policy head's
// Net::dist_dim outputs, d_out their gradient, d_dist the gradient of the distribution's own parameters
// (Net::dist_param_count: log_std for the Gaussian, none for the categorical). The bounds loss is the Gaussian's
// only; for a Gaussian network this computes what ppo_sample_gradient<act_dim> does, bit for bit.
template <class Net>
GMI_HD inline ppo_sample_terms ppo_policy_sample_gradient(const float* params, const float* action, const float* out,
                                                          float value, float old_log_prob, float old_value,
                                                          float advantage, float target, float clip, float value_coef,
                                                          float entropy_coef, float bounds_coef, bool clip_value,
                                                          float value_clip, float scale, float* d_out, float* d_dist,
                                                          float* d_value, float dual_clip = 0.0f) {
  ppo_sample_terms t{};
  const float d_log_prob =
      detail::ppo_policy_terms(Net::log_prob(params, out, action), old_log_prob, advantage, clip, dual_clip, t);
  t.entropy = Net::entropy(params, out);
  t.bounds_loss = Net::policy_gradient(params, out, action, d_log_prob, entropy_coef, action_soft_bound, bounds_coef,
                                       scale, d_out, d_dist);
  detail::ppo_value_terms(value, old_value, target, value_coef, clip_value, value_clip, scale, t, d_value);
  return t;
}

}  // namespace gmi::rl

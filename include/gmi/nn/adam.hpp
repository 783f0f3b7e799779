#pragma once
// Adam over one flat parameter array, with global gradient-norm clipping first (torch.nn.utils.clip_grad_norm_
// then torch.optim.Adam, the anchor's step). lr is settable between steps (adaptive-KL schedules).
// The host path is here; the CUDA path (adam<exec::cuda>) is in adam.cuh.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/span.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/nn/detail/math.hpp>

namespace gmi::nn {

struct adam_config {
  float lr = 3e-4f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  std::optional<float> max_grad_norm = 1.0f;  // nullopt: no clipping

  // Throws config_error naming the field, the value and the allowed range.
  void validate() const {
    gmi::require(std::isfinite(lr) && lr > 0, "adam lr", lr, "> 0");
    gmi::require(beta1 >= 0 && beta1 < 1, "adam beta1", beta1, "in [0, 1)");
    gmi::require(beta2 >= 0 && beta2 < 1, "adam beta2", beta2, "in [0, 1)");
    gmi::require(std::isfinite(eps) && eps > 0, "adam eps", eps, "> 0");
    if (max_grad_norm)
      gmi::require(std::isfinite(*max_grad_norm) && *max_grad_norm > 0, "adam max_grad_norm", *max_grad_norm,
                   "> 0 (or nullopt for no clipping)");
  }
};

namespace detail {
// torch's clip_grad_norm_ factor: min(1, max_norm / (norm + 1e-6)).
inline float clip_scale(double norm, const std::optional<float>& max_norm) {
  if (!max_norm) return 1.0f;
  const double c = static_cast<double>(*max_norm) / (norm + 1e-6);
  return static_cast<float>(c < 1.0 ? c : 1.0);
}

// a * b + c rounded once, on host and device alike (the compiler never re-contracts it).
GMI_HD inline float fused_multiply_add(float a, float b, float c) {
#if GMI_IN_DEVICE_CODE
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// One element of Adam (torch's formulation): bc1 = 1 - beta1^t, bc2_sqrt = sqrt(1 - beta2^t). The moments' fused
// multiply-adds are written out: left to the compiler, which product it fuses depended on the kernel the step was
// inlined into (a step in ppo_step_kernel and one in adam_fused_kernel differed in the last bit).
GMI_HD inline void adam_element(float& p, float g, float& m, float& v, float lr, float beta1, float beta2, float eps,
                                float bc1, float bc2_sqrt) {
  m = fused_multiply_add(beta1, m, (1.0f - beta1) * g);
  v = fused_multiply_add(g, (1.0f - beta2) * g, beta2 * v);
  const float denom = sqrt_(v) / bc2_sqrt + eps;
  p -= (lr / bc1) * m / denom;
}
}  // namespace detail

// Everything an Adam optimizer needs to continue exactly where it stopped (what a checkpoint stores).
struct adam_state {
  std::vector<float> m, v;  // first and second moments
  std::int64_t step = 0;    // t of the bias corrections
  float lr = 0;
};

template <class Policy>
class adam {
  static_assert(!std::is_same_v<Policy, Policy>,
                "gmi::nn::adam: use exec::host (adam.hpp) or exec::cuda (include <gmi/nn/adam.cuh>, nvcc)");
};

template <>
class adam<exec::host> {
 public:
  adam(adam_config config, std::size_t param_count, exec::host policy = {})
      : config_(config), m_(param_count, 0.0f), v_(param_count, 0.0f), policy_(std::move(policy)) {
    config_.validate();
  }

  // Clips by the global norm of grads (grads are not modified), then updates params. Returns the norm before
  // clipping.
  double step(host_span<float> params, host_span<const float> grads) {
    gmi::require(params.size() == m_.size(), "adam step: params size", params.size(), "== " + std::to_string(m_.size()));
    gmi::require(grads.size() == m_.size(), "adam step: grads size", grads.size(), "== " + std::to_string(m_.size()));
    double sumsq = 0;  // sequential: the same value whatever the thread count
    for (float g : grads) sumsq += static_cast<double>(g) * g;
    const double norm = std::sqrt(sumsq);
    const float scale = detail::clip_scale(norm, config_.max_grad_norm);
    ++steps_;
    const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(config_.beta1), double(steps_)));
    const float bc2_sqrt =
        static_cast<float>(std::sqrt(1.0 - std::pow(static_cast<double>(config_.beta2), double(steps_))));
    float* p = params.data();
    const float* g = grads.data();
    float* m = m_.data();
    float* v = v_.data();
    const adam_config c = config_;
    exec::for_each(policy_, m_.size(), [=](std::size_t i) {
      detail::adam_element(p[i], g[i] * scale, m[i], v[i], c.lr, c.beta1, c.beta2, c.eps, bc1, bc2_sqrt);
    });
    return norm;
  }

  void set_lr(float lr) {
    gmi::require(std::isfinite(lr) && lr > 0, "adam lr", lr, "> 0");
    config_.lr = lr;
  }
  [[nodiscard]] const adam_config& config() const noexcept { return config_; }
  [[nodiscard]] std::int64_t steps() const noexcept { return steps_; }
  [[nodiscard]] host_span<const float> first_moment() const noexcept { return {m_.data(), m_.size()}; }
  [[nodiscard]] host_span<const float> second_moment() const noexcept { return {v_.data(), v_.size()}; }

  [[nodiscard]] adam_state export_state() const { return {m_, v_, steps_, config_.lr}; }
  void import_state(const adam_state& s) {
    gmi::require(s.m.size() == m_.size() && s.v.size() == v_.size(), "adam state: moment sizes", s.m.size(),
                 "== " + std::to_string(m_.size()));
    m_ = s.m;
    v_ = s.v;
    steps_ = s.step;
    set_lr(s.lr);
  }

 private:
  adam_config config_;
  std::vector<float> m_, v_;
  exec::host policy_;
  std::int64_t steps_ = 0;
};

}  // namespace gmi::nn

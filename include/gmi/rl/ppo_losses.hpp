#pragma once
// The loss terms of a PPO iteration (ppo_trainer::losses, APPO's too): means over every minibatch.

#include <cmath>
#include <string>
#include <utility>

namespace gmi::rl {

// Means over every minibatch of the last iteration.
struct ppo_losses {
  double policy_loss = 0, value_loss = 0, entropy = 0, approx_kl = 0, clip_fraction = 0, bounds_loss = 0;
  double learning_rate = 0;
  // False once training has diverged: a loss term (or the lr) is nan or infinite.
  [[nodiscard]] bool finite() const noexcept {
    for (const double x : {policy_loss, value_loss, entropy, approx_kl, clip_fraction, bounds_loss, learning_rate})
      if (!std::isfinite(x)) return false;
    return true;
  }
  // "policy_loss nan, value_loss inf, ...": the terms that are not finite.
  [[nodiscard]] std::string not_finite() const {
    std::string out;
    const std::pair<const char*, double> terms[] = {{"policy_loss", policy_loss}, {"value_loss", value_loss},
                                                    {"entropy", entropy},         {"approx_kl", approx_kl},
                                                    {"clip_fraction", clip_fraction}, {"bounds_loss", bounds_loss},
                                                    {"learning_rate", learning_rate}};
    for (const auto& [name, x] : terms) {
      if (std::isfinite(x)) continue;
      out += (out.empty() ? "" : ", ") + std::string(name) + (std::isnan(x) ? " nan" : x > 0 ? " inf" : " -inf");
    }
    return out;
  }
};

}  // namespace gmi::rl

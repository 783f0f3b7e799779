#include <doctest/doctest.h>

#include <gmi/nn/adam.hpp>

#include <cmath>
#include <string>
#include <vector>

using gmi::nn::adam;
using gmi::nn::adam_config;

TEST_SUITE("cpu") {
  TEST_CASE("nn.adam.steps_match_hand_computation") {
    adam_config cfg{.lr = 0.1f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f, .max_grad_norm = std::nullopt};
    adam<gmi::exec::host> opt(cfg, 2);
    std::vector<float> p = {1.0f, -2.0f};
    const std::vector<float> g1 = {0.5f, -0.25f}, g2 = {-1.0f, 0.125f};
    opt.step({p.data(), 2}, {g1.data(), 2});
    // Step 1: m = 0.1 g, v = 0.01 g^2, m_hat = g, v_hat = g^2: p -= lr * g / (|g| + eps) = lr * sign(g).
    CHECK(p[0] == doctest::Approx(0.9).epsilon(1e-6));
    CHECK(p[1] == doctest::Approx(-1.9).epsilon(1e-6));
    opt.step({p.data(), 2}, {g2.data(), 2});
    for (int i = 0; i < 2; ++i) {
      const double m = 0.9 * 0.1 * g1[i] + 0.1 * g2[i];
      const double v = 0.99 * 0.01 * g1[i] * g1[i] + 0.01 * g2[i] * g2[i];
      const double step = 0.1 * (m / (1 - 0.81)) / (std::sqrt(v / (1 - 0.9801)) + 1e-8);
      const double start = i == 0 ? 0.9 : -1.9;
      CHECK(p[i] == doctest::Approx(start - step).epsilon(1e-5));
    }
    CHECK(opt.steps() == 2);
  }

  TEST_CASE("nn.adam.clipping_scales_to_the_max_norm") {
    // With clipping, the first moments equal (1 - beta1) * clipped gradient: read the clipped norm from them.
    adam_config cfg{.lr = 1e-3f, .max_grad_norm = 1.0f};
    adam<gmi::exec::host> opt(cfg, 3);
    std::vector<float> p(3, 0.0f);
    const std::vector<float> g = {3.0f, 4.0f, 12.0f};  // norm 13
    const double norm = opt.step({p.data(), 3}, {g.data(), 3});
    CHECK(norm == doctest::Approx(13.0));
    double clipped = 0;
    for (float m : opt.first_moment()) clipped += std::pow(m / (1 - 0.9), 2);
    CHECK(std::sqrt(clipped) == doctest::Approx(1.0).epsilon(1e-5));
    CHECK(opt.first_moment()[0] / (1 - 0.9) == doctest::Approx(3.0 / 13.0).epsilon(1e-5));
    // A gradient below the limit is left alone.
    adam<gmi::exec::host> opt2(cfg, 3);
    const std::vector<float> small = {0.3f, 0.4f, 0.0f};
    opt2.step({p.data(), 3}, {small.data(), 3});
    CHECK(opt2.first_moment()[1] / (1 - 0.9) == doctest::Approx(0.4).epsilon(1e-5));
  }

  TEST_CASE("nn.adam.bad_config_is_rejected_with_the_value") {
    auto message = [](adam_config c) {
      try {
        adam<gmi::exec::host> opt(c, 4);
      } catch (const gmi::config_error& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    CHECK(message({.lr = 0.0f}) == "adam lr: got 0, need > 0");
    CHECK(message({.beta1 = 1.0f}) == "adam beta1: got 1, need in [0, 1)");
    CHECK(message({.beta2 = -0.1f}) == "adam beta2: got -0.1, need in [0, 1)");
    CHECK(message({.eps = 0.0f}) == "adam eps: got 0, need > 0");
    CHECK(message({.max_grad_norm = -1.0f}) == "adam max_grad_norm: got -1, need > 0 (or nullopt for no clipping)");
    CHECK(message({}) == "no error");
    adam<gmi::exec::host> opt({}, 4);
    CHECK_THROWS_AS(opt.set_lr(-1.0f), gmi::config_error);
    opt.set_lr(0.5f);
    CHECK(opt.config().lr == 0.5f);
    std::vector<float> p(3), g(4);
    CHECK_THROWS_WITH_AS(opt.step({p.data(), 3}, {g.data(), 4}), "adam step: params size: got 3, need == 4",
                         gmi::config_error);
  }
}

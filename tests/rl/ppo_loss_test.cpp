#include <doctest/doctest.h>

#include <gmi/rl/ppo_loss.hpp>

#include <array>
#include <cmath>

namespace {
constexpr int act = 2;
struct inputs {
  std::array<float, act> a{0.3f, -0.7f}, mu{0.1f, -0.2f}, log_std{-0.3f, 0.2f};
  float value = 0.4f, old_lp = 0, old_value = 0.35f, adv = 0.8f, target = 1.1f;
};
constexpr float bounds_coef = 0.05f;
float loss(const inputs& in, bool clip_value) {
  float dm[act], dl[act], dv;
  const auto t = gmi::rl::ppo_sample_gradient<act>(in.a.data(), in.mu.data(), in.log_std.data(), in.value, in.old_lp,
                                                   in.old_value, in.adv, in.target, 0.2f, 0.5f, 0.01f, bounds_coef,
                                                   clip_value, 0.2f, 1.0f, dm, dl, &dv);
  return t.policy_loss + 0.5f * t.value_loss - 0.01f * t.entropy + bounds_coef * t.bounds_loss;
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("rl.ppo_loss.gradient_matches_finite_differences") {
    for (bool clip_value : {false, true}) {
      for (float old_shift : {0.0f, 0.5f, -0.5f}) {  // ratio inside and outside the clip range
       for (float mu_shift : {0.0f, 1.6f, -1.7f}) {  // means inside and outside the action bounds
        CAPTURE(clip_value);
        CAPTURE(old_shift);
        CAPTURE(mu_shift);
        inputs in;
        for (float& m : in.mu) m += mu_shift;
        in.old_lp = gmi::rl::gaussian_log_prob<act>(in.a.data(), in.mu.data(), in.log_std.data()) + old_shift;
        float dm[act], dl[act], dv;
        gmi::rl::ppo_sample_gradient<act>(in.a.data(), in.mu.data(), in.log_std.data(), in.value, in.old_lp,
                                          in.old_value, in.adv, in.target, 0.2f, 0.5f, 0.01f, bounds_coef, clip_value,
                                          0.2f, 1.0f, dm, dl, &dv);
        const float h = 1e-3f;
        auto numeric = [&](float& x) {
          const float keep = x;
          x = keep + h;
          const float up = loss(in, clip_value);
          x = keep - h;
          const float down = loss(in, clip_value);
          x = keep;
          return (up - down) / (2 * h);
        };
        for (int j = 0; j < act; ++j) {
          CHECK(dm[j] == doctest::Approx(numeric(in.mu[j])).epsilon(2e-2).scale(1e-3));
          CHECK(dl[j] == doctest::Approx(numeric(in.log_std[j])).epsilon(2e-2).scale(1e-3));
        }
        CHECK(dv == doctest::Approx(numeric(in.value)).epsilon(2e-2).scale(1e-3));
       }
      }
    }
  }

  // The bounds loss is zero inside [-1.1, 1.1] and the squared distance outside, per action dimension.
  TEST_CASE("rl.ppo_loss.bounds_loss_is_the_squared_excess") {
    inputs in;
    float dm[act], dl[act], dv;
    auto bounds = [&](float m0, float m1) {
      in.mu = {m0, m1};
      return gmi::rl::ppo_sample_gradient<act>(in.a.data(), in.mu.data(), in.log_std.data(), in.value, in.old_lp,
                                               in.old_value, in.adv, in.target, 0.2f, 0.5f, 0.0f, 1.0f, false, 0.2f,
                                               1.0f, dm, dl, &dv)
          .bounds_loss;
    };
    CHECK(bounds(1.0f, -1.1f) == 0.0f);
    CHECK(bounds(1.6f, 0.0f) == doctest::Approx(0.25));
    CHECK(bounds(2.1f, -3.1f) == doctest::Approx(1.0 + 4.0));
  }

  // Dual clip: a negative advantage with a ratio above c keeps the loss -c A and no policy gradient; below c (and
  // for positive advantages) the loss is PPO's.
  TEST_CASE("rl.ppo_loss.dual_clip_caps_negative_advantages") {
    float dm[act], dl[act], dv, dm0[act], dl0[act], dv0;
    const auto terms = [&](float log_ratio, float adv, float dual, float* m, float* l, float* v) {
      inputs in;
      in.adv = adv;
      in.old_lp = gmi::rl::gaussian_log_prob<act>(in.a.data(), in.mu.data(), in.log_std.data()) - log_ratio;
      return gmi::rl::ppo_sample_gradient<act>(in.a.data(), in.mu.data(), in.log_std.data(), in.value, in.old_lp,
                                               in.old_value, in.adv, in.target, 0.2f, 0.5f, 0.0f, 0.0f, false, 0.2f,
                                               1.0f, m, l, v, dual);
    };
    // ratio e^2 = 7.39 > 3, A = -0.8: capped.
    const auto capped = terms(2.0f, -0.8f, 3.0f, dm, dl, &dv);
    CHECK(capped.clipped);
    CHECK(capped.policy_loss == doctest::Approx(3.0 * 0.8));
    for (int j = 0; j < act; ++j) CHECK(dm[j] == 0.0f);
    for (int j = 0; j < act; ++j) CHECK(dl[j] == 0.0f);
    const auto plain = terms(2.0f, -0.8f, 0.0f, dm0, dl0, &dv0);  // off: PPO's -r A with its gradient
    CHECK_FALSE(plain.clipped);
    CHECK(plain.policy_loss == doctest::Approx(std::exp(2.0) * 0.8).epsilon(1e-5));
    CHECK(std::fabs(dm0[0]) > 0.1f);
    CHECK(dv == dv0);  // the value loss is untouched
    // ratio e^0.5 = 1.65 < 3: PPO's loss and gradient, on or off.
    const auto below = terms(0.5f, -0.8f, 3.0f, dm, dl, &dv);
    const auto below_off = terms(0.5f, -0.8f, 0.0f, dm0, dl0, &dv0);
    CHECK(below.policy_loss == below_off.policy_loss);
    for (int j = 0; j < act; ++j) CHECK(dm[j] == dm0[j]);
    // a positive advantage above c is PPO's clip, whatever the dual clip.
    const auto positive = terms(2.0f, 0.8f, 3.0f, dm, dl, &dv);
    CHECK(positive.clipped);
    CHECK(positive.policy_loss == doctest::Approx(-1.2 * 0.8));
  }

  TEST_CASE("rl.ppo_loss.log_prob_and_entropy_closed_forms") {
    const float a[1] = {1.0f}, mu[1] = {0.0f}, ls[1] = {0.0f};
    CHECK(gmi::rl::gaussian_log_prob<1>(a, mu, ls) == doctest::Approx(-0.5 - 0.9189385332));
    CHECK(gmi::rl::gaussian_entropy<1>(ls) == doctest::Approx(1.4189385332));
  }
}

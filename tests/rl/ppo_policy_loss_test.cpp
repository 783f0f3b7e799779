// PPO's loss through a network's policy interface (ppo_policy_sample_gradient<Net>): the Gaussian network gives
// ppo_sample_gradient's bits, and the categorical network's gradient with respect to its logits matches finite
// differences of the whole sample loss (clip, entropy and value terms).
#include <doctest/doctest.h>

#include <gmi/nn/actor_critic.hpp>
#include <gmi/rl/ppo_loss.hpp>

#include <array>
#include <cmath>
#include <vector>

namespace {
using gnet = gmi::nn::gaussian_actor_critic<3, 2, gmi::nn::layers<4>>;
using cnet = gmi::nn::categorical_actor_critic<3, 3, gmi::nn::layers<4>>;
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("rl.ppo_policy_loss.gaussian_network_gives_the_same_bits") {
    std::vector<float> params(gnet::param_count, 0.0f);
    gmi::rng r(9, 1);
    int compared = 0;
    for (int trial = 0; trial < 200; ++trial) {
      for (int j = 0; j < 2; ++j) params[gnet::log_std_offset + j] = r.uniform(-1.0f, 0.5f);
      const float a[2] = {r.uniform(-2.0f, 2.0f), r.uniform(-2.0f, 2.0f)};
      const float mu[2] = {r.uniform(-2.0f, 2.0f), r.uniform(-2.0f, 2.0f)};
      const float v = r.uniform(-1.0f, 1.0f), old_lp = r.uniform(-4.0f, 0.0f), old_v = r.uniform(-1.0f, 1.0f);
      const float adv = r.uniform(-2.0f, 2.0f), target = r.uniform(-1.0f, 1.0f), scale = 1.0f / 64.0f;
      const bool clip_value = trial % 2 == 0;
      const float dual = trial % 3 == 0 ? 3.0f : 0.0f;
      float dm1[2], dl1[2], dv1, dm2[2], dl2[2], dv2;
      const auto t1 = gmi::rl::ppo_sample_gradient<2>(a, mu, gnet::log_std(params.data()), v, old_lp, old_v, adv, target,
                                                      0.2f, 0.5f, 0.01f, 0.1f, clip_value, 0.2f, scale, dm1, dl1, &dv1,
                                                      dual);
      const auto t2 = gmi::rl::ppo_policy_sample_gradient<gnet>(params.data(), a, mu, v, old_lp, old_v, adv, target, 0.2f,
                                                                0.5f, 0.01f, 0.1f, clip_value, 0.2f, scale, dm2, dl2,
                                                                &dv2, dual);
      CHECK(t1.policy_loss == t2.policy_loss);
      CHECK(t1.value_loss == t2.value_loss);
      CHECK(t1.entropy == t2.entropy);
      CHECK(t1.bounds_loss == t2.bounds_loss);
      CHECK(t1.ratio == t2.ratio);
      CHECK(t1.clipped == t2.clipped);
      for (int j = 0; j < 2; ++j) {
        CHECK(dm1[j] == dm2[j]);
        CHECK(dl1[j] == dl2[j]);
      }
      CHECK(dv1 == dv2);
      ++compared;
    }
    CHECK(compared == 200);
  }

  TEST_CASE("rl.ppo_policy_loss.categorical_gradient_matches_finite_differences") {
    const std::vector<float> params(cnet::param_count, 0.0f);
    const float ent = 0.05f, value_coef = 0.5f;
    for (int action = 0; action < 3; ++action) {
      for (float old_shift : {0.0f, 0.5f, -0.5f}) {  // ratio inside and outside the clip range
        CAPTURE(action);
        CAPTURE(old_shift);
        std::array<float, 3> z{0.3f, -0.6f, 0.9f};
        float v = 0.4f;
        const float a = static_cast<float>(action), adv = 0.8f, target = 1.1f, old_v = 0.35f;
        const float old_lp = cnet::log_prob(params.data(), z.data(), &a) + old_shift;
        auto loss = [&] {
          float dz[3], dd[1], dv;
          const auto t = gmi::rl::ppo_policy_sample_gradient<cnet>(params.data(), &a, z.data(), v, old_lp, old_v, adv,
                                                                   target, 0.2f, value_coef, ent, 0.0f, false, 0.2f,
                                                                   1.0f, dz, dd, &dv);
          return t.policy_loss + value_coef * t.value_loss - ent * t.entropy;
        };
        float dz[3], dd[1], dv;
        const auto t = gmi::rl::ppo_policy_sample_gradient<cnet>(params.data(), &a, z.data(), v, old_lp, old_v, adv,
                                                                 target, 0.2f, value_coef, ent, 0.0f, false, 0.2f, 1.0f,
                                                                 dz, dd, &dv);
        CHECK(t.bounds_loss == 0.0f);
        const float h = 1e-3f;
        auto numeric = [&](float& x) {
          const float keep = x;
          x = keep + h;
          const float up = loss();
          x = keep - h;
          const float down = loss();
          x = keep;
          return (up - down) / (2 * h);
        };
        for (int k = 0; k < 3; ++k) CHECK(dz[k] == doctest::Approx(numeric(z[k])).epsilon(2e-2).scale(1e-3));
        CHECK(dv == doctest::Approx(numeric(v)).epsilon(2e-2).scale(1e-3));
      }
    }
  }
}

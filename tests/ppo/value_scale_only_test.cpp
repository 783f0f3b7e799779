// ppo_config::value_scale_only: the value head predicts R / std of the returns (rl_games' norm_only), the mean of
// the return statistics not subtracted (nn::normalizer_config::center false). The view's maps on a known sequence,
// the targets a trainer's loss reads, the standardized default kept bit for bit, and the refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/core/error.hpp>
#include <gmi/envs/point_reach.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/appo.hpp>
#include <gmi/rl/ppo.hpp>

namespace {
using task = gmi::envs::point_reach;
using net = gmi::agents::gaussian_mlp<gmi::nn::layers<64, 64>>::network<task::obs_dim, task::act_dim>;
using trainer = gmi::rl::ppo_trainer<task, net, gmi::exec::host>;

// The mean and the population std of the loss's value targets over the whole rollout of t's last iteration.
std::pair<double, double> target_moments(trainer& t) {
  const auto mv = t.minibatch_view(t.iteration() - 1, 0, 0);
  const std::uint32_t n = mv.total;
  double sum = 0, sq = 0;
  for (std::uint32_t j = 0; j < n; ++j) sum += mv.inputs(j).target;
  const double mean = sum / n;
  for (std::uint32_t j = 0; j < n; ++j) sq += (mv.inputs(j).target - mean) * (mv.inputs(j).target - mean);
  return {mean, std::sqrt(sq / n)};
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("ppo.value_scale_only.view_divides_by_the_std_and_keeps_the_mean") {
    // Returns -30, -20, -10, 0: mean -15, population variance 125.
    const std::vector<float> returns{-30.0f, -20.0f, -10.0f, 0.0f};
    gmi::rl::ppo_config c;
    gmi::nn::running_mean_std<gmi::exec::host> standard(1, gmi::rl::value_normalizer_config(c));
    c.value_scale_only = true;
    gmi::nn::running_mean_std<gmi::exec::host> scaled(1, gmi::rl::value_normalizer_config(c));
    standard.update(gmi::host_span<const float>(returns.data(), returns.size()));
    scaled.update(gmi::host_span<const float>(returns.data(), returns.size()));
    const auto s = standard.view(), o = scaled.view();
    REQUIRE(s.center);
    REQUIRE_FALSE(o.center);
    const double std = std::sqrt(125.0 + 1e-5);
    CHECK(o.std[0] == doctest::Approx(std).epsilon(1e-6));
    for (const float r : {-1e4f, -37.5f, -15.0f, -0.01f, 0.0f, 2.0f}) {
      CAPTURE(r);
      CHECK(o.normalize(0, r) == doctest::Approx(r / std).epsilon(1e-6));
      CHECK(s.normalize(0, r) == doctest::Approx((r + 15.0) / std).epsilon(1e-6));
      CHECK(o.denormalize(0, o.normalize(0, r)) == doctest::Approx(r).epsilon(1e-5));
      // The standardized view computes what it always did, bit for bit.
      CHECK(s.normalize(0, r) == (r - s.mean[0]) / s.std[0]);
      CHECK(s.denormalize(0, 0.75f) == 0.75f * s.std[0] + s.mean[0]);
    }
  }

  TEST_CASE("ppo.value_scale_only.trainer_targets_keep_the_returns_mean") {
    // point_reach's rewards are minus a distance: every return is negative. After the first iteration the return
    // statistics hold that rollout only, so the standardized targets have mean 0 and std 1; divided by the std
    // alone they keep std 1 and a mean of (the returns' mean) / std, below 0. The rollout is the same for both (the
    // first collection reads the value head through statistics with no data: mean 0, std 1).
    gmi::rl::ppo_config c;
    c.minibatch = 512;
    c.epochs = 2;
    trainer standard(64, 5, c, {}, gmi::exec::host{.threads = 1});
    c.value_scale_only = true;
    trainer scaled(64, 5, c, {}, gmi::exec::host{.threads = 1});
    standard.iterate();
    scaled.iterate();
    const auto [sm, ss] = target_moments(standard);
    const auto [om, os] = target_moments(scaled);
    const auto sv = standard.value_normalizer().view(), ov = scaled.value_normalizer().view();
    CAPTURE(sm);
    CAPTURE(om);
    CHECK(std::fabs(sm) < 1e-3);
    CHECK(ss == doctest::Approx(1.0).epsilon(1e-3));
    CHECK(os == doctest::Approx(1.0).epsilon(1e-3));
    REQUIRE(sv.mean[0] < 0.0f);
    CHECK(ov.mean[0] == sv.mean[0]);  // the same returns went in
    CHECK(ov.std[0] == sv.std[0]);
    CHECK(om == doctest::Approx(double(sv.mean[0]) / sv.std[0]).epsilon(1e-3));
    CHECK(om < -0.5);
    // Every target is the return over the std, as the loss reads it.
    const auto mv = scaled.minibatch_view(0, 0, 0);
    for (std::uint32_t j = 0; j < mv.total; j += 97) CHECK(mv.inputs(j).target == mv.returns[j] / ov.std[0]);
    // The update differs (its targets did).
    const std::vector<float> a(standard.params().begin(), standard.params().end()),
        b(scaled.params().begin(), scaled.params().end());
    CHECK(a != b);
  }

  TEST_CASE("ppo.value_scale_only.off_trains_bit_for_bit_as_the_standardized_head") {
    gmi::rl::ppo_config c;
    c.minibatch = 512;
    c.epochs = 2;
    trainer defaults(64, 7, c, {}, gmi::exec::host{.threads = 1});
    c.value_scale_only = false;  // explicitly off, with the defaults' return normalizer
    trainer off(64, 7, c, {}, gmi::exec::host{.threads = 1});
    for (int i = 0; i < 3; ++i) {
      defaults.iterate();
      off.iterate();
    }
    const std::vector<float> a(defaults.params().begin(), defaults.params().end()),
        b(off.params().begin(), off.params().end());
    CHECK(a == b);
    CHECK(defaults.value_normalizer().view().center);
  }

  TEST_CASE("ppo.value_scale_only.bad_combinations_refused_in_one_line") {
    gmi::rl::ppo_config c;
    c.value_scale_only = true;
    CHECK_NOTHROW(c.validate());
    c.normalize_value = false;
    CHECK_THROWS_WITH_AS(c.validate(),
                         "ppo.value_scale_only: got true, need false, or true with normalize_value true, popart false "
                         "and value_symlog false",
                         gmi::config_error);
    c.normalize_value = true;
    c.popart = true;
    CHECK_THROWS_AS(c.validate(), gmi::config_error);
    c.popart = false;
    c.value_symlog = true;
    CHECK_THROWS_AS(c.validate(), gmi::config_error);
    gmi::rl::appo_config a;
    a.ppo.value_scale_only = true;
    CHECK_THROWS_AS(a.validate(), gmi::config_error);
  }
}

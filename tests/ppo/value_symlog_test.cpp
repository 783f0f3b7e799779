// ppo_config::value_symlog: the value head predicts sign(R) ln(1 + |R|) of the return R (nn::normalizer_config::
// symlog) instead of the standardized return; the view maps both ways whatever the statistics hold, the config
// rejects it where it cannot apply, and a trainer's critic learns returns of thousands in those units.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/core/error.hpp>
#include <gmi/envs/spring_chain.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/appo.hpp>
#include <gmi/rl/ppo.hpp>

namespace {
using task = gmi::envs::spring_chain;
using net = gmi::agents::gaussian_mlp<gmi::nn::layers<64, 64>>::network<task::obs_dim, task::act_dim>;
using trainer = gmi::rl::ppo_trainer<task, net, gmi::exec::host>;
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("ppo.value_symlog.view_maps_through_symlog_whatever_the_statistics") {
    gmi::nn::running_mean_std<gmi::exec::host> plain(1, gmi::nn::normalizer_config{1e6f, 1e-5f, 0}),
        symlog(1, gmi::nn::normalizer_config{1e6f, 1e-5f, 0, true});
    const std::vector<float> returns{-5000.0f, -20.0f, 3.0f, 700.0f};
    plain.update(gmi::host_span<const float>(returns.data(), returns.size()));
    symlog.update(gmi::host_span<const float>(returns.data(), returns.size()));
    const auto p = plain.view(), s = symlog.view();
    CHECK_FALSE(p.symlog);
    REQUIRE(s.symlog);
    for (const float r : {-1e4f, -37.5f, -0.01f, 0.0f, 2.0f, 1e3f}) {
      CAPTURE(r);
      CHECK(s.normalize(0, r) == doctest::Approx(std::copysign(std::log1p(std::fabs(double(r))), double(r))));
      CHECK(s.denormalize(0, s.normalize(0, r)) == doctest::Approx(r).epsilon(1e-5));
      CHECK(p.denormalize(0, p.normalize(0, r)) == doctest::Approx(r).epsilon(1e-3));  // the standardized control
    }
    CHECK(p.normalize(0, -1e4f) != doctest::Approx(s.normalize(0, -1e4f)));
  }

  TEST_CASE("ppo.value_symlog.rejected_with_popart_without_value_normalization_and_in_appo") {
    gmi::rl::ppo_config c;
    c.value_symlog = true;
    CHECK_NOTHROW(c.validate());
    c.popart = true;
    CHECK_THROWS_AS(c.validate(), gmi::config_error);
    c.popart = false;
    c.normalize_value = false;
    CHECK_THROWS_AS(c.validate(), gmi::config_error);
    gmi::rl::appo_config a;
    a.ppo.value_symlog = true;
    CHECK_THROWS_AS(a.validate(), gmi::config_error);
  }

  TEST_CASE("ppo.value_symlog.critic_learns_returns_of_thousands_in_symlog_units") {
    // spring_chain's returns reach thousands: with the symlog head the value loss (in symlog units) falls as the
    // critic learns, and the head's predictions at the first observations read back as returns of that size.
    gmi::rl::ppo_config c;
    c.minibatch = 512;
    c.epochs = 4;
    c.value_symlog = true;
    trainer t(128, 3, c, {}, gmi::exec::host{.threads = 1});
    REQUIRE(t.value_normalizer().view().symlog);
    t.iterate();
    const float first = t.losses().value_loss;
    for (int i = 0; i < 60; ++i) t.iterate();
    const float last = t.losses().value_loss;
    CAPTURE(first);
    CAPTURE(last);
    CHECK(std::isfinite(last));
    CHECK(last < 0.25f * first);
    // The predictions at reset observations (normalized as the trainer does), read through the view: returns below
    // -10 (a standardized head read through symexp would give values near zero).
    const std::vector<float> p(t.params().begin(), t.params().end());
    task::params env{};
    double mean = 0;
    const int probes = 16;
    for (int k = 0; k < probes; ++k) {
      gmi::rng r(99, std::uint64_t(k), 0);
      task::state s;
      task::reset(s, r, env);
      float o[task::obs_dim], on[task::obs_dim], mu[net::dist_dim], head;
      task::observe(s, o, env);
      t.obs_normalizer().view().normalize(o, on);
      net::forward(p.data(), on, mu, &head);
      mean += t.value_normalizer().view().denormalize(0, head) / probes;
    }
    CAPTURE(mean);
    CHECK(mean < -10.0);
  }
}

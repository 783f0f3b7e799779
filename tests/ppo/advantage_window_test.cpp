// ppo_config::advantage_window: advantages normalized by the mean and std of the last K rollouts (rl/advantage_window.hpp)
// instead of the rollout's own. The merge on known records (no forgetting, forgetting, K = 1 untouched), a trainer's
// statistics over its rollouts, the default kept bit for bit, and the refusals.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/core/error.hpp>
#include <gmi/envs/spring_chain.hpp>
#include <gmi/rl/advantage_window.hpp>
#include <gmi/rl/appo.hpp>
#include <gmi/rl/ppo.hpp>

namespace {
using task = gmi::envs::spring_chain;
using net = gmi::agents::gaussian_mlp<gmi::nn::layers<64, 64>>::network<task::obs_dim, task::act_dim>;
using trainer = gmi::rl::ppo_trainer<task, net, gmi::exec::host>;

// [count | mean | M2] of xs, by the two-pass formula.
std::vector<double> record_of(const std::vector<double>& xs) {
  double mean = 0, m2 = 0;
  for (double x : xs) mean += x / double(xs.size());
  for (double x : xs) m2 += (x - mean) * (x - mean);
  return {double(xs.size()), mean, m2};
}

// The raw advantages of t's last rollout.
std::vector<double> advantages(trainer& t) {
  const auto mv = t.minibatch_view(t.iteration() - 1, 0, 0);
  return std::vector<double>(mv.advantages, mv.advantages + mv.total);
}

std::vector<float> params_of(trainer& t) { return {t.params().begin(), t.params().end()}; }
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("ppo.advantage_window.merge_follows_the_window_rule") {
    const std::vector<double> a{1, 2, 3, 6}, b{-4, 0, 2, 10}, c{7, 7, 8, 30};
    std::vector<double> all(a);
    all.insert(all.end(), b.begin(), b.end());
    all.insert(all.end(), c.begin(), c.end());
    // K = 1: the rollout's own record, untouched.
    double held[3] = {0, 0, 0};
    const auto ra = record_of(a), rb = record_of(b), rc = record_of(c);
    CHECK(gmi::rl::advantage_window_take_in(held, ra.data(), 1, 4.0) == ra.data());
    CHECK(held[0] == 0.0);
    // A window of 8 rollouts forgets nothing here: the moments of all twelve samples.
    for (const auto* r : {&ra, &rb, &rc}) gmi::rl::advantage_window_take_in(held, r->data(), 8, 4.0);
    const auto r_all = record_of(all);
    CHECK(held[0] == 12.0);
    CHECK(held[1] == doctest::Approx(r_all[1]).epsilon(1e-12));
    CHECK(held[2] == doctest::Approx(r_all[2]).epsilon(1e-12));
    float stats[2];
    gmi::rl::advantage_window_scale(held, rc.data(), 1, 4.0, stats);  // K = 1: the rollout's scale
    CHECK(stats[0] == float(rc[1]));
    CHECK(stats[1] == doctest::Approx(1.0 / std::sqrt(rc[2] / 3.0)).epsilon(1e-6));
    // A window of 2 rollouts: before c comes in, a and b keep 4 samples' weight (their mean, half their M2).
    double two[3] = {0, 0, 0};
    gmi::rl::advantage_window_take_in(two, ra.data(), 2, 4.0);
    gmi::rl::advantage_window_take_in(two, rb.data(), 2, 4.0);
    gmi::rl::advantage_window_scale(two, rc.data(), 2, 4.0, stats);
    std::vector<double> ab(a);
    ab.insert(ab.end(), b.begin(), b.end());
    const auto r_ab = record_of(ab);
    const double mean = (r_ab[1] + rc[1]) / 2, d = rc[1] - r_ab[1];
    const double m2 = r_ab[2] / 2 + rc[2] + d * d * 4 * 4 / 8;
    CHECK(two[0] == 8.0);
    CHECK(two[1] == doctest::Approx(mean).epsilon(1e-12));
    CHECK(two[2] == doctest::Approx(m2).epsilon(1e-12));
    CHECK(stats[0] == float(two[1]));
    CHECK(stats[1] == doctest::Approx(1.0 / std::sqrt(m2 / 7.0)).epsilon(1e-6));
  }

  TEST_CASE("ppo.advantage_window.trainer_scales_by_its_last_rollouts") {
    // spring_chain, every environment in phase: the second rollout's advantages are scaled by the moments of both
    // rollouts' together. The first rollout has nothing before it, so the first update is the default's bit for bit.
    gmi::rl::ppo_config c;
    c.minibatch = 512;
    c.epochs = 2;
    trainer own(64, 3, c, {}, gmi::exec::host{.threads = 1});
    c.advantage_window = 4;
    trainer window(64, 3, c, {}, gmi::exec::host{.threads = 1});
    own.iterate();
    window.iterate();
    REQUIRE(params_of(own) == params_of(window));
    const auto first = advantages(window);
    const auto s1 = window.minibatch_view(0, 0, 0);
    CHECK(s1.advantage_stats[0] == own.minibatch_view(0, 0, 0).advantage_stats[0]);
    CHECK(s1.advantage_stats[1] == own.minibatch_view(0, 0, 0).advantage_stats[1]);
    own.iterate();
    window.iterate();
    const auto second = advantages(window);
    REQUIRE(second == advantages(own));  // the same rollout (the weights were equal)
    std::vector<double> both(first);
    both.insert(both.end(), second.begin(), second.end());
    const auto r = record_of(both), r2 = record_of(second);
    const auto w = window.minibatch_view(1, 0, 0), o = own.minibatch_view(1, 0, 0);
    CHECK(w.advantage_stats[0] == doctest::Approx(r[1]).epsilon(1e-5));
    CHECK(w.advantage_stats[1] == doctest::Approx(1.0 / std::sqrt(r[2] / (r[0] - 1))).epsilon(1e-5).scale(0));
    CHECK(o.advantage_stats[1] == doctest::Approx(1.0 / std::sqrt(r2[2] / (r2[0] - 1))).epsilon(1e-5).scale(0));
    CHECK(w.advantage_stats[1] != o.advantage_stats[1]);
    CHECK(params_of(own) != params_of(window));
  }

  TEST_CASE("ppo.advantage_window.one_rollout_trains_bit_for_bit_as_before") {
    gmi::rl::ppo_config c;
    c.minibatch = 512;
    c.epochs = 2;
    REQUIRE(c.advantage_window == 1);  // the default
    trainer defaults(64, 7, c, {}, gmi::exec::host{.threads = 1});
    c.advantage_window = 1;
    c.value_normalizer_window = 1048576;  // as the default, spelled out
    trainer off(64, 7, c, {}, gmi::exec::host{.threads = 1});
    for (int i = 0; i < 3; ++i) {
      defaults.iterate();
      off.iterate();
    }
    CHECK(params_of(defaults) == params_of(off));
  }

  TEST_CASE("ppo.advantage_window.bad_values_refused_in_one_line") {
    gmi::rl::ppo_config c;
    c.advantage_window = 0;
    CHECK_THROWS_WITH_AS(c.validate(), "ppo.advantage_window: got 0, need 1..1000000 rollouts (1: each rollout by its own statistics)",
                         gmi::config_error);
    c.advantage_window = 16;
    CHECK_NOTHROW(c.validate());
    gmi::rl::appo_config a;
    a.ppo.advantage_window = 16;
    CHECK_THROWS_WITH_AS(a.validate(), "appo: --advantage-window: got 16, need 1 (the PPO trainer's only)",
                         gmi::config_error);
  }
}

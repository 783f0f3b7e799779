#include <doctest/doctest.h>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/rl/appo.hpp>
#include <gmi/rl/appo_actor.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <vector>

namespace {
using net = gmi::agents::gaussian_mlp<>::network<4, 1>;
using learner = gmi::rl::appo_learner<net, gmi::exec::host>;
using actor = gmi::rl::appo_actor<gmi::envs::cartpole, net, gmi::exec::host>;

gmi::rl::appo_config config(int rollouts) {
  gmi::rl::appo_config c;
  c.rollouts = rollouts;
  c.ppo.minibatch = 2048;
  c.ppo.epochs = 4;
  return c;
}

// The versions an actor acts with: the learner's snapshot `lag` updates back (the newest while fewer exist).
struct lagged_weights {
  int lag;
  std::deque<std::vector<float>> kept;  // newest last
  std::uint64_t newest = 0;
  void publish(learner& l) {
    const auto s = l.snapshot();
    kept.emplace_back(s.begin(), s.end());
    newest = l.version();
    while (kept.size() > static_cast<std::size_t>(lag) + 1) kept.pop_front();
  }
  void load_into(actor& a) const {
    std::copy(kept.front().begin(), kept.front().end(), a.snapshot().begin());
    a.set_version(newest - (kept.size() - 1));
  }
};

struct run_result {
  double best_return = 0;
  double max_abs_log_ratio = 0;  // the largest per-update mean |log pi - log mu|
  std::uint64_t max_lag = 0;
};

// Two actors alternate filling the learner's batch; both act with weights `lag` updates old.
run_result train(int lag, int updates, double stop_at) {
  const int envs = 256, rollouts = 2;
  auto c = config(rollouts);
  c.ppo.schedule = gmi::rl::lr_schedule::adaptive_kl;  // what this small run (2 x 256 envs) was tuned with
  learner l(envs, 1, c);
  actor a0(envs, 11, c.ppo.horizon, c.ppo.gamma, c.ppo.bootstrap_truncation);
  actor a1(envs, 12, c.ppo.horizon, c.ppo.gamma, c.ppo.bootstrap_truncation);
  lagged_weights w{lag, {}, 0};
  w.publish(l);
  run_result r;
  for (int u = 0; u < updates && r.best_return < stop_at; ++u) {
    for (actor* a : {&a0, &a1}) {
      w.load_into(*a);
      r.max_lag = std::max<std::uint64_t>(r.max_lag, l.version() - a->version());
      a->collect();
      l.take(a->records().data());
    }
    l.update();
    r.max_abs_log_ratio = std::max(r.max_abs_log_ratio, l.lag_stats().mean_abs_log_ratio);
    w.publish(l);
    if (u % 5 == 4) {
      auto e0 = a0.episodes(), e1 = a1.episodes();
      const std::uint64_t n = e0.episodes + e1.episodes;
      if (n >= 32) r.best_return = std::max(r.best_return, (e0.return_sum + e1.return_sum) / static_cast<double>(n));
    }
  }
  return r;
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("appo.host.on_policy_actor_has_ratio_one") {
    auto c = config(1);
    learner l(64, 1, c);
    actor a(64, 5, c.ppo.horizon, c.ppo.gamma, c.ppo.bootstrap_truncation);
    const auto s = l.snapshot();
    std::copy(s.begin(), s.end(), a.snapshot().begin());
    a.collect();
    l.take(a.records().data());
    CHECK(l.ready());
    l.update();
    const auto st = l.lag_stats();
    CHECK(st.mean_abs_log_ratio < 1e-5);
    CHECK(st.mean_ratio == doctest::Approx(1.0).epsilon(1e-5));
    CHECK(st.rho_clipped == 0.0);
    CHECK(l.version() == 1);
    const auto lo = l.losses();
    CHECK(std::isfinite(lo.policy_loss));
    CHECK(lo.value_loss > 0);
    // The update moved the weights: the same rollout now has ratios away from 1.
    l.take(a.records().data());
    l.update();
    CHECK(l.lag_stats().mean_abs_log_ratio > 1e-4);
  }

  TEST_CASE("appo.host.bootstrap_row_counts_finished_episodes") {
    auto c = config(1);
    actor a(64, 5, c.ppo.horizon, c.ppo.gamma, c.ppo.bootstrap_truncation);
    double returns = 0;
    std::uint64_t episodes = 0;
    for (int r = 0; r < 8; ++r) {
      a.collect();
      const auto recs = a.records();
      for (int i = 0; i < 64; ++i) {
        const auto& last = recs[static_cast<std::size_t>(c.ppo.horizon) * 64 + i];
        returns += last.reward;
        episodes += last.end;
      }
    }
    const auto e = a.episodes();
    CHECK(episodes > 0);
    CHECK(episodes == e.episodes);
    CHECK(returns == doctest::Approx(e.return_sum).epsilon(1e-5));
  }

  // normalize_before_weights: divided by its weight, every step's advantage is back on the normalized scale (mean
  // 0, std 1 over the batch), the steps pi finds unlikely (rho near 0) included.
  TEST_CASE("appo.host.advantages_normalized_then_weighted") {
    auto c = config(1);
    REQUIRE(c.normalize_before_weights);  // the default
    c.ppo.learning_rate = 3e-3f;  // move the learner well away from the actor's weights
    learner l(64, 1, c);
    actor a(64, 5, c.ppo.horizon, c.ppo.gamma, c.ppo.bootstrap_truncation);
    const auto s = l.snapshot();
    std::copy(s.begin(), s.end(), a.snapshot().begin());
    a.collect();
    for (int u = 0; u < 6; ++u) {
      l.take(a.records().data());
      l.update();
    }
    const auto st = l.lag_stats();
    MESSAGE("mean |log pi - log mu| " << st.mean_abs_log_ratio << ", rho clipped " << st.rho_clipped);
    REQUIRE(st.mean_abs_log_ratio > 0.05);  // the weights vary
    const auto [adv, w] = l.last_advantages();
    REQUIRE(adv.size() == w.size());
    double sum = 0, sumsq = 0, below = 0;
    for (std::size_t i = 0; i < adv.size(); ++i) {
      REQUIRE(w[i] > 0.0f);
      CHECK(w[i] <= c.rho_bar);
      below += w[i] < 0.9f;
      const double u = adv[i] / w[i];
      sum += u;
      sumsq += u * u;
    }
    const double n = static_cast<double>(adv.size()), mean = sum / n;
    CHECK(below > 0);
    CHECK(std::fabs(mean) < 1e-4);
    CHECK(std::sqrt((sumsq - n * mean * mean) / (n - 1)) == doctest::Approx(1.0).epsilon(1e-3));
  }

  // normalize_before_weights off (Sample Factory's way): the advantages themselves have mean 0, std 1.
  TEST_CASE("appo.host.advantages_weighted_then_normalized") {
    auto c = config(1);
    c.normalize_before_weights = false;
    learner l(64, 1, c);
    actor a(64, 5, c.ppo.horizon, c.ppo.gamma, c.ppo.bootstrap_truncation);
    a.collect();
    l.take(a.records().data());
    l.update();
    const auto adv = l.last_advantages().advantages;
    double sum = 0, sumsq = 0;
    for (float x : adv) {
      sum += x;
      sumsq += static_cast<double>(x) * x;
    }
    const double n = static_cast<double>(adv.size()), mean = sum / n;
    CHECK(std::fabs(mean) < 1e-4);
    CHECK(std::sqrt((sumsq - n * mean * mean) / (n - 1)) == doctest::Approx(1.0).epsilon(1e-3));
  }

  TEST_CASE("appo.host.take_and_update_refuse_misuse") {
    auto c = config(2);
    learner l(8, 1, c);
    actor a(8, 5, c.ppo.horizon, c.ppo.gamma, c.ppo.bootstrap_truncation);
    a.collect();
    l.take(a.records().data());
    CHECK_THROWS_WITH_AS(l.update(), "appo update: rollouts taken: got 1, need 2 (appo.rollouts)", gmi::config_error);
    l.take(a.records().data());
    CHECK_THROWS_AS(l.take(a.records().data()), gmi::config_error);
    c.c_bar = 2.0f;
    CHECK_THROWS_AS(learner(8, 1, c), gmi::config_error);
  }

  // A data-parallel group (appo_sync) sums on the device: a host learner refuses one, and a sync with a field
  // missing or out of range is named.
  TEST_CASE("appo.host.sync_refused_or_named") {
    gmi::rl::appo_sync s;
    s.world = 2;
    s.rank = 1;
    CHECK_THROWS_WITH_AS(s.validate(), "appo_sync.sum_floats: got none, need a callable (the gradient row's sum)",
                         gmi::config_error);
    s.sum_floats = [](float*, std::size_t, CUstream_st*) {};
    CHECK_THROWS_WITH_AS(s.validate(), "appo_sync.sum_doubles: got none, need a callable (the moments' sum)",
                         gmi::config_error);
    s.sum_doubles = [](double*, std::size_t, CUstream_st*) {};
    CHECK_NOTHROW(s.validate());
    s.rank = 2;
    CHECK_THROWS_WITH_AS(s.validate(), "appo_sync.rank: got 2, need 0..1 (world 2)", gmi::config_error);
    s.rank = 0;
    learner l(8, 1, config(1));
    CHECK_THROWS_WITH_AS(l.set_sync(s), "appo set_sync on: got \"exec::host\", need exec::cuda (the group sums on the device)",
                         gmi::config_error);
  }

  TEST_CASE("appo.host.snapshot_carries_weights_and_normalizers") {
    auto c = config(1);
    learner l(32, 1, c);
    actor a(32, 5, c.ppo.horizon, c.ppo.gamma, c.ppo.bootstrap_truncation);
    a.collect();
    l.take(a.records().data());
    l.update();
    const auto s = l.snapshot();
    using layout = learner::layout;
    REQUIRE(s.size() == layout::size);
    const auto p = l.params();
    CHECK(std::equal(p.begin(), p.end(), s.begin()));
    const auto on = l.obs_normalizer().view();
    for (int k = 0; k < 4; ++k) {
      CHECK(s[layout::obs_mean + k] == on.mean[k]);
      CHECK(s[layout::obs_std + k] == on.std[k]);
    }
    CHECK(s[layout::obs_std] != 1.0f);  // the statistics took in the batch
  }

  // The learning check: actors act with weights 3 updates old (a lag that is real: the ratios move away from 1),
  // V-trace corrects, and the pole gets balanced.
  TEST_CASE("appo.host.lagged_actors_solve_cartpole" * doctest::timeout(560)) {
    const run_result r = train(3, 200, 450);
    MESSAGE("lag 3: best mean return " << r.best_return << ", max lag " << r.max_lag << ", max mean |log ratio| "
                                       << r.max_abs_log_ratio);
    CHECK(r.max_lag == 3);
    CHECK(r.max_abs_log_ratio > 1e-3);
    CHECK(r.best_return >= 450);
    // Control: actors with the newest weights see ratios of 1 at every update's evaluation.
    const run_result fresh = train(0, 3, 1e9);
    CHECK(fresh.max_lag == 0);
    CHECK(fresh.max_abs_log_ratio < 1e-5);
  }
}

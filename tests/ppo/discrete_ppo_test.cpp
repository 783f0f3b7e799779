// PPO with a categorical agent on a task with discrete actions (cartpole_discrete, Gym's CartPole-v1 rules): the
// return rises from the random policy's ~22 within a small host budget, the actions stored are indices, and the
// trainer saves no log_std.
#include <doctest/doctest.h>

#include <gmi/agents/categorical_mlp.hpp>
#include <gmi/envs/cartpole_discrete.hpp>
#include <gmi/rl/appo.hpp>
#include <gmi/rl/appo_actor.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/rl/ppo_eval.hpp>

#include "grid_walk.hpp"  // examples/grid_walk: five actions

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace {
using task = gmi::envs::cartpole_discrete;
using net = gmi::agent_network<gmi::agents::categorical_mlp<>, task>;
using trainer = gmi::rl::ppo_trainer<task, net, gmi::exec::host>;
static_assert(net::discrete && net::dist_dim == 2 && net::act_dim == 1);
static_assert(gmi::agent_fits_env<gmi::agents::categorical_mlp<>, task>());

gmi::rl::ppo_config small_config() {
  gmi::rl::ppo_config c;
  c.minibatch = 1024;
  c.epochs = 4;
  return c;
}

using walk_net = gmi::agent_network<gmi::agents::categorical_mlp<gmi::nn::layers<64, 64>>, grid_walk>;
using walk_trainer = gmi::rl::ppo_trainer<grid_walk, walk_net, gmi::exec::host>;
static_assert(walk_net::discrete && walk_net::dist_dim == 5 && walk_net::act_dim == 1);
}  // namespace

TEST_SUITE("cpu") {
  // 100 iterations of 256 envs x 16 steps (410 k env steps): seeds 1-4 reach a windowed mean return of 150-360
  // (a random policy: ~22); a wrong sign or a lost term in the logits' gradient stays near the random policy.
  TEST_CASE("ppo.discrete.categorical_ppo_learns_cartpole_discrete" * doctest::timeout(120)) {
    trainer t(256, 1, small_config());
    double first = 0, best = 0;
    for (int it = 0; it < 100; ++it) {
      t.iterate();
      if (it % 10 == 9) {
        const auto e = t.episodes();
        if (it == 9) first = e.mean_return();
        if (e.episodes >= 16) best = std::max(best, e.mean_return());
      }
    }
    MESSAGE("categorical PPO on cartpole_discrete: mean return " << first << " after 10 iterations, best " << best
                                                                 << " after " << t.iteration());
    CHECK(first < 60);
    CHECK(best >= 150);
  }

  TEST_CASE("ppo.discrete.actions_are_indices_and_no_log_std") {
    trainer t(32, 2, small_config());
    t.iterate();
    const auto v = t.rollout_view();
    int ones = 0;
    for (int k = 0; k < 32 * t.config().horizon; ++k) {
      const float a = v.actions[k];
      REQUIRE((a == 0.0f || a == 1.0f));
      ones += a == 1.0f;
    }
    CHECK(ones > 0);
    CHECK(ones < 32 * t.config().horizon);
    const auto ck = t.policy_tensors();
    CHECK_FALSE(ck.contains("log_std"));
    CHECK(ck.contains("heads.weight"));
    CHECK(t.losses().entropy == doctest::Approx(0.693).epsilon(0.02));  // two near-equal logits at the start
  }

  // The split layout's learner and actor take the categorical network too: an actor's rollout evaluated with the
  // learner's own weights has log-ratio 0, and an update moves the weights with finite losses.
  TEST_CASE("ppo.discrete.appo_learner_and_actor_run_the_categorical_policy") {
    using learner = gmi::rl::appo_learner<net, gmi::exec::host>;
    using actor = gmi::rl::appo_actor<task, net, gmi::exec::host>;
    gmi::rl::appo_config c;
    c.rollouts = 1;
    c.ppo.minibatch = 256;
    c.ppo.epochs = 2;
    learner l(32, 1, c);
    actor a(32, 5, c.ppo.horizon, c.ppo.gamma, c.ppo.bootstrap_truncation);
    const auto s = l.snapshot();
    std::copy(s.begin(), s.end(), a.snapshot().begin());
    a.set_version(l.version());
    a.collect();
    for (std::size_t k = 0; k < a.rollout_records(); ++k) {
      const float act = a.records()[k].action[0];
      REQUIRE((act == 0.0f || act == 1.0f));
    }
    const std::vector<float> before(l.snapshot().begin(), l.snapshot().end());
    l.take(a.records().data());
    l.update();
    CHECK(l.lag_stats().mean_abs_log_ratio == doctest::Approx(0.0).epsilon(1e-6).scale(1e-6));
    const auto losses = l.losses();
    CHECK(std::isfinite(losses.policy_loss));
    CHECK(std::isfinite(losses.value_loss));
    CHECK(losses.entropy == doctest::Approx(0.693).epsilon(0.02));
    CHECK(std::vector<float>(l.snapshot().begin(), l.snapshot().end()) != before);
  }

  // More than two actions, end to end: every index 0..4 is drawn and stored as itself, the stored log-probability
  // is that of the stored index under the logits the rollout's weights give, the first entropy is ln 5, and PPO
  // climbs from the random policy's ~-29 to near a greedy walker's ~-3.1 in 60 iterations of 256 envs x 16 steps
  // (246 k env steps), training return and deterministic evaluation (the mode: the largest logit) alike. A head that
  // mixed up indices, dropped the last logit or took the mode of the wrong row stays far from the walker.
  TEST_CASE("ppo.discrete.categorical_ppo_learns_a_five_action_walk" * doctest::timeout(300)) {
    const double greedy = grid_walk::mean_return([](const float* o, gmi::rng&) { return grid_walk::greedy(o); });
    const double random = grid_walk::mean_return([](const float*, gmi::rng& r) { return grid_walk::cell(r, 5); });
    REQUIRE(greedy > -3.5);
    REQUIRE(random < -20);
    walk_trainer t(256, 3, small_config());
    const std::vector<float> first_params(t.params().begin(), t.params().end());
    t.iterate();
    CHECK(t.losses().entropy == doctest::Approx(std::log(5.0)).epsilon(0.01));
    const auto v = t.rollout_view();
    std::array<int, 5> hits{};
    const int n = 256 * t.config().horizon;
    for (int k = 0; k < n; ++k) {
      const float a = v.actions[k];
      REQUIRE(a == std::floor(a));
      REQUIRE(a >= 0.0f);
      REQUIRE(a <= 4.0f);
      ++hits[static_cast<std::size_t>(a)];
      if (k % 97 == 0) {  // the log-probability stored is the index's under the collecting weights (raw obs: the
                          // first rollout's normalizer is still the identity)
        float logits[5], value;
        walk_net::forward(first_params.data(), v.obs + std::size_t(k) * 4, logits, &value);
        CHECK(v.log_probs[k] == doctest::Approx(walk_net::log_prob(nullptr, logits, &a)).epsilon(1e-4));
      }
    }
    for (int h : hits) CHECK(h > n / 10);  // near-uniform at the start: about n / 5 each
    double last = -1e9;
    for (int it = 1; it < 60; ++it) {
      t.iterate();
      if (it % 10 == 9) last = t.episodes().mean_return();
    }
    const auto e = gmi::rl::evaluate_mode(t, 256);
    MESSAGE("five-action walk: greedy " << greedy << ", random " << random << ", PPO training " << last
                                        << ", deterministic " << e.mean_return << " after " << t.iteration());
    CHECK(last > -6.0);
    CHECK(e.mean_return > -4.5);
  }
}

// PPO with a categorical agent on a task with discrete actions (cartpole_discrete, Gym's CartPole-v1 rules): the
// return rises from the random policy's ~22 within a small host budget, the actions stored are indices, and the
// trainer saves no log_std.
#include <doctest/doctest.h>

#include <gmi/agents/categorical_mlp.hpp>
#include <gmi/envs/cartpole_discrete.hpp>
#include <gmi/rl/appo.hpp>
#include <gmi/rl/appo_actor.hpp>
#include <gmi/rl/ppo.hpp>

#include <algorithm>
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
}

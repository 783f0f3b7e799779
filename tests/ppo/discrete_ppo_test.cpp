// PPO with a categorical agent on a task with discrete actions (cartpole_discrete, Gym's CartPole-v1 rules): the
// return rises from the random policy's ~22 within a small host budget, the actions stored are indices, and the
// trainer saves no log_std.
#include <doctest/doctest.h>

#include <gmi/agents/categorical_mlp.hpp>
#include <gmi/envs/cartpole_discrete.hpp>
#include <gmi/rl/ppo.hpp>

#include <algorithm>
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
}

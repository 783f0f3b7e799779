// n-step returns (sac_config::n_step, rl/sac_nstep.hpp): the fold of one environment's window, cut where an episode
// ends, and the host trainer's table holding the folded transitions of what a one-step trainer collects.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/rl/sac.hpp>
#include <gmi/rl/sac_config.hpp>
#include <gmi/rl/sac_nstep.hpp>

#include "sac/nstep_expect.hpp"

namespace {
using namespace gmi;

// A ring of n = 3 slots for 3 environments (obs and action 1 wide), filled from rows [slot][env].
struct small_ring {
  static constexpr int n = 3;
  static constexpr std::size_t envs = 3;
  using layout = rl::sac_nstep::ring_layout<1, 1>;
  std::vector<float> data = std::vector<float>(layout::floats_for(n * envs), 0.0f);
  void set(int slot, std::size_t env, float obs, float act, float rew, float next, float term, float ended) {
    const float v[6] = {obs, act, rew, next, term, ended};
    for (int c = 0; c < 6; ++c) data[layout::offset(c, n * envs) + std::size_t(slot) * envs + env] = v[c];
  }
};

TEST_CASE("sac.nstep.fold_sums_rewards_and_cuts_at_episode_ends") {
  small_ring r;
  const float g = 0.5f;
  // Oldest slot 1 (the ring wrapped): the window is slots 1, 2, 0.
  // env 0: no end: R = 1 + 0.5 * 2 + 0.25 * 4 = 3, next from slot 0, terminated column 1 - 0.25.
  r.set(1, 0, 10, 11, 1, 101, 0, 0);
  r.set(2, 0, 20, 21, 2, 102, 0, 0);
  r.set(0, 0, 30, 31, 4, 103, 0, 0);
  // env 1: terminated at its second step: R = 1 + 0.5 * 8, next from slot 2, terminated 1 (no bootstrap).
  r.set(1, 1, 40, 41, 1, 104, 0, 0);
  r.set(2, 1, 50, 51, 8, 105, 1, 1);
  r.set(0, 1, 60, 61, 16, 106, 0, 0);  // the next episode's: not summed
  // env 2: truncated at its first step (a time limit): R = 3, next from slot 1, terminated 0 (bootstrap, gamma^1).
  r.set(1, 2, 70, 71, 3, 107, 0, 1);
  r.set(2, 2, 80, 81, 5, 108, 0, 0);
  r.set(0, 2, 90, 91, 7, 109, 0, 0);
  const auto v = small_ring::layout::view(r.data.data(), small_ring::envs, small_ring::n);
  std::vector<float> obs(3), act(3), rew(3), next(3), term(3);
  for (std::size_t i = 0; i < 3; ++i)
    rl::sac_nstep::fold<1, 1>(v, i, 1, g, obs.data(), act.data(), rew.data(), next.data(), term.data());
  CHECK(obs == std::vector<float>{10, 40, 70});
  CHECK(act == std::vector<float>{11, 41, 71});
  CHECK(rew == std::vector<float>{3.0f, 5.0f, 3.0f});
  CHECK(next == std::vector<float>{103, 105, 107});
  CHECK(term == std::vector<float>{0.75f, 1.0f, 0.0f});
  // The unchanged soft target r + gamma (1 - terminated) V reads as R + gamma^m (1 - terminated_m) V.
  CHECK(g * (1.0f - term[0]) == doctest::Approx(g * g * g));
  CHECK(rl::sac_nstep::oldest_slot(7, 3) == 1);
  CHECK(rl::sac_nstep::slot_of(6, 3) == 0);
}

TEST_CASE("sac.nstep.refusals_name_the_field") {
  rl::sac_config c;
  c.n_step = 0;
  CHECK_THROWS_WITH_AS(c.validate(), "sac.n_step: got 0, need 1..32", config_error);
  c.n_step = 33;
  CHECK_THROWS_AS(c.validate(), config_error);
  c.n_step = 3;
  CHECK_NOTHROW(c.validate());
  // Split roles send one-step transitions: an actor or learner with n_step > 1 refuses them.
  rl::sac_trainer<envs::pendulum, rl::sac_networks<3, 1, 8>> t(c, 2, 1);
  std::vector<float> rows;
  CHECK_THROWS_WITH_AS(t.collect_packed(true, rows),
                       "sac_trainer::collect_packed with sac.n_step: got 3, need 1 (split roles send one-step transitions)",
                       config_error);
}

// Two trainers of one seed collect the same steps (uniform actions through the warm-up); the one with n_step 3 holds
// back 2 vector steps and stores, row for row, the fold of the one-step trainer's transitions, episodes (time limit
// 4 steps) cut where they end.
TEST_CASE("sac.nstep.trainer_table_holds_folded_transitions") {
  constexpr int N = 3;
  constexpr std::size_t envs = 2, steps = 7;
  rl::sac_config c;
  c.batch = 4;
  c.warmup_steps = 64;  // no update: only collection
  c.replay_capacity = 64;
  c.gamma = 0.9f;
  envs::pendulum::params p;
  p.max_steps = 4;
  using trainer = rl::sac_trainer<envs::pendulum, rl::sac_networks<3, 1, 8>>;
  trainer one(c, int(envs), 5, p);
  c.n_step = N;
  trainer three(c, int(envs), 5, p);
  one.train(steps * envs);
  three.train(steps * envs);
  REQUIRE(one.inserted() == steps * envs);
  REQUIRE(three.inserted() == (steps - N + 1) * envs);
  CHECK(three.env_steps() == steps * envs);
  CHECK(three.updates() == 0);
  const auto r = sac_test::compare_nstep(one.table().take_snapshot(), three.table().take_snapshot(), N, envs, steps,
                                        4, c.gamma, 3, 1);
  CHECK(r.compared == (steps - N + 1) * envs);
  CHECK(r.cut > 0);  // some windows met an episode's end
  CHECK(r.worst < 1e-5);
}

}  // namespace

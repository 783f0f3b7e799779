// Data-parallel SAC learners (rl::sac_sync): host GMIs as threads of runtime::thread_group, the gradient sums
// through runtime::context::allreduce, as pipeline/offpolicy_gmis.cuh runs them.
#include <doctest/doctest.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/pipeline/offpolicy_split.hpp>
#include <gmi/rl/sac.hpp>
#include <gmi/rl/sac_sync.hpp>
#include <gmi/runtime/launcher.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace {
using namespace gmi;
using nets = rl::sac_networks<3, 1, 16>;
using trainer = rl::sac_trainer<envs::pendulum, nets>;

rl::sac_config small_config() {
  rl::sac_config c;
  c.batch = 32;
  c.warmup_steps = 64;
  c.replay_capacity = 2000;
  return c;
}

struct learner_state {
  std::vector<float> weights;  // actor, critics, targets
  std::vector<float> first_obs;  // the first transition this learner stored
  std::uint64_t updates = 0;
  float alpha = 0;
};

std::vector<float> weights_of(const trainer& t) {
  std::vector<float> w;
  const auto add = [&](auto s) { w.insert(w.end(), s.data(), s.data() + s.size()); };
  add(t.actor_params());
  for (int k = 0; k < 2; ++k) add(t.critic_params(k));
  for (int k = 0; k < 2; ++k) add(t.target_params(k));
  return w;
}

// `gmis` learners, env seed 100 + rank, `env_steps` each; synced when asked.
std::vector<learner_state> run_learners(int gmis, std::size_t env_steps, bool synced) {
  std::vector<learner_state> out(static_cast<std::size_t>(gmis));
  runtime::thread_group g(runtime::launch_spec::uniform(0, gmis), [&](runtime::context& ctx) {
    trainer t(small_config(), 2, 100 + static_cast<std::uint64_t>(ctx.rank()), {}, exec::host{1});
    if (synced) {
      rl::sac_sync s;
      s.rank = ctx.rank();
      s.world = ctx.world();
      s.sum = [&ctx](std::span<float> v) { ctx.allreduce(v, ctx.all()); };
      t.set_sync(s);
    }
    t.train(env_steps);
    auto& mine = out[static_cast<std::size_t>(ctx.rank())];
    mine.weights = weights_of(t);
    mine.updates = t.updates();
    mine.alpha = t.alpha();
    replay::host_batch b;
    t.table().sample(replay::sampler::fifo(), 1, 1, 0, b);  // fifo: the oldest item
    mine.first_obs.assign(b.column<float>(0), b.column<float>(0) + 3);
  });
  (void)g.wait_or_throw();
  return out;
}
}  // namespace

TEST_SUITE("cpu") {
  // Two learners on their own environments and replay shards: after hundreds of averaged updates every weight
  // (actor, both critics, both targets) and the temperature are the same bits on both.
  TEST_CASE("sac.data_parallel.weights_bitwise_equal_after_updates") {
    const auto r = run_learners(2, 400, true);
    REQUIRE(r[0].updates == r[1].updates);
    CHECK(r[0].updates >= 300);
    REQUIRE(r[0].weights.size() == r[1].weights.size());
    CHECK(std::memcmp(r[0].weights.data(), r[1].weights.data(), r[0].weights.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(&r[0].alpha, &r[1].alpha, sizeof(float)) == 0);
    // The shards hold different data (their own environments), so equality comes from the averaging.
    CHECK(r[0].first_obs != r[1].first_obs);
  }

  // The same learners without the sync drift apart: the check above can fail.
  TEST_CASE("sac.data_parallel.unsynced_learners_differ") {
    const auto r = run_learners(2, 200, false);
    REQUIRE(r[0].weights.size() == r[1].weights.size());
    CHECK(std::memcmp(r[0].weights.data(), r[1].weights.data(), r[0].weights.size() * sizeof(float)) != 0);
  }

  // Joining after the first update, a rank outside the group or a group without a sum: one line each.
  TEST_CASE("sac.data_parallel.bad_sync_refused") {
    trainer t(small_config(), 2, 1, {}, exec::host{1});
    rl::sac_sync s;
    s.world = 2;
    s.rank = 2;
    s.sum = [](std::span<float>) {};
    CHECK_THROWS_WITH_AS(t.set_sync(s), "sac_sync.rank: got 2, need 0..1", gmi::config_error);
    s.rank = 0;
    s.sum = nullptr;
    CHECK_THROWS_WITH_AS(t.set_sync(s), doctest::Contains("sac_sync.sum for a group of: got 2"), gmi::config_error);
    t.train(64);
    REQUIRE(t.updates() > 0);
    s.sum = [](std::span<float>) {};
    CHECK_THROWS_WITH_AS(t.set_sync(s), doctest::Contains("sac_trainer::set_sync after updates: got 2"),
                         gmi::config_error);
  }

  // Split roles: an actor's packed transitions land in the learner's table column by column, in order, and count as
  // the learner's env steps; a message of the wrong size is refused with one line.
  TEST_CASE("sac.split_roles.packed_transitions_reach_the_learner") {
    rl::sac_config c = small_config();
    trainer actor(c, 3, 7, {}, exec::host{1});
    trainer learner(c, 1, 8, {}, exec::host{1});
    std::vector<float> rows;
    for (int t = 0; t < 12; ++t) actor.collect_packed(true, rows);
    REQUIRE(rows.size() == 36 * trainer::packed_width);
    CHECK(actor.env_steps() == 36);
    CHECK(actor.table().size() == 0);  // an actor keeps no replay
    learner.insert_packed(1, rows, 3, 12);  // 36 >= the batch, so the table may be sampled
    CHECK(learner.env_steps() == 36);
    REQUIRE(learner.table().size() == 36);
    replay::host_batch b;
    learner.table().sample(replay::sampler::fifo(), 36, 1, 0, b);
    // fifo gives the oldest first; within one insert, env after env then step after step: find each row.
    std::size_t found = 0;
    for (std::size_t k = 0; k < 36; ++k) {
      const float* r = rows.data() + k * trainer::packed_width;
      for (std::size_t i = 0; i < 36; ++i) {
        const bool same = std::memcmp(b.column<float>(0) + i * 3, r, 3 * sizeof(float)) == 0 &&
                          b.column<float>(1)[i] == r[3] && b.column<float>(2)[i] == r[4] &&
                          std::memcmp(b.column<float>(3) + i * 3, r + 5, 3 * sizeof(float)) == 0 &&
                          b.column<float>(4)[i] == r[8];
        if (same) {
          ++found;
          break;
        }
      }
    }
    CHECK(found == 36);
    CHECK(learner.updates() == 0);  // 36 transitions: still warming up (64)
    CHECK_THROWS_WITH_AS(learner.insert_packed(1, std::span<const float>(rows.data(), 10), 3, 12),
                         "sac_trainer::insert_packed rows: got 10, need 324 (36 transitions)", gmi::config_error);
    // The actor takes the learner's weights.
    const auto p = learner.actor_params();
    actor.set_actor_params(std::span<const float>(p.data(), p.size()));
    CHECK(std::memcmp(actor.actor_params().data(), p.data(), p.size() * sizeof(float)) == 0);
  }

  // The roles of an off-policy run's GMIs (host and GPU GMIs alike): all learners unless split; split, GMI 0 learns
  // and every other GMI acts with a replay of warmup_steps items; split roles with one GMI, or a rank outside the
  // run, refused with one line.
  TEST_CASE("sac.split_roles.role_assignment") {
    using gmi::detail::offpolicy_role;
    using gmi::detail::offpolicy_role_of;
    for (int world : {1, 2, 4}) {
      for (int r = 0; r < world; ++r) CHECK(offpolicy_role_of(r, world, false) == offpolicy_role::learner);
    }
    for (int world : {2, 3, 8}) {
      int learners = 0;
      for (int r = 0; r < world; ++r) learners += offpolicy_role_of(r, world, true) == offpolicy_role::learner;
      CHECK(learners == 1);
      CHECK(offpolicy_role_of(0, world, true) == offpolicy_role::learner);
      CHECK(offpolicy_role_of(world - 1, world, true) == offpolicy_role::actor);
    }
    CHECK(std::string(gmi::detail::name_of(offpolicy_role_of(1, 2, true))) == "actor");
    CHECK_THROWS_WITH_AS((void)offpolicy_role_of(0, 1, true),
                         "--split-roles with GMIs: got 1, need >= 2 (GMI 0 learns, the others act)", gmi::config_error);
    CHECK_THROWS_WITH_AS((void)offpolicy_role_of(3, 3, false), doctest::Contains("off-policy GMI rank: got 3, need 0 .. 2"),
                         gmi::config_error);
    rl::sac_config c = small_config();
    c.replay_capacity = 100000;
    const rl::sac_config a = gmi::detail::split_actor_config(c);
    CHECK(a.replay_capacity == c.warmup_steps);
    CHECK(a.batch == c.batch);
    a.validate();
  }
}

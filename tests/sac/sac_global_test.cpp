// Global sampling over data-parallel SAC learners (rl/sac_global.hpp): host learners as threads of
// runtime::thread_group with tables of different sizes, each update one uniform sample over the union of the tables
// through a replay::group_board in a shared-memory segment; each learner's draws against its tables' share of the
// items (chi-square), the weights the same bits on every learner, a share of 0 contributing nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <gmi/comm/shm_segment.hpp>
#include <gmi/core/error.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/rl/sac.hpp>
#include <gmi/rl/sac_global.hpp>
#include <gmi/runtime/launcher.hpp>
#include <gmi/runtime/supervisor.hpp>

#include "replay/support.hpp"

namespace {
using namespace gmi;
using trainer = rl::sac_trainer<envs::pendulum, rl::sac_networks<3, 1, 16>>;

struct global_learner {
  std::vector<float> weights;  // actor and both critics
  rl::sac_global_counts draws;
  std::uint64_t updates = 0;
  std::size_t table = 0;
};

// Two learners (2 environments each, seeds 100 + rank), learner k keeping capacity[k] transitions, globally sampled.
std::vector<global_learner> run_global(const std::vector<std::size_t>& capacity, int batch, std::size_t env_steps) {
  const std::string tag = comm::unique_tag("sac-global-test");
  std::vector<global_learner> out(capacity.size());
  runtime::thread_group g(runtime::launch_spec::uniform(0, int(capacity.size())), [&](runtime::context& ctx) {
    const auto r = std::size_t(ctx.rank());
    rl::sac_config c;
    c.batch = batch;
    c.warmup_steps = 64;
    c.replay_capacity = capacity[r];
    trainer t(c, 2, 100 + r, {}, exec::host{1});
    rl::sac_global_board board(tag, ctx.rank(), ctx.world(), 7, std::chrono::seconds(30));
    rl::sac_sync s;
    s.rank = ctx.rank();
    s.world = ctx.world();
    s.sum = [&ctx](std::span<float> v) { ctx.allreduce(v, ctx.all()); };
    t.set_sync(board.hook(s));
    t.train(env_steps);
    auto& mine = out[r];
    const auto add = [&](auto p) { mine.weights.insert(mine.weights.end(), p.data(), p.data() + p.size()); };
    add(t.actor_params());
    add(t.critic_params(0));
    add(t.critic_params(1));
    mine.draws = t.global_draws();
    mine.updates = t.updates();
    mine.table = t.table().size();
    ctx.barrier(ctx.all());  // learner 0's segment outlives every learner's last round
  });
  (void)g.wait_or_throw();
  return out;
}

// Pearson's statistic of two learners' draws against their expected draws, and against even shares.
std::pair<double, double> chi2_of(const std::vector<global_learner>& r) {
  const double total = r[0].draws.drawn + r[1].draws.drawn;
  double x = 0, even = 0;
  for (const auto& l : r) {
    x += (l.draws.drawn - l.draws.expected) * (l.draws.drawn - l.draws.expected) / l.draws.expected;
    even += (l.draws.drawn - total / 2) * (l.draws.drawn - total / 2) / (total / 2);
  }
  return {x, even};
}
}  // namespace

TEST_SUITE("cpu") {
  // Tables of at most 300 and 4000 transitions after 1500 env steps each (300 and 1500 items at the end): the draws
  // split by the items (chi-square, 1 degree of freedom, tail 1e-4), far off against even shares; each update's
  // draws add up to the group's 2 x 32; the weights the same bits on both learners.
  TEST_CASE("sac.global_sampling.draws_follow_table_sizes") {
    const auto r = run_global({300, 4000}, 32, 1500);
    const auto [x, even] = chi2_of(r);
    std::printf("sac global sampling: tables %zu and %zu, %llu updates, draws %.0f (expected %.1f) and %.0f "
                "(expected %.1f), chi-square %.2f (even shares %.0f)\n",
                r[0].table, r[1].table, static_cast<unsigned long long>(r[0].updates), r[0].draws.drawn,
                r[0].draws.expected, r[1].draws.drawn, r[1].draws.expected, x, even);
    CHECK(r[0].table == 300);
    CHECK(r[1].table == 1500);
    REQUIRE(r[0].updates == r[1].updates);
    CHECK(r[0].updates >= 1000);
    CHECK(r[0].draws.updates == r[0].updates);
    CHECK(r[0].draws.drawn + r[1].draws.drawn == double(r[0].updates) * 64.0);
    CHECK(x < replay_test::chi2_critical(1));
    CHECK(even > 10 * replay_test::chi2_critical(1));
    CHECK(r[0].weights == r[1].weights);
  }

  // A table of 64 next to one of up to 20000 with a group batch of 2 x 8: about half the updates give the small
  // table's learner no draws (it contributes zero gradients and still steps with the group's mean): the weights
  // stay the same bits, the draws still follow the items.
  TEST_CASE("sac.global_sampling.empty_share_contributes_nothing") {
    const auto r = run_global({64, 20000}, 8, 1200);
    const auto [x, even] = chi2_of(r);
    std::printf("sac global sampling: %llu updates, %llu with no draws on learner 0; draws %.0f (expected %.1f), "
                "chi-square %.2f\n",
                static_cast<unsigned long long>(r[0].updates),
                static_cast<unsigned long long>(r[0].draws.empty_updates), r[0].draws.drawn, r[0].draws.expected, x);
    CHECK(r[0].draws.empty_updates > r[0].updates / 10);
    CHECK(r[1].draws.empty_updates < r[0].draws.empty_updates);
    CHECK(x < replay_test::chi2_critical(1));
    CHECK(r[0].weights == r[1].weights);
  }

  // The weighting is the union's mean: a group of 2 whose plan always gives learner 0 every one of the 2 x 32
  // draws (seeded as a lone learner seeds its batches) and learner 1 none takes, update for update, the steps of a
  // lone learner of batch 64 with learner 0's seed: the same bits (x 64 / 32, a sum with zeros and / 2 are exact).
  TEST_CASE("sac.global_sampling.all_draws_on_one_learner_equal_a_lone_learner") {
    rl::sac_config c;
    c.batch = 32;
    c.warmup_steps = 64;
    c.replay_capacity = 2000;
    std::vector<float> group_weights;
    std::uint64_t group_updates = 0;
    runtime::thread_group g(runtime::launch_spec::uniform(0, 2), [&](runtime::context& ctx) {
      trainer t(c, 2, ctx.rank() == 0 ? 100 : 200, {}, exec::host{1});
      rl::sac_sync s;
      s.rank = ctx.rank();
      s.world = ctx.world();
      s.sum = [&ctx](std::span<float> v) { ctx.allreduce(v, ctx.all()); };
      std::uint64_t update = 0;
      const bool first = ctx.rank() == 0;
      s.share = [&update, first](std::size_t, std::size_t draws) {
        return rl::sac_share{first ? draws : 0, 100 * 0x9E3779B97F4A7C15ull + update++, first ? 1.0 : 0.0};
      };
      t.set_sync(s);
      t.train(600);
      if (first) {
        const auto add = [&](auto p) { group_weights.insert(group_weights.end(), p.data(), p.data() + p.size()); };
        add(t.actor_params());
        add(t.critic_params(0));
        add(t.critic_params(1));
        group_updates = t.updates();
      }
    });
    (void)g.wait_or_throw();
    rl::sac_config lone_config = c;
    lone_config.batch = 64;
    trainer lone(lone_config, 2, 100, {}, exec::host{1});
    const std::vector<float> initial(lone.actor_params().begin(), lone.actor_params().end());
    lone.train(600);
    std::vector<float> lone_weights;
    const auto add = [&](auto p) { lone_weights.insert(lone_weights.end(), p.data(), p.data() + p.size()); };
    add(lone.actor_params());
    add(lone.critic_params(0));
    add(lone.critic_params(1));
    CHECK(group_updates == lone.updates());
    CHECK(group_updates >= 500);
    CHECK(!std::equal(initial.begin(), initial.end(), lone_weights.begin()));
    CHECK(group_weights == lone_weights);
  }

  TEST_CASE("sac.global_sampling.refusals") {
    const auto message = [](auto call) -> std::string {
      try {
        call();
      } catch (const gmi::error& e) {
        return e.what();
      }
      return "no error";
    };
    CHECK(message([] { rl::sac_global_board b(comm::unique_tag("sac-g"), 0, 1, 1, std::chrono::seconds(1)); }) ==
          "sac global sampling learners: got 1, need 2..256 (data-parallel learners)");
    CHECK(message([] { rl::sac_global_board b(comm::unique_tag("sac-g"), 2, 2, 1, std::chrono::seconds(1)); }) ==
          "sac global sampling rank: got 2, need 0..1");
  }
}

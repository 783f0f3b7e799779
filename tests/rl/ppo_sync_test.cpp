// Synchronous data-parallel PPO on host threads: W trainers joined by an in-process group (thread_group.hpp) stay
// bit-identical replicas, their statistics cover every trainer's rollout, and one trainer with a sync of world 1
// is the plain trainer.
#include <doctest/doctest.h>

#include "thread_group.hpp"

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/nn/normalizer.hpp>
#include <gmi/rl/ppo.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace {
using net = gmi::agents::gaussian_mlp<>::network<4, 1>;
using trainer = gmi::rl::ppo_trainer<gmi::envs::cartpole, net, gmi::exec::host>;
using gmi::test::thread_group;

gmi::rl::ppo_config small_config() {
  gmi::rl::ppo_config c;
  c.minibatch = 256;
  c.epochs = 2;
  return c;
}

// What must agree across replicas after an iteration, and the head of the rollout (which must not).
struct snapshot {
  std::vector<float> params;
  std::vector<double> obs_stats, value_stats;
  std::vector<double> obs_mean, obs_variance;
  double lr, policy_loss, value_loss, approx_kl;
  std::vector<float> obs_head;
};

snapshot snap(trainer& t) {
  const auto l = t.losses();
  const auto o = t.obs_normalizer().stats(), v = t.value_normalizer().stats();
  const float* obs = t.rollout_view().obs;
  return {{t.params().begin(), t.params().end()},
          {o.begin(), o.end()},
          {v.begin(), v.end()},
          {t.obs_normalizer().mean().begin(), t.obs_normalizer().mean().end()},
          t.obs_normalizer().variance(),
          l.learning_rate,
          l.policy_loss,
          l.value_loss,
          l.approx_kl,
          {obs, obs + 16}};
}

using make_sync = std::function<gmi::rl::ppo_sync(thread_group&, int rank)>;

// One trainer per rank (seed seed_of(rank), `envs` environments), joined by make_sync (empty: not joined), run
// for `iterations`; returns every rank's snapshot after every iteration: [rank][iteration].
std::vector<std::vector<snapshot>> run_group(int world, int iterations, const gmi::rl::ppo_config& c, int envs,
                                             const std::function<std::uint64_t(int)>& seed_of, const make_sync& sync) {
  thread_group group(world);
  std::vector<std::vector<snapshot>> out(static_cast<std::size_t>(world));
  group.run_ranks([&](int rank) {
    trainer t(envs, seed_of(rank), c);
    if (sync) t.set_sync(sync(group, rank));
    for (int i = 0; i < iterations; ++i) {
      t.iterate();
      out[static_cast<std::size_t>(rank)].push_back(snap(t));
    }
  });
  return out;
}

const make_sync full_sync = [](thread_group& g, int rank) { return g.host_sync(rank); };

// Controls: the group is joined (rank 0's weights reach everyone) but afterwards one kind of sum does nothing.
const make_sync no_gradient_sum = [](thread_group& g, int rank) {
  auto s = g.host_sync(rank);
  s.sum_host = [real = s.sum_host, calls = 0](float* d, std::size_t n) mutable {
    if (calls++ == 0) real(d, n);  // set_sync's weight broadcast
  };
  return s;
};
const make_sync no_stats_sum = [](thread_group& g, int rank) {
  auto s = g.host_sync(rank);
  s.sum_stats = [real = s.sum_stats, calls = 0](double* d, std::size_t n) mutable {
    if (calls++ == 0) real(d, n);  // set_sync's schedule check
  };
  return s;
};

std::uint64_t seed_per_rank(int rank) { return 100 + static_cast<std::uint64_t>(rank); }
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("rl.ppo_sync.replicas_stay_identical" * doctest::timeout(120)) {
    for (const int world : {2, 4}) {
      CAPTURE(world);
      const auto runs = run_group(world, 3, small_config(), 32, seed_per_rank, full_sync);
      for (std::size_t it = 0; it < 3; ++it) {
        CAPTURE(it);
        const snapshot& a = runs[0][it];
        for (std::size_t r = 1; r < runs.size(); ++r) {
          CAPTURE(r);
          const snapshot& b = runs[r][it];
          CHECK(b.obs_head != a.obs_head);  // each replica learns from its own environments
          CHECK(b.params == a.params);
          CHECK(b.obs_stats == a.obs_stats);
          CHECK(b.value_stats == a.value_stats);
          CHECK(b.lr == a.lr);
          CHECK(b.policy_loss == a.policy_loss);
          CHECK(b.value_loss == a.value_loss);
          CHECK(b.approx_kl == a.approx_kl);
        }
      }
      CHECK(runs[0][0].params != runs[0][2].params);  // and they do learn
    }
  }

  // The controls: the same group with the gradient sum (or the statistics all-gather) left out drifts apart, so
  // the checks above can fail.
  TEST_CASE("rl.ppo_sync.replicas_drift_without_the_sums" * doctest::timeout(120)) {
    const auto no_grads = run_group(2, 1, small_config(), 32, seed_per_rank, no_gradient_sum);
    CHECK(no_grads[1][0].params != no_grads[0][0].params);
    const auto no_stats = run_group(2, 1, small_config(), 32, seed_per_rank, no_stats_sum);
    CHECK(no_stats[1][0].obs_stats != no_stats[0][0].obs_stats);
    CHECK(no_stats[1][0].value_stats != no_stats[0][0].value_stats);
    const auto unsynced = run_group(2, 1, small_config(), 32, seed_per_rank, {});
    CHECK(unsynced[1][0].params != unsynced[0][0].params);
  }

  TEST_CASE("rl.ppo_sync.world_of_one_is_the_plain_trainer") {
    trainer plain(64, 5, small_config());
    trainer synced(64, 5, small_config());
    thread_group group(1);
    synced.set_sync(group.host_sync(0));
    CHECK(synced.synced());
    CHECK_FALSE(plain.synced());
    for (int i = 0; i < 3; ++i) {
      plain.iterate();
      synced.iterate();
      const snapshot a = snap(plain), b = snap(synced);
      CHECK(b.params == a.params);
      CHECK(b.obs_stats == a.obs_stats);
      CHECK(b.value_stats == a.value_stats);
      CHECK(b.lr == a.lr);
      CHECK(b.policy_loss == a.policy_loss);
      CHECK(b.approx_kl == a.approx_kl);
    }
  }

  // Two replicas on identical rollouts: the mean of two equal gradients is the gradient, and merged statistics of
  // two equal batches have the same mean and variance, so the pair trains exactly as one trainer. (Advantage
  // normalization is off: its unbiased std over 2n samples differs from the one over n.)
  TEST_CASE("rl.ppo_sync.two_equal_replicas_train_as_one") {
    auto c = small_config();
    c.normalize_advantage = false;
    trainer single(32, 9, c);
    std::vector<snapshot> alone;
    for (int i = 0; i < 3; ++i) {
      single.iterate();
      alone.push_back(snap(single));
    }
    const auto pair = run_group(2, 3, c, 32, [](int) { return std::uint64_t{9}; }, full_sync);
    for (std::size_t it = 0; it < 3; ++it) {
      CAPTURE(it);
      CHECK(pair[0][it].params == alone[it].params);
      CHECK(pair[1][it].params == alone[it].params);
      CHECK(pair[0][it].lr == alone[it].lr);
      CHECK(pair[0][it].policy_loss == alone[it].policy_loss);
      CHECK(pair[0][it].approx_kl == alone[it].approx_kl);
      // The pair's normalizer counts every sample twice: the same mean and variance.
      CHECK(pair[0][it].obs_stats[0] == 2 * alone[it].obs_stats[0]);
      CHECK(pair[0][it].obs_mean == alone[it].obs_mean);
      CHECK(pair[0][it].obs_variance == alone[it].obs_variance);
    }
  }

  // After one synced iteration, the advantage normalization and both normalizers hold the moments of the union of
  // the two trainers' rollouts (computed here directly from the rollouts).
  TEST_CASE("rl.ppo_sync.statistics_cover_every_trainer") {
    const auto c = small_config();
    thread_group group(2);
    std::vector<std::vector<float>> adv(2), obs(2), ret(2);
    std::vector<float> adv_stats[2];
    std::vector<double> obs_stats[2], value_stats[2];
    group.run_ranks([&](int rank) {
      trainer t(32, seed_per_rank(rank), c);
      t.set_sync(group.host_sync(rank));
      t.iterate();
      const auto v = t.rollout_view();
      const std::size_t n = t.samples_per_iteration(), r = static_cast<std::size_t>(rank);
      adv[r].assign(v.advantages, v.advantages + n);
      obs[r].assign(v.obs, v.obs + n * 4);
      ret[r].assign(v.returns, v.returns + n);
      const float* s = t.minibatch_view(0, 0, 0).advantage_stats;
      adv_stats[r].assign(s, s + 2);
      obs_stats[r].assign(t.obs_normalizer().stats().begin(), t.obs_normalizer().stats().end());
      value_stats[r].assign(t.value_normalizer().stats().begin(), t.value_normalizer().stats().end());
    });
    CHECK(adv_stats[0] == adv_stats[1]);
    std::vector<float> all_adv = adv[0], all_obs = obs[0], all_ret = ret[0];
    all_adv.insert(all_adv.end(), adv[1].begin(), adv[1].end());
    all_obs.insert(all_obs.end(), obs[1].begin(), obs[1].end());
    all_ret.insert(all_ret.end(), ret[1].begin(), ret[1].end());
    double sum = 0, sq = 0;
    for (float a : all_adv) sum += a;
    const double mean = sum / double(all_adv.size());
    for (float a : all_adv) sq += (a - mean) * (a - mean);
    const double inv_std = 1.0 / (std::sqrt(sq / double(all_adv.size() - 1)) + 1e-8);
    CHECK(adv_stats[0][0] == doctest::Approx(mean).epsilon(1e-5));
    CHECK(adv_stats[0][1] == doctest::Approx(inv_std).epsilon(1e-5));

    auto check_record = [](const std::vector<double>& got, const std::vector<float>& x, int dim) {
      gmi::nn::running_mean_std<gmi::exec::host> direct(dim);
      direct.update({x.data(), x.size()});
      REQUIRE(got.size() == direct.stats().size());
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(direct.stats()[i]).epsilon(1e-9));
    };
    CHECK(obs_stats[0] == obs_stats[1]);
    CHECK(value_stats[0] == value_stats[1]);
    check_record(obs_stats[0], all_obs, 4);
    check_record(value_stats[0], all_ret, 1);
    CHECK(obs_stats[0][0] == double(all_adv.size()));  // every sample of both trainers counted once
  }

  TEST_CASE("rl.ppo_sync.bad_syncs_are_refused" * doctest::timeout(60)) {
    trainer t(32, 1, small_config());
    thread_group one(1);
    auto s = one.host_sync(0);
    s.world = 2;
    s.rank = 2;
    CHECK_THROWS_WITH_AS(t.set_sync(s), "ppo_sync.rank: got 2, need 0..1 (world 2)", gmi::config_error);
    s = one.host_sync(0);
    s.sum_host = nullptr;
    CHECK_THROWS_WITH_AS(t.set_sync(s), "ppo_sync.sum_host: got none, need a callable (the trainer runs on exec::host)",
                         gmi::config_error);
    // A row exchange runs in a kernel: refused on the host; on the device it must be complete and match the sync.
    s = one.host_sync(0);
    s.exchange = gmi::comm::row_exchange{};
    CHECK_THROWS_WITH_AS(t.set_sync(s), "ppo_sync.exchange: got one, need none on exec::host (the exchange runs in a kernel)",
                         gmi::config_error);
    s.sum_device = [](float*, std::size_t, CUstream_st*) {};
    CHECK_THROWS_WITH_AS(s.validate(true),
                         "ppo_sync.exchange: got one with a row, flag or counter missing, need one built by "
                         "comm::hierarchical_allreduce::row_exchange()",
                         gmi::config_error);
    std::uint32_t word = 0;
    const float row = 0.0f;
    gmi::comm::row_exchange x;
    x.rows[0] = x.rows[1] = &row;
    x.count = 1;
    x.size = 2;
    x.posted = x.released = x.counter = x.stalled = &word;
    x.abort = &word;
    x.timeout_ns = 1;
    s.exchange = x;
    CHECK_THROWS_WITH_AS(s.validate(true), "ppo_sync.exchange: got 2 members (rank 0), need 1 (rank 0) as the sync",
                         gmi::config_error);
    s.world = 2;
    s.replayed = nullptr;
    CHECK_THROWS_WITH_AS(s.validate(true),
                         "ppo_sync.replayed: got none, need a callable (an exchange is checked after each replay)",
                         gmi::config_error);
    s.replayed = [](std::size_t, CUstream_st*) {};
    CHECK_NOTHROW(s.validate(true));
    // A level across GPUs: one member on each of two GPUs; this one is GPU 1's, so global rank 1.
    std::uint64_t entries[4] = {};
    gmi::comm::row_exchange across;
    across.rows[0] = &row;
    across.count = 1;
    across.size = 1;
    across.counter = across.stalled = &word;
    across.abort = &word;
    across.timeout_ns = 1;
    across.gpu = 1;
    across.gpus = 2;
    across.world = 2;
    across.gpu_stride = 1;
    s.exchange = across;
    CHECK_THROWS_WITH_AS(s.validate(true),
                         "ppo_sync.exchange: got one with a row, flag or counter missing, need one built by "
                         "comm::hierarchical_allreduce::row_exchange()",
                         gmi::config_error);  // no slots for the GPUs' sums
    for (int t = 0; t < 2; ++t) s.exchange->inbox_entries[t] = entries;
    CHECK_THROWS_WITH_AS(s.validate(true), "ppo_sync.exchange: got 2 members (rank 1), need 2 (rank 0) as the sync",
                         gmi::config_error);
    s.rank = 1;
    CHECK_NOTHROW(s.validate(true));
    s.exchange->gpu_stride = 0;
    CHECK_FALSE(s.exchange->valid());  // a slot shorter than the row
    t.set_sync(one.host_sync(0));
    CHECK_THROWS_WITH_AS(t.set_sync(one.host_sync(0)), "ppo_trainer::set_sync calls: got 2, need 1 per trainer",
                         gmi::config_error);

    // Replicas of different sizes would call the sums a different number of times: every rank refuses.
    thread_group two(2);
    int refused = 0;
    std::mutex m;
    CHECK_THROWS_WITH_AS(two.run_ranks([&](int rank) {
      trainer r(rank == 0 ? 32 : 64, 1, small_config());
      try {
        r.set_sync(two.host_sync(rank));
      } catch (const gmi::config_error&) {
        std::lock_guard lock(m);
        ++refused;
        throw;
      }
    }),
                         "ppo_sync: rank 1's samples per iteration (horizon x num_envs): got 1024, need 512 as on rank 0",
                         gmi::config_error);
    CHECK(refused == 2);

    // Two trainers claiming rank 0 and none rank 1 (the transport's sum doubles rank 0's slot): refused before any
    // weights move.
    trainer dup(32, 1, small_config());
    gmi::rl::ppo_sync twice;
    twice.world = 2;
    twice.sum_host = [](float*, std::size_t) { FAIL("no weights may move"); };
    twice.sum_stats = [](double* d, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i) d[i] *= 2;
    };
    CHECK_THROWS_WITH_AS(dup.set_sync(twice), "ppo_sync: trainers with rank 0: got 2, need 1 (each rank 0..1 once)",
                         gmi::config_error);
    CHECK_FALSE(dup.synced());
  }

  // The learning check: 4 synced replicas x 64 environments (256 in all) solve Cartpole. The stop decision reads
  // the episodes of all four (summed through the group), so every replica stops at the same iteration.
  TEST_CASE("rl.ppo_sync.four_replicas_solve_cartpole" * doctest::timeout(120)) {
    constexpr int world = 4, max_iterations = 200;
    thread_group group(world);
    double best = 0;
    int iterations = 0;
    const auto start = std::chrono::steady_clock::now();
    group.run_ranks([&](int rank) {
      gmi::rl::ppo_config c;
      c.schedule = gmi::rl::lr_schedule::adaptive_kl;  // fewer iterations at this small scale (a short CPU test)
      trainer t(64, seed_per_rank(rank), c);
      t.set_sync(group.host_sync(rank));
      double best_here = 0;
      for (int it = 0; it < max_iterations && best_here < 450; ++it) {
        t.iterate();
        if (it % 5 == 4) {
          const auto e = t.episodes();
          double pooled[2] = {e.return_sum, static_cast<double>(e.episodes)};
          group.sum(rank, pooled, 2);
          if (pooled[1] >= 32) best_here = std::max(best_here, pooled[0] / pooled[1]);
        }
      }
      if (rank == 0) {
        best = best_here;
        iterations = static_cast<int>(t.iteration());
      }
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE("4 synced replicas x 64 envs: best mean return " << best << " after " << iterations << " iterations, "
                                                             << seconds << " s");
    CHECK(best >= 450);
  }
}

// The batched driver on host threads: auto-reset, truncation vs termination, reproducibility, statistics,
// bad input.
#include <doctest/doctest.h>

#include <climits>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include <gmi/envs/registry.hpp>
#include <gmi/rl/env_batch.hpp>

namespace {
template <class E>
struct run_buffers {
  int n;
  std::vector<float> obs, act, rew, final_obs;
  std::vector<std::uint8_t> te, tr;
  explicit run_buffers(int num)
      : n(num), obs(num * E::obs_dim), act(num * E::act_dim), rew(num), final_obs(num * E::obs_dim), te(num), tr(num) {}
  template <class B>
  void step(B& b) {
    b.step({act.data(), act.size()}, {obs.data(), obs.size()}, {rew.data(), rew.size()}, {te.data(), te.size()},
           {tr.data(), tr.size()}, nullptr, {final_obs.data(), final_obs.size()});
  }
};

// A trajectory of every observation, reward and flag for random actions drawn from action_seed.
template <class E>
std::vector<float> trajectory(int n, std::uint64_t seed, int steps, unsigned threads, std::uint64_t action_seed = 9,
                              gmi::rl::episode_start start = gmi::rl::episode_start::first_step) {
  gmi::rl::env_batch<E> b(n, seed, {}, gmi::exec::host{.threads = threads});
  run_buffers<E> r(n);
  b.reset({r.obs.data(), r.obs.size()}, nullptr, start);
  std::vector<float> out(r.obs);
  gmi::rng a(action_seed, 0);
  for (int t = 0; t < steps; ++t) {
    for (float& v : r.act) v = a.uniform(-1.0f, 1.0f);
    r.step(b);
    out.insert(out.end(), r.obs.begin(), r.obs.end());
    out.insert(out.end(), r.rew.begin(), r.rew.end());
    for (int i = 0; i < n; ++i) out.push_back(float(r.te[i] + 2 * r.tr[i]));
  }
  return out;
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("envs.driver.truncation_at_the_time_limit_is_not_termination") {
    using P = gmi::envs::pendulum;  // never terminates: every episode ends at max_steps
    P::params p;
    p.max_steps = 7;
    gmi::rl::env_batch<P> b(3, 1, p);
    run_buffers<P> r(3);
    b.reset({r.obs.data(), r.obs.size()});
    for (int t = 1; t <= 21; ++t) {
      std::vector<float> before = r.obs;
      r.step(b);
      for (int i = 0; i < 3; ++i) {
        CHECK(r.te[i] == 0);
        CHECK(r.tr[i] == (t % 7 == 0 ? 1 : 0));
        if (t % 7 == 0) {  // final_obs is the last state of the episode, obs the first of the next one
          CHECK(r.final_obs[i * 3 + 0] != r.obs[i * 3 + 0]);
        }
      }
    }
    const auto s = b.read_stats();
    CHECK(s.episodes == 9);
    CHECK(s.mean_length() == 7.0);
    CHECK(b.read_stats().episodes == 0);  // each read covers the episodes since the previous one
  }

  TEST_CASE("envs.driver.auto_reset_restarts_the_episode_and_counts_it") {
    using C = gmi::envs::cartpole;
    const int n = 32;
    gmi::rl::env_batch<C> b(n, 3);
    run_buffers<C> r(n);
    b.reset({r.obs.data(), r.obs.size()});
    std::vector<double> ret(n, 0);
    std::vector<int> len(n, 0);
    double ret_sum = 0, len_sum = 0;
    std::uint64_t episodes = 0;
    for (int t = 0; t < 400; ++t) {
      for (float& v : r.act) v = 1.0f;  // always push right: falls quickly
      r.step(b);
      for (int i = 0; i < n; ++i) {
        ret[i] += r.rew[i];
        len[i] += 1;
        if (r.te[i] || r.tr[i]) {
          CHECK(r.rew[i] == -2.0f);
          ret_sum += ret[i];
          len_sum += len[i];
          ++episodes;
          ret[i] = 0;
          len[i] = 0;
          for (int k = 0; k < 4; ++k) CHECK(std::fabs(r.obs[i * 4 + k]) < 0.1f);
        }
      }
    }
    const auto s = b.read_stats();
    CHECK(s.episodes == episodes);
    CHECK(episodes > 3 * n);
    CHECK(s.return_sum == doctest::Approx(ret_sum).epsilon(1e-5));
    CHECK(s.length_sum == len_sum);
  }

  TEST_CASE("envs.driver.same_seed_same_trajectories_any_thread_count") {
    gmi::envs::for_each_task([]<class T>() {
      CAPTURE(T::name);
      const bool heavy = T::obs_dim > 50 || gmi::envs::is_physics_task<T>;
      const int n = heavy ? 3 : 300, steps = heavy ? 5 : 300;
      const auto one = trajectory<T>(n, 42, steps, 1);
      CHECK(one == trajectory<T>(n, 42, steps, 1));
      CHECK(one == trajectory<T>(n, 42, steps, 4));
      CHECK(one != trajectory<T>(n, 43, steps, 1));
      // Out-of-phase starts draw from each environment's stream: seeded the same way, whatever the thread count.
      constexpr auto random = gmi::rl::episode_start::random_step;
      const auto drawn = trajectory<T>(n, 42, steps, 1, 9, random);
      CHECK(drawn == trajectory<T>(n, 42, steps, 4, 9, random));
      CHECK(drawn != trajectory<T>(n, 43, steps, 1, 9, random));
    });
  }

  TEST_CASE("envs.driver.random_episode_start_spreads_the_first_time_limits") {
    using P = gmi::envs::pendulum;  // never terminates: every episode ends at max_steps
    using view = gmi::rl::env_batch_view<P>;
    constexpr auto random = gmi::rl::episode_start::random_step;
    const int n = 4000, m = 200;
    P::params p;
    p.max_steps = m;
    gmi::rl::env_batch<P> b(n, 5, p), plain(n, 5, p);
    run_buffers<P> r(n), r0(n);
    b.reset({r.obs.data(), r.obs.size()}, nullptr, random);
    plain.reset({r0.obs.data(), r0.obs.size()});
    CHECK(r.obs == r0.obs);  // the draw comes after the env's reset: same initial states
    std::vector<int> offset(n), seen(m, 0);
    double mean = 0;
    for (int i = 0; i < n; ++i) {
      const std::int32_t raw = b.view().lengths[i];
      CHECK((raw & view::uncounted_bit) != 0);
      CHECK(plain.view().lengths[i] == 0);  // the off switch: every counter at 0, nothing marked
      offset[i] = raw & ~view::uncounted_bit;
      REQUIRE(offset[i] >= 0);
      REQUIRE(offset[i] < m);
      seen[offset[i]] += 1;
      mean += offset[i] / double(n);
    }
    // Uniform over [0, m): mean (m - 1) / 2 within 4 standard errors, and every tenth of the range drawn often.
    CHECK(std::fabs(mean - (m - 1) / 2.0) < 4 * (m / std::sqrt(12.0)) / std::sqrt(double(n)));
    for (int d = 0; d < 10; ++d) {
      int in_decile = 0;
      for (int k = d * m / 10; k < (d + 1) * m / 10; ++k) in_decile += seen[k];
      CHECK(in_decile > n / 10 - 100);
      CHECK(in_decile < n / 10 + 100);
    }
    gmi::rl::env_batch<P> again(n, 5, p), other(n, 6, p);
    again.reset({r0.obs.data(), r0.obs.size()}, nullptr, random);
    other.reset({r0.obs.data(), r0.obs.size()}, nullptr, random);
    int same = 0, differ = 0;
    for (int i = 0; i < n; ++i) {
      same += again.view().lengths[i] == b.view().lengths[i];
      differ += other.view().lengths[i] != b.view().lengths[i];
    }
    CHECK(same == n);
    CHECK(differ > n / 2);
    // The first episode is truncated (a time limit, not a terminal) at m - offset steps and left out of the
    // statistics; from then on every episode is a whole one, counted.
    for (int t = 1; t <= 2 * m; ++t) {
      r.step(b);
      for (int i = 0; i < n; ++i) {
        CHECK(r.te[i] == 0);
        const bool limit = t == m - offset[i] || t == 2 * m - offset[i];
        if ((r.tr[i] != 0) != limit) FAIL_CHECK("env " << i << " step " << t << " offset " << offset[i]);
      }
      if (t == m) CHECK(b.read_stats().episodes == 0);
    }
    const auto s = b.read_stats();
    CHECK(s.episodes == std::uint64_t(n));
    CHECK(s.mean_length() == double(m));
  }

  TEST_CASE("envs.driver.environment_i_does_not_depend_on_num_envs") {
    // Environment i draws from stream i of the seed, so a larger batch extends a smaller one.
    using B = gmi::envs::ball_balance;
    gmi::rl::env_batch<B> small(4, 8), large(100, 8);
    std::vector<float> o1(4 * 24), o2(100 * 24);
    small.reset({o1.data(), o1.size()});
    large.reset({o2.data(), o2.size()});
    CHECK(std::vector<float>(o2.begin(), o2.begin() + 4 * 24) == o1);
  }

  TEST_CASE("envs.driver.bad_counts_are_refused") {
    using C = gmi::envs::cartpole;
    CHECK_THROWS_WITH_AS(gmi::rl::env_batch<C>(0, 1), "num_envs: got 0, need >= 1", gmi::config_error);
    CHECK_THROWS_WITH_AS(gmi::rl::env_batch<C>(-5, 1), "num_envs: got -5, need >= 1", gmi::config_error);
    CHECK_THROWS_AS(gmi::rl::env_batch<gmi::envs::shadow_hand_proxy>(INT_MAX, 1), gmi::config_error);  // ~1.9 TB
    C::params p;
    p.max_steps = 0;
    CHECK_THROWS_WITH_AS(gmi::rl::env_batch<C>(4, 1, p), "params.max_steps: got 0, need >= 1", gmi::config_error);
    p.max_steps = 1 << 30;  // bit 30 of the step counter marks an uncounted first episode
    CHECK_THROWS_WITH_AS(gmi::rl::env_batch<C>(4, 1, p),
                         "params.max_steps: got 1073741824, need < 2^30 (the step counter's bit 30 marks uncounted "
                         "episodes)",
                         gmi::config_error);
  }

  TEST_CASE("envs.driver.wrong_buffer_sizes_are_refused") {
    using C = gmi::envs::cartpole;
    gmi::rl::env_batch<C> b(8, 1);
    std::vector<float> obs(8 * 4), act(8), rew(8);
    std::vector<std::uint8_t> te(8), tr(8);
    CHECK_THROWS_WITH_AS(b.step({act.data(), 7}, {obs.data(), obs.size()}, {rew.data(), 8}, {te.data(), 8}, {tr.data(), 8}),
                         "env_batch: actions element count: got 7, need == 8", gmi::config_error);
    CHECK_THROWS_AS(b.step({act.data(), 8}, {obs.data(), 31}, {rew.data(), 8}, {te.data(), 8}, {tr.data(), 8}),
                    gmi::config_error);
    CHECK_THROWS_AS(b.step({act.data(), 8}, {obs.data(), 32}, {rew.data(), 8}, {te.data(), 9}, {tr.data(), 8}),
                    gmi::config_error);
    CHECK_THROWS_AS(b.reset({obs.data(), 33}), gmi::config_error);
  }

  TEST_CASE("envs.driver.non_finite_actions_reset_the_environment_and_are_counted") {
    using Q = gmi::envs::quadcopter;
    const int n = 4;
    gmi::rl::env_batch<Q> b(n, 5);
    run_buffers<Q> r(n);
    b.reset({r.obs.data(), r.obs.size()});
    for (int t = 0; t < 3; ++t) {
      std::fill(r.act.begin(), r.act.end(), 0.1f);
      r.step(b);
    }
    std::fill(r.act.begin(), r.act.end(), 0.1f);
    r.act[1 * 12 + 3] = std::numeric_limits<float>::quiet_NaN();
    r.act[2 * 12 + 11] = std::numeric_limits<float>::infinity();
    r.step(b);
    for (int i = 0; i < n; ++i) {
      const bool bad = i == 1 || i == 2;
      CHECK(r.te[i] == (bad ? 1 : 0));
      CHECK(r.tr[i] == 0);
      if (bad) CHECK(r.rew[i] == 0.0f);
      for (int k = 0; k < Q::obs_dim; ++k) CHECK(std::isfinite(r.obs[i * Q::obs_dim + k]));
    }
    const auto s = b.read_stats();
    CHECK(s.invalid_actions == 2);
    CHECK(s.episodes == 0);  // the interrupted episodes are left out of the return statistics
  }

  TEST_CASE("envs.driver.poll_returns_each_request_once") {
    gmi::rl::env_batch<gmi::envs::cartpole> b(2, 1);
    CHECK_FALSE(b.poll_stats().has_value());
    b.request_stats();
    CHECK(b.poll_stats().has_value());
    CHECK_FALSE(b.poll_stats().has_value());
  }
}

// The learning suite's tasks of other reward shapes and scales (point_reach, sparse_reach, long_track,
// spring_chain): each against a hand-written controller and against doing nothing, so a sign, scale or
// dynamics error shows as a return on the wrong side of a bound.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <vector>

#include <gmi/envs/registry.hpp>

namespace {
// Mean return over `episodes` episodes of one env stepped by `policy(state, action)`, to termination or the limit.
template <class T, class Policy>
double mean_return(Policy policy, int episodes, const typename T::params& p = {}, double* mean_length = nullptr) {
  double total = 0, steps = 0;
  for (int e = 0; e < episodes; ++e) {
    gmi::rng r(5, static_cast<std::uint64_t>(e));
    typename T::state s;
    T::reset(s, r, p);
    for (int t = 0; t < p.max_steps; ++t) {
      float a[T::act_dim];
      policy(s, a);
      const gmi::transition tr = T::step(s, a, r, p);
      total += tr.reward;
      steps += 1;
      if (tr.terminated) break;
    }
  }
  if (mean_length) *mean_length = steps / episodes;
  return total / episodes;
}
}  // namespace

static_assert(gmi::check_env<gmi::envs::point_reach>());
static_assert(gmi::check_env<gmi::envs::sparse_reach>());
static_assert(gmi::check_env<gmi::envs::long_track>());
static_assert(gmi::check_env<gmi::envs::spring_chain>());

TEST_SUITE("cpu") {
  TEST_CASE("envs.point_reach.goal_drawn_at_reset_and_a_pd_controller_reaches_it") {
    using T = gmi::envs::point_reach;
    // Goals differ between resets and lie in the range.
    gmi::rng r(1, 0);
    T::state a, b;
    T::params p;
    T::reset(a, r, p);
    T::reset(b, r, p);
    CHECK(a.gx != b.gx);
    CHECK(std::fabs(a.gx) <= p.goal_range);
    CHECK(a.vx == 0.0f);
    const double idle = mean_return<T>([](const T::state&, float* u) { u[0] = u[1] = 0; }, 50);
    const double pd = mean_return<T>(
        [](const T::state& s, float* u) {
          u[0] = 3.0f * (s.gx - s.x) - 1.5f * s.vx;
          u[1] = 3.0f * (s.gy - s.y) - 1.5f * s.vy;
        },
        50);
    MESSAGE("point_reach: idle " << idle << ", PD " << pd);
    CHECK(idle < -100);       // mean start distance ~0.77 for 200 steps
    CHECK(pd > 0.25 * idle);  // a controller closes the gap within a few dozen steps
    CHECK(pd < 0);
    // The wall stops the point.
    T::state s{1.99f, 0, 5.0f, 0, 0, 0};
    const float push[2] = {1, 0};
    T::step(s, push, r, p);
    CHECK(s.x == p.arena);
    CHECK(s.vx == 0.0f);
  }

  TEST_CASE("envs.sparse_reach.reward_only_on_reaching_and_the_episode_ends_there") {
    using T = gmi::envs::sparse_reach;
    double len = 0;
    const double idle = mean_return<T>([](const T::state&, float* u) { u[0] = u[1] = 0; }, 100, {}, &len);
    CHECK(idle == 0.0);
    CHECK(len == 100.0);
    const double straight = mean_return<T>(
        [](const T::state& s, float* u) {
          const float dx = s.gx - s.x, dy = s.gy - s.y, d = std::sqrt(dx * dx + dy * dy);
          u[0] = dx / d;
          u[1] = dy / d;
        },
        100, {}, &len);
    CHECK(straight == 1.0);  // every episode: one reward of 1, then the end
    CHECK(len < 13.0);       // at most (0.8 - 0.2) / 0.05 = 12 steps
    // Every reward is 0 or 1, and a 1 always ends the episode.
    gmi::rng r(3, 0);
    T::params p;
    for (int e = 0; e < 200; ++e) {
      T::state s;
      T::reset(s, r, p);
      const float g = std::sqrt(s.gx * s.gx + s.gy * s.gy);
      CHECK(g >= p.goal_min);
      CHECK(g <= p.goal_max);
      for (int t = 0; t < p.max_steps; ++t) {
        const float u[2] = {2 * r.uniform() - 1, 2 * r.uniform() - 1};
        const auto tr = T::step(s, u, r, p);
        CHECK((tr.reward == 0.0f || tr.reward == 1.0f));
        CHECK(tr.terminated == (tr.reward == 1.0f));
        if (tr.terminated) break;
      }
    }
  }

  TEST_CASE("envs.long_track.a_tracking_controller_earns_most_of_2000_steps") {
    using T = gmi::envs::long_track;
    T::params p;
    CHECK(p.max_steps >= 1000);
    double len = 0;
    const double idle = mean_return<T>([](const T::state&, float* u) { u[0] = 0; }, 20, p, &len);
    CHECK(len == p.max_steps);  // only the time limit ends an episode
    const double track = mean_return<T>(
        [&](const T::state& s, float* u) {
          float obs[5];
          T::observe(s, obs, p);
          u[0] = (obs[4] + p.damping * obs[3] - 40.0f * obs[0] - 12.0f * obs[1]) / p.max_accel;  // feed-forward + PD
        },
        20, p);
    MESSAGE("long_track: idle " << idle << ", tracking " << track);
    CHECK(idle < 0.5 * p.max_steps);
    CHECK(track > 0.9 * p.max_steps);
    // The observation's target derivatives match finite differences of the target.
    T::state s{0, 0, 0.3f, -1.1f, 100};
    float x0, v0, a0, x1, v1, a1;
    T::target(s, p, x0, v0, a0);
    s.t += 1;
    T::target(s, p, x1, v1, a1);
    CHECK((x1 - x0) / p.dt == doctest::Approx(0.5 * (v0 + v1)).epsilon(1e-3));
    CHECK((v1 - v0) / p.dt == doctest::Approx(0.5 * (a0 + a1)).epsilon(1e-2));
  }

  TEST_CASE("envs.spring_chain.returns_of_large_magnitude_and_control_pays") {
    using T = gmi::envs::spring_chain;
    const double idle = mean_return<T>([](const T::state&, float* u) { for (int i = 0; i < 4; ++i) u[i] = 0; }, 50);
    const double damp = mean_return<T>(
        [](const T::state& s, float* u) { for (int i = 0; i < 4; ++i) u[i] = -1.0f * s.x[i] - 1.0f * s.v[i]; }, 50);
    MESSAGE("spring_chain: idle " << idle << ", PD " << damp);
    CHECK(idle < -3e4);
    CHECK(idle > -1e6);
    CHECK(damp > 2 * idle);  // at least twice better
    CHECK(damp < -1e3);
    // Without damping or force, the chain's energy (kinetic + springs) is kept to O(dt) by semi-implicit Euler.
    T::params p;
    p.damping = 0;
    gmi::rng r(9, 0);
    T::state s;
    T::reset(s, r, p);
    const auto energy = [&](const T::state& q) {
      double e = 0;
      for (int i = 0; i < 4; ++i) e += 0.5 * q.v[i] * q.v[i];
      for (int i = 0; i <= 4; ++i) {
        const double l = i == 0 ? 0 : q.x[i - 1], rr = i == 4 ? 0 : q.x[i];
        e += 0.5 * p.stiffness * (rr - l) * (rr - l);
      }
      return e;
    };
    const double e0 = energy(s);
    const float zero[4] = {0, 0, 0, 0};
    double worst = 0;
    for (int t = 0; t < 2000; ++t) {
      T::step(s, zero, r, p);
      worst = std::max(worst, std::fabs(energy(s) - e0) / e0);
    }
    CHECK(worst < 0.2);
  }
}

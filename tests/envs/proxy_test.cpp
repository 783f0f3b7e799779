// The LQ proxies: the Riccati optimum against direct rollouts of the optimal linear controller, in double and
// through the float env.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <gmi/envs/registry.hpp>
#include <gmi/rl/env_batch.hpp>

namespace {
// Cost of u = -K x from x0 over `steps` steps of the double model.
double rollout_cost(const gmi::envs::lq_model& md, const std::vector<double>& k, std::vector<double> x, int steps) {
  const int n = md.n, m = md.m;
  double cost = 0;
  std::vector<double> u(m), y(n);
  for (int t = 0; t < steps; ++t) {
    for (int j = 0; j < m; ++j) {
      u[j] = 0;
      for (int i = 0; i < n; ++i) u[j] -= k[std::size_t(j) * n + i] * x[i];
    }
    for (int i = 0; i < n; ++i) cost += md.q[i] * x[i] * x[i];
    for (int j = 0; j < m; ++j) cost += md.r[j] * u[j] * u[j];
    for (int i = 0; i < n; ++i) {
      double v = 0;
      for (int l = 0; l < n; ++l) v += md.a[std::size_t(i) * n + l] * x[l];
      for (int j = 0; j < m; ++j) v += md.b[std::size_t(i) * m + j] * u[j];
      y[i] = v;
    }
    x = y;
  }
  return cost;
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("envs.proxy.riccati_optimum_matches_rollouts_of_the_optimal_controller" * doctest::timeout(240)) {
    gmi::envs::for_each_task([]<class T>() {
      if constexpr (requires { T::model(); }) {
        CAPTURE(T::name);
        gmi::envs::lq_model md = T::model();
        gmi::envs::solve_dare(md);
        CHECK(md.dare_iterations > 0);
        gmi::rng r(77, 0);
        std::vector<double> x0(md.n);
        for (double& v : x0) v = r.normal();
        const double value = md.value(x0.data());
        CHECK(value > 0);
        CHECK(rollout_cost(md, md.k, x0, 1000) == doctest::Approx(value).epsilon(1e-8));
        // Any other gain does worse.
        for (double d : {-0.05, 0.05}) {
          std::vector<double> k2 = md.k;
          for (std::size_t i = 0; i < k2.size(); i += 3) k2[i] *= 1 + d;
          CHECK(rollout_cost(md, k2, x0, 1000) > value * (1 + 1e-9));
        }
        std::vector<double> zero(md.k.size(), 0.0);
        CHECK(rollout_cost(md, zero, x0, 1000) > value);

        // The float env with actions -K obs collects -value in rewards from its own x0.
        gmi::rl::env_batch<T> b(1, 3);
        std::vector<float> obs(T::obs_dim), act(T::act_dim), rew(1), fin(T::obs_dim);
        std::vector<std::uint8_t> te(1), tr(1);
        b.reset({obs.data(), obs.size()});
        std::vector<double> start(obs.begin(), obs.end());
        double collected = 0;
        for (int t = 0; t < 1000; ++t) {
          for (int j = 0; j < T::act_dim; ++j) {
            double u = 0;
            for (int i = 0; i < T::obs_dim; ++i) u -= md.k[std::size_t(j) * T::obs_dim + i] * obs[i];
            act[j] = float(u);
          }
          b.step({act.data(), act.size()}, {obs.data(), obs.size()}, {rew.data(), 1}, {te.data(), 1}, {tr.data(), 1});
          collected -= rew[0];
          REQUIRE(te[0] == 0);
          if (tr[0]) CHECK(t == 999);
        }
        CHECK(collected == doctest::Approx(md.value(start.data())).epsilon(1e-3));
      }
    });
  }

  TEST_CASE("envs.proxy.open_loop_is_stable") {
    // |A_sub|_2 < 1 by construction; check the composed step matrix shrinks a random state.
    const auto md = gmi::envs::ant_proxy::model();
    gmi::rng r(1, 0);
    std::vector<double> x(md.n), y(md.n);
    for (double& v : x) v = r.normal();
    for (int t = 0; t < 200; ++t) {
      for (int i = 0; i < md.n; ++i) {
        y[i] = 0;
        for (int j = 0; j < md.n; ++j) y[i] += md.a[std::size_t(i) * md.n + j] * x[j];
      }
      x = y;
    }
    double norm = 0;
    for (double v : x) norm += v * v;
    CHECK(std::sqrt(norm) < 1e-3);
  }
}

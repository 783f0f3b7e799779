// The deterministic evaluation (rl/ppo_eval.hpp): the mode action of both heads, the return of a known policy on an
// LQ proxy against its closed form (a sampling policy pays its noise and misses it by far), and the same result
// from a trainer, from its state, and on any thread count.
#include <doctest/doctest.h>

#include <gmi/agents/categorical_mlp.hpp>
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/envs/cartpole_discrete.hpp>
#include <gmi/envs/lq_proxy.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/rl/ppo_eval.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace {
using proxy = gmi::envs::franka_cabinet_proxy;
using proxy_net = gmi::agents::gaussian_mlp<gmi::nn::layers<64, 64>>::network<proxy::obs_dim, proxy::act_dim>;
using discrete_net = gmi::agent_network<gmi::agents::categorical_mlp<>, gmi::envs::cartpole_discrete>;

// E[sum_{t < T} x_t'Q x_t] for x_{t+1} = A x_t, x0 ~ N(0, I): trace(P_T), P_T = sum_t A'^t Q A^t; and the standard
// deviation of one episode's x0'P_T x0, sqrt(2 trace(P_T^2)).
std::pair<double, double> open_loop_cost(int steps) {
  gmi::envs::lq_model md = proxy::model();
  const int n = md.n;
  std::vector<double> p(std::size_t(n) * n, 0.0), next(p.size());
  for (int t = 0; t < steps; ++t) {  // P <- Q + A' P A
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double s = i == j ? md.q[i] : 0.0;
        for (int k = 0; k < n; ++k)
          for (int l = 0; l < n; ++l) s += md.a[std::size_t(k) * n + i] * p[std::size_t(k) * n + l] * md.a[std::size_t(l) * n + j];
        next[std::size_t(i) * n + j] = s;
      }
    p.swap(next);
  }
  double trace = 0, trace_sq = 0;
  for (int i = 0; i < n; ++i) {
    trace += p[std::size_t(i) * n + i];
    for (int j = 0; j < n; ++j) trace_sq += p[std::size_t(i) * n + j] * p[std::size_t(j) * n + i];
  }
  return {trace, std::sqrt(2 * trace_sq)};
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("ppo.eval.mode_action_is_the_mean_or_the_largest_logit") {
    const float mu[proxy::act_dim] = {0.5f, -2.0f, 0.0f, 1.25f, 3.0f, -0.1f, 7.0f, -7.0f, 0.01f};
    float a[proxy::act_dim] = {};
    gmi::rl::mode_action<proxy_net>(mu, a);
    for (int k = 0; k < proxy::act_dim; ++k) CHECK(a[k] == mu[k]);
    float idx = -1;
    const float right[2] = {-1.0f, 2.0f}, left[2] = {3.0f, 2.0f}, tie[2] = {1.0f, 1.0f};
    gmi::rl::mode_action<discrete_net>(right, &idx);
    CHECK(idx == 1.0f);
    gmi::rl::mode_action<discrete_net>(left, &idx);
    CHECK(idx == 0.0f);
    gmi::rl::mode_action<discrete_net>(tie, &idx);
    CHECK(idx == 0.0f);
  }

  // All weights zero: the mean action is 0 (log_std 0, so a sampled action has std 1), and every episode of the
  // stable proxy runs its 1000 steps open-loop: the mean return is -trace(P_1000) up to the spread of x0'P x0 over
  // the episodes. Sampled actions would add about 1000 x sum(r) of action cost and the states it drives.
  TEST_CASE("ppo.eval.zero_policy_on_an_lq_proxy_costs_the_open_loop_value" * doctest::timeout(120)) {
    const std::vector<float> params(proxy_net::param_count, 0.0f);
    const std::vector<double> stats(1 + 2 * proxy::obs_dim, 0.0);  // count 0: observations as they are
    const int episodes = 512;
    const auto r = gmi::rl::evaluate_mode<proxy, proxy_net>(
        gmi::host_span<const float>(params.data(), params.size()),
        gmi::host_span<const double>(stats.data(), stats.size()), episodes, 7);
    const auto [cost, spread] = open_loop_cost(proxy::params{}.max_steps);
    const double tol = 5 * spread / std::sqrt(double(episodes));
    MESSAGE("zero policy on " << std::string(proxy::name) << ": eval mean return " << r.mean_return << ", open-loop -trace(P) "
                              << -cost << " +- " << tol << " (5 sigma)");
    CHECK(r.episodes == std::uint64_t(episodes));
    CHECK(r.mean_length == doctest::Approx(1000.0));
    CHECK(std::fabs(r.mean_return + cost) <= tol);
  }

  TEST_CASE("ppo.eval.a_trainer_evaluates_its_state_alike_on_any_thread_count" * doctest::timeout(120)) {
    using task = gmi::envs::cartpole;
    using net = gmi::agents::gaussian_mlp<gmi::nn::layers<32, 32>>::network<task::obs_dim, task::act_dim>;
    gmi::rl::ppo_config c;
    c.minibatch = 1024;
    gmi::rl::ppo_trainer<task, net, gmi::exec::host> t(64, 3, c, {}, gmi::exec::host{.threads = 2});
    for (int i = 0; i < 5; ++i) t.iterate();
    const auto one = gmi::rl::evaluate_mode(t, 32, {}, gmi::exec::host{.threads = 1});
    const auto two = gmi::rl::evaluate_mode(t, 32, {}, gmi::exec::host{.threads = 2});
    CHECK(one.mean_return == two.mean_return);
    CHECK(one.mean_length == two.mean_length);
    // The observation statistics matter: the same weights on raw observations act differently.
    const auto ck = t.save_state();
    const auto params = ck.get<float>("policy.params");
    const auto stats = ck.get<double>("obs_norm.stats");
    REQUIRE(stats[0] > 0);
    const auto same = gmi::rl::evaluate_mode<task, net>(gmi::host_span<const float>(params.data(), params.size()),
                                                        gmi::host_span<const double>(stats.data(), stats.size()), 32,
                                                        t.seed());
    CHECK(same.mean_return == one.mean_return);
    const std::vector<double> none(stats.size(), 0.0);
    const auto raw = gmi::rl::evaluate_mode<task, net>(gmi::host_span<const float>(params.data(), params.size()),
                                                       gmi::host_span<const double>(none.data(), none.size()), 32,
                                                       t.seed());
    CHECK(raw.mean_return != one.mean_return);
    CHECK_THROWS_AS(gmi::rl::evaluate_mode(t, 0), gmi::config_error);
  }

  // ppo_config::obs_clip is the observation normalizer's clamp (collection, update and evaluation alike).
  TEST_CASE("ppo.eval.obs_clip_reaches_the_normalizer_and_bad_values_are_refused") {
    using task = gmi::envs::cartpole;
    using net = gmi::agents::gaussian_mlp<gmi::nn::layers<32, 32>>::network<task::obs_dim, task::act_dim>;
    gmi::rl::ppo_config c;
    CHECK(c.obs_clip == 5.0f);  // rl_games' clip stays the default
    c.obs_clip = 2.5f;
    gmi::rl::ppo_trainer<task, net, gmi::exec::host> t(8, 1, c);
    CHECK(t.obs_normalizer().view().clip == 2.5f);
    CHECK(t.rollout_view().obs_norm.clip == 2.5f);
    for (const float bad : {0.0f, -1.0f, std::numeric_limits<float>::infinity(), std::nanf("")}) {
      c.obs_clip = bad;
      CHECK_THROWS_AS(c.validate(), gmi::config_error);
    }
  }
}

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include <gmi/core/rng.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/nn/mlp.hpp>
#include <gmi/rl/sac.hpp>
#include <gmi/rl/sac_config.hpp>
#include <gmi/rl/sac_loss.hpp>
#include <gmi/trainers/sac.hpp>

namespace {
using namespace gmi;

// Small smooth networks in double: finite differences see no ReLU kinks.
using small_nets = rl::sac_networks<3, 2, 8, nn::elu, double>;

std::vector<double> random_vec(std::size_t n, std::uint64_t stream, double lo = -1, double hi = 1) {
  gmi::rng r(77, stream);
  std::vector<double> v(n);
  for (double& x : v) x = lo + (hi - lo) * double(r.uniform());
  return v;
}

// Central differences of f over every parameter, compared with the analytic gradient.
template <class F>
void check_gradient(std::vector<double> p, const std::vector<double>& analytic, F f) {
  REQUIRE(p.size() == analytic.size());
  double worst = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double keep = p[i], h = 1e-6;
    p[i] = keep + h;
    const double up = f(p);
    p[i] = keep - h;
    const double down = f(p);
    p[i] = keep;
    const double numeric = (up - down) / (2 * h);
    const double err = std::abs(numeric - analytic[i]) / std::max(1e-6, std::abs(numeric) + std::abs(analytic[i]));
    worst = std::max(worst, err);
  }
  CHECK(worst < 1e-5);
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("sac.config.refusals_name_the_field") {
    rl::sac_config c;
    CHECK_NOTHROW(c.validate());
    c.batch = 0;
    CHECK_THROWS_WITH_AS(c.validate(), "sac.batch: got 0, need 1..1048576", config_error);
    c = {};
    c.tau = 0;
    CHECK_THROWS_WITH_AS(c.validate(), "sac.tau: got 0, need in (0, 1]", config_error);
    c = {};
    c.gamma = 1.5f;
    CHECK_THROWS_WITH_AS(c.validate(), "sac.gamma: got 1.5, need in (0, 1]", config_error);
    c = {};
    c.log_std_max = -6;
    CHECK_THROWS_WITH_AS(c.validate(), "sac.log_std_max: got -6, need in (log_std_min, 5]", config_error);
    c = {};
    c.warmup_steps = 10;
    CHECK_THROWS_WITH_AS(c.validate(), "sac.warmup_steps: got 10, need batch (256) .. replay_capacity", config_error);
    c = {};
    c.replay_capacity = 100;
    CHECK_THROWS_WITH_AS(c.validate(), "sac.replay_capacity: got 100, need batch (256) .. 2^30", config_error);
    c = {};
    c.updates_per_step = 0;
    CHECK_THROWS_AS(c.validate(), config_error);
    c = {};
    c.actor_lr = -1;
    CHECK_THROWS_WITH_AS(c.validate(), "sac.actor_lr: got -1, need > 0", config_error);
    c = {};
    c.target_entropy = NAN;
    CHECK_THROWS_AS(c.validate(), config_error);
    c = {};
    CHECK(c.entropy_target(3) == -3.0f);
    c.target_entropy = -0.5f;
    CHECK(c.entropy_target(3) == -0.5f);
  }

  TEST_CASE("sac.trainer.bad_config_refused_before_anything_runs") {
    rl::sac_config c;
    c.batch = 64;
    c.warmup_steps = 64;
    c.replay_capacity = 32;
    using trainer = rl::sac_trainer<envs::pendulum, rl::sac_networks<3, 1, 16>>;
    CHECK_THROWS_WITH_AS(trainer(c, 1, 1), "sac.replay_capacity: got 32, need batch (64) .. 2^30", config_error);
    c.replay_capacity = 1000;
    CHECK_THROWS_WITH_AS(trainer(c, 0, 1), "num_envs: got 0, need >= 1", config_error);
    CHECK_NOTHROW(trainer(c, 2, 1));
  }

  // log_prob of the squashed Gaussian against the density of a = tanh(u), u ~ N(mu, sigma), obtained by
  // differentiating its CDF Phi((atanh(a) - mu) / sigma) numerically.
  TEST_CASE("sac.squashed_gaussian.log_prob_matches_numeric_density") {
    const double lo = -5, hi = 2;
    for (double mu : {-1.3, 0.0, 0.4, 2.5}) {
      for (double raw : {-0.8, 0.0, 0.7}) {
        for (double eps : {-1.7, -0.2, 0.0, 0.9}) {
          const double head[2] = {mu, raw};
          rl::squashed_draw<double, 1> d;
          d.compute(head, &eps, lo, hi);
          const double sigma = std::exp(lo + 0.5 * (hi - lo) * (std::tanh(raw) + 1));
          CHECK(d.sigma[0] == doctest::Approx(sigma).epsilon(1e-12));
          const auto cdf = [&](double a) { return 0.5 * std::erfc(-(std::atanh(a) - mu) / (sigma * std::sqrt(2.0))); };
          const double a = d.action[0], h = 1e-7 * (1 - a * a);
          const double density = (cdf(a + h) - cdf(a - h)) / (2 * h);
          CHECK(d.log_prob == doctest::Approx(std::log(density)).epsilon(1e-5));
        }
      }
    }
    // Saturated actions keep a finite log_prob (the stable log(1 - tanh^2) form).
    const double head[2] = {30.0, 0.0};
    const double eps = 0;
    rl::squashed_draw<double, 1> d;
    d.compute(head, &eps, lo, hi);
    CHECK(std::isfinite(d.log_prob));
    CHECK(d.log_prob > 50.0);  // -log(1 - tanh(30)^2) ~ 58.6
  }

  TEST_CASE("sac.gradients.critic_matches_finite_differences") {
    using C = small_nets::critic;
    const std::size_t n = 7;
    rl::sac_gradients<small_nets> g;
    const auto params = rl::sac_initial_params<C>(3, 1);
    const auto x = random_vec(n * 5, 1);
    const auto y = random_vec(n, 2, -2, 2);
    std::vector<double> grad(C::param_count);
    g.critic_loss(params.data(), x.data(), y.data(), n, grad.data());
    check_gradient(params, grad, [&](const std::vector<double>& p) {
      std::vector<double> tmp(C::param_count);
      return g.critic_loss(p.data(), x.data(), y.data(), n, tmp.data());
    });
  }

  TEST_CASE("sac.gradients.actor_matches_finite_differences") {
    using Ac = small_nets::actor;
    using C = small_nets::critic;
    const std::size_t n = 9;
    rl::sac_gradients<small_nets> g;
    auto params = rl::sac_initial_params<Ac>(5, 0);
    const auto c1 = rl::sac_initial_params<C>(5, 1);
    const auto c2 = rl::sac_initial_params<C>(5, 2);
    const auto obs = random_vec(n * 3, 3);
    std::vector<double> eps(n * 2);
    gmi::rng r(9, 9);
    for (double& e : eps) e = r.normal();
    for (double alpha : {0.0, 0.3}) {
      std::vector<double> grad(Ac::param_count);
      const auto res = g.actor_loss(params.data(), c1.data(), c2.data(), obs.data(), eps.data(), n, alpha, -5, 2,
                                    grad.data());
      CHECK(std::isfinite(res.loss));
      check_gradient(params, grad, [&](const std::vector<double>& p) {
        std::vector<double> tmp(Ac::param_count);
        return g.actor_loss(p.data(), c1.data(), c2.data(), obs.data(), eps.data(), n, alpha, -5, 2, tmp.data()).loss;
      });
    }
    // A wrong sign in either term would flip the gradient: the loss drops along -grad.
    std::vector<double> grad(Ac::param_count), tmp(Ac::param_count);
    const double before = g.actor_loss(params.data(), c1.data(), c2.data(), obs.data(), eps.data(), n, 0.3, -5, 2,
                                       grad.data()).loss;
    for (std::size_t i = 0; i < params.size(); ++i) params[i] -= 1e-3 * grad[i];
    const double after =
        g.actor_loss(params.data(), c1.data(), c2.data(), obs.data(), eps.data(), n, 0.3, -5, 2, tmp.data()).loss;
    CHECK(after < before);
  }

  // The device update's decomposition (sac_batched.cuh) composed on the host: batched network passes with the
  // per-sample pieces of sac_sample between them (the targets' draw and soft target; the critics' input gradients
  // with d_out -1 for the smaller critic, 0 for the other, summed into the actor heads' gradient) give the same
  // targets, actor gradient, loss and mean log-prob as the per-sample reference (sac_gradients), in double.
  TEST_CASE("sac.gradients.batched_decomposition_matches_per_sample") {
    using Ac = small_nets::actor;
    using C = small_nets::critic;
    constexpr int O = 3, A = 2, X = 5;
    const std::size_t n = 33;
    const double lo = -5, hi = 2, gamma = 0.97;
    const auto actor = rl::sac_initial_params<Ac>(11, 0);
    const auto c1 = rl::sac_initial_params<C>(11, 1), c2 = rl::sac_initial_params<C>(11, 2);
    const auto obs = random_vec(n * O, 21), nxt = random_vec(n * O, 22), rew = random_vec(n, 23, -1, 0);
    std::vector<double> eps(n * A), eps_next(n * A), term(n, 0.0);
    gmi::rng r(13, 13);
    for (double& e : eps) e = r.normal();
    for (double& e : eps_next) e = r.normal();
    for (std::size_t i = 0; i < n; i += 4) term[i] = 1.0;
    nn::batch_mlp<Ac, exec::host> ab;
    nn::batch_mlp<C, exec::host> cb;
    const std::size_t AP = Ac::param_count, CP = C::param_count;
    std::vector<double> heads(n * 2 * A), x(n * X), logp(n), q1(n), q2(n);
    for (double alpha : {0.0, 0.4}) {
      // Targets.
      rl::sac_gradients<small_nets> ref;
      std::vector<double> y_ref(n), y(n);
      ref.critic_targets(actor.data(), c1.data(), c2.data(), nxt.data(), rew.data(), term.data(), eps_next.data(), n,
                         alpha, gamma, lo, hi, y_ref.data());
      ab.forward({actor.data(), AP}, {nxt.data(), n * O}, {heads.data(), heads.size()});
      for (std::size_t i = 0; i < n; ++i)
        logp[i] = rl::sac_sample::draw_row<double, O, A>(&heads[i * 2 * A], &nxt[i * O], &eps_next[i * A], lo, hi,
                                                         &x[i * X]);
      cb.forward({c1.data(), CP}, {x.data(), x.size()}, {q1.data(), n});
      cb.forward({c2.data(), CP}, {x.data(), x.size()}, {q2.data(), n});
      for (std::size_t i = 0; i < n; ++i)
        y[i] = rl::sac_sample::soft_target(q1[i], q2[i], logp[i], rew[i], term[i], alpha, gamma);
      for (std::size_t i = 0; i < n; ++i) CHECK(y[i] == doctest::Approx(y_ref[i]).epsilon(1e-12));
      // Actor.
      std::vector<double> g_ref(AP), g(AP), aacts(ab.acts_size(n)), acts1(cb.acts_size(n)), acts2(cb.acts_size(n));
      const auto res = ref.actor_loss(actor.data(), c1.data(), c2.data(), obs.data(), eps.data(), n, alpha, lo, hi,
                                      g_ref.data());
      ab.forward({actor.data(), AP}, {obs.data(), n * O}, {heads.data(), heads.size()}, {aacts.data(), aacts.size()});
      for (std::size_t i = 0; i < n; ++i)
        (void)rl::sac_sample::draw_row<double, O, A>(&heads[i * 2 * A], &obs[i * O], &eps[i * A], lo, hi, &x[i * X]);
      cb.forward({c1.data(), CP}, {x.data(), x.size()}, {q1.data(), n}, {acts1.data(), acts1.size()});
      cb.forward({c2.data(), CP}, {x.data(), x.size()}, {q2.data(), n}, {acts2.data(), acts2.size()});
      std::vector<double> d1(n), d2(n), dx1(n * X), dx2(n * X), scratch(CP), d_heads(n * 2 * A), terms(n), lps(n);
      int smaller_second = 0;
      for (std::size_t i = 0; i < n; ++i) {
        d1[i] = q1[i] <= q2[i] ? -1.0 : 0.0;
        d2[i] = q1[i] <= q2[i] ? 0.0 : -1.0;
        smaller_second += q1[i] > q2[i];
      }
      cb.backward({c1.data(), CP}, {x.data(), x.size()}, {acts1.data(), acts1.size()}, {d1.data(), n},
                  {scratch.data(), CP}, {dx1.data(), dx1.size()});
      cb.backward({c2.data(), CP}, {x.data(), x.size()}, {acts2.data(), acts2.size()}, {d2.data(), n},
                  {scratch.data(), CP}, {dx2.data(), dx2.size()});
      for (std::size_t i = 0; i < n; ++i)
        rl::sac_sample::actor_head_grad<double, O, A>(&heads[i * 2 * A], &eps[i * A], &dx1[i * X], &dx2[i * X], q1[i],
                                                      q2[i], alpha, 1.0 / double(n), lo, hi, &d_heads[i * 2 * A],
                                                      terms[i], lps[i]);
      ab.backward({actor.data(), AP}, {obs.data(), n * O}, {aacts.data(), aacts.size()},
                  {d_heads.data(), d_heads.size()}, {g.data(), AP});
      double loss = 0, mean_logp = 0;
      for (std::size_t i = 0; i < n; ++i) {
        loss += terms[i] / double(n);
        mean_logp += lps[i] / double(n);
      }
      CHECK(loss == doctest::Approx(res.loss).epsilon(1e-12));
      CHECK(mean_logp == doctest::Approx(res.log_prob).epsilon(1e-12));
      double worst = 0;
      for (std::size_t k = 0; k < AP; ++k)
        worst = std::max(worst, std::abs(g[k] - g_ref[k]) / (std::abs(g[k]) + std::abs(g_ref[k]) + 1e-12));
      CHECK(worst < 1e-10);
      // Both critics are the smaller one for some samples: the mask's two sides are exercised.
      CHECK(smaller_second > 0);
      CHECK(smaller_second < int(n));
    }
  }

  TEST_CASE("sac.polyak.target_update") {
    std::vector<float> target = {0.0f, 1.0f, -2.0f}, online = {1.0f, 1.0f, 2.0f};
    rl::polyak_update<float>({target.data(), 3}, {online.data(), 3}, 0.25f);
    CHECK(target[0] == doctest::Approx(0.25));
    CHECK(target[1] == doctest::Approx(1.0));
    CHECK(target[2] == doctest::Approx(-1.0));
    std::vector<float> shorter(2);
    CHECK_THROWS_AS(rl::polyak_update<float>({shorter.data(), 2}, {online.data(), 3}, 0.25f), config_error);

    // In the trainer: after one gradient step, target = (1 - tau) old target + tau new critic, for both.
    rl::sac_config c;
    c.batch = 32;
    c.warmup_steps = 64;
    c.replay_capacity = 1000;
    c.tau = 0.1f;
    rl::sac_trainer<envs::pendulum, rl::sac_networks<3, 1, 16>> t(c, 4, 11);
    t.train(60);  // below warmup: no update yet
    CHECK(t.updates() == 0);
    t.train(64);  // the step that reaches warmup runs updates_per_step * num_envs = 4 updates
    CHECK(t.updates() == 4);
    for (int k = 0; k < 2; ++k) {
      const std::vector<float> old(t.target_params(k).begin(), t.target_params(k).end());
      const std::vector<float> critic_before(t.critic_params(k).begin(), t.critic_params(k).end());
      t.update();
      const auto now = t.target_params(k);
      const auto critic = t.critic_params(k);
      double moved = 0;
      for (std::size_t i = 0; i < old.size(); ++i) {
        CHECK(now[i] == doctest::Approx(0.9 * old[i] + 0.1 * critic[i]).epsilon(1e-5));
        moved += std::abs(critic[i] - critic_before[i]);
      }
      CHECK(moved > 0);  // the critic took a step
    }
  }

  // updates_per_step counts gradient steps per collected transition, carried over between batch steps.
  TEST_CASE("sac.trainer.updates_per_step") {
    rl::sac_config c;
    c.batch = 16;
    c.warmup_steps = 16;
    c.replay_capacity = 1000;
    c.updates_per_step = 0.25f;
    rl::sac_trainer<envs::pendulum, rl::sac_networks<3, 1, 8>> t(c, 2, 3);
    t.train(14);
    CHECK(t.updates() == 0);  // warming up
    t.train(16);              // 0.5 owed
    CHECK(t.updates() == 0);
    t.train(18);              // 1.0 owed
    CHECK(t.updates() == 1);
    t.train(26);              // 4 more batch steps, 2 more updates
    CHECK(t.updates() == 3);
    CHECK(t.env_steps() == 26);
    CHECK(t.table().size() == 26);
    CHECK(std::isfinite(t.last_update().critic_loss));
    CHECK(t.alpha() != doctest::Approx(1.0f));  // the temperature moved
  }

  // Pendulum on host threads: the deterministic policy after training must beat a uniformly random policy by a
  // wide margin. A sign error in any gradient (actor, critic or temperature) leaves it near the random return.
  TEST_CASE("sac.learns_pendulum") {
    using nets = rl::sac_networks<3, 1, 64>;
    rl::sac_config c;
    c.batch = 128;
    c.warmup_steps = 1000;
    c.replay_capacity = 100000;
    c.actor_lr = 1e-3f;
    c.critic_lr = 1e-3f;
    c.alpha_lr = 1e-3f;
    const std::size_t steps = 5000;
    const auto start = std::chrono::steady_clock::now();
    rl::sac_trainer<envs::pendulum, nets> t(c, 1, 2024, {}, exec::host{2});
    // The random baseline: uniform actions, 16 episodes.
    double random_return = 0;
    {
      rl::env_batch<envs::pendulum> e(16, 99);
      std::vector<float> o(16 * 3), a(16), rew(16), fo(16 * 3);
      std::vector<std::uint8_t> te(16), tr(16);
      e.reset({o.data(), o.size()});
      gmi::rng r(5, 5);
      for (int s = 0; s < 200; ++s) {
        for (float& x : a) x = r.uniform(-1.0f, 1.0f);
        e.step({a.data(), 16}, {o.data(), o.size()}, {rew.data(), 16}, {te.data(), 16}, {tr.data(), 16});
        for (float x : rew) random_return += x / 16.0;
      }
    }
    for (std::size_t done = 0; done < steps; done += 1000) {
      t.train(done + 1000);
      const auto s = t.last_update();
      std::printf("sac pendulum: env_steps %zu updates %llu alpha %.3f critic %.3f actor %.3f eval %.1f (%.1f s)\n",
                  t.env_steps(), static_cast<unsigned long long>(t.updates()), s.alpha, s.critic_loss, s.actor_loss,
                  t.evaluate(8, 123), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    const double final_return = t.evaluate(16, 4242);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("sac pendulum: random policy %.1f, trained %.1f after %zu env steps, %.1f s\n", random_return,
                final_return, t.env_steps(), seconds);
    CHECK(random_return < -900.0);
    CHECK(final_return > -400.0);
    CHECK(final_return > random_return + 600.0);
  }
}

#include <doctest/doctest.h>

#include <gmi/nn/actor_critic.hpp>
#include <gmi/nn/heads.hpp>

#include <cmath>
#include <vector>

#include "fd.hpp"

namespace {
using namespace gmi::nn;
}

TEST_SUITE("cpu") {
  TEST_CASE("nn.gaussian.log_prob_and_entropy_gradients_match_finite_differences") {
    using g = gaussian<3, double>;
    std::vector<double> mu = {0.3, -1.2, 0.05}, ls = {-0.4, 0.2, -1.1}, a = {0.9, -0.7, -0.3};
    // Closed form against a univariate normal density.
    double want = 0;
    for (int j = 0; j < 3; ++j) {
      const double s = std::exp(ls[j]);
      want += std::log(std::exp(-0.5 * std::pow((a[j] - mu[j]) / s, 2)) / (s * std::sqrt(2 * M_PI)));
    }
    CHECK(g::log_prob(mu.data(), ls.data(), a.data()) == doctest::Approx(want).epsilon(1e-12));
    CHECK(g::entropy(ls.data()) == doctest::Approx(3 * 0.5 * (1 + std::log(2 * M_PI)) + ls[0] + ls[1] + ls[2]));
    std::vector<double> d_mu(3, 0.0), d_ls(3, 0.0);
    g::log_prob_grad(mu.data(), ls.data(), a.data(), 2.0, d_mu.data(), d_ls.data());
    g::entropy_grad(-0.5, d_ls.data());
    auto loss = [&] { return 2.0 * g::log_prob(mu.data(), ls.data(), a.data()) - 0.5 * g::entropy(ls.data()); };
    for (int j = 0; j < 3; ++j) {
      CHECK(nn_test::close(d_mu[j], nn_test::central_difference(loss, mu[j]), 1e-8));
      CHECK(nn_test::close(d_ls[j], nn_test::central_difference(loss, ls[j]), 1e-8));
    }
  }

  TEST_CASE("nn.gaussian.sample_is_distributed_as_asked_and_reports_its_log_prob") {
    using g = gaussian<2, float>;
    const float mu[2] = {1.5f, -0.5f}, ls[2] = {std::log(0.5f), 0.0f};
    gmi::rng r(5, 9);
    double sum[2] = {0, 0}, sq[2] = {0, 0};
    const int n = 40000;
    for (int s = 0; s < n; ++s) {
      float a[2], lp;
      g::sample(mu, ls, r, a, &lp);
      CHECK(lp == doctest::Approx(g::log_prob(mu, ls, a)).epsilon(1e-4));
      for (int j = 0; j < 2; ++j) {
        sum[j] += a[j];
        sq[j] += double(a[j]) * a[j];
      }
    }
    for (int j = 0; j < 2; ++j) {
      const double m = sum[j] / n, sd = std::sqrt(sq[j] / n - m * m);
      CHECK(m == doctest::Approx(mu[j]).epsilon(0.02).scale(1));
      CHECK(sd == doctest::Approx(std::exp(ls[j])).epsilon(0.02));
    }
  }

  TEST_CASE("nn.categorical.gradients_match_finite_differences") {
    using c = categorical<4, double>;
    std::vector<double> z = {0.2, -1.3, 2.1, 0.7};
    double p[4];
    c::softmax(z.data(), p);
    CHECK(p[0] + p[1] + p[2] + p[3] == doctest::Approx(1.0));
    CHECK(c::log_prob(z.data(), 2) == doctest::Approx(std::log(p[2])));
    for (int a = 0; a < 4; ++a) {
      std::vector<double> d(4, 0.0);
      c::log_prob_grad(z.data(), a, 1.5, d.data());
      c::entropy_grad(z.data(), 0.3, d.data());
      auto loss = [&] { return 1.5 * c::log_prob(z.data(), a) + 0.3 * c::entropy(z.data()); };
      for (int k = 0; k < 4; ++k) CHECK(nn_test::close(d[k], nn_test::central_difference(loss, z[k]), 1e-8));
    }
    // Large logits do not overflow.
    const double big[4] = {1000, 999, -5, 0};
    CHECK(std::isfinite(c::entropy(big)));
    CHECK(c::log_prob(big, 0) == doctest::Approx(-std::log1p(std::exp(-1.0))));
  }

  TEST_CASE("nn.categorical.sample_frequencies_follow_softmax") {
    using c = categorical<3, float>;
    const float z[3] = {0.0f, 1.0f, -1.0f};
    float p[3];
    c::softmax(z, p);
    gmi::rng r(1, 2);
    int hits[3] = {0, 0, 0};
    const int n = 60000;
    for (int s = 0; s < n; ++s) {
      float lp;
      const int a = c::sample(z, r, &lp);
      REQUIRE(a >= 0);
      REQUIRE(a < 3);
      CHECK(lp == doctest::Approx(std::log(p[a])).epsilon(1e-5));
      ++hits[a];
    }
    for (int k = 0; k < 3; ++k) CHECK(double(hits[k]) / n == doctest::Approx(p[k]).epsilon(0.03));
  }

  TEST_CASE("nn.actor_critic.gaussian_backward_matches_finite_differences") {
    using ac = gaussian_actor_critic<5, 2, layers<8, 6>, elu, double>;
    static_assert(ac::param_count == (5 * 8 + 8) + (8 * 6 + 6) + (6 * 3 + 3) + 2);
    static_assert(ac::log_std_offset == ac::param_count - 2);
    auto params = nn_test::random_vector(ac::param_count, 31, -0.7, 0.7);
    auto obs = nn_test::random_vector(5, 32, -2, 2);
    const std::vector<double> action = {0.4, -0.9};
    const double w_lp = -1.3, w_v = 0.7, w_h = 0.01;
    // L = w_lp * log_prob(action) + w_v * value^2 + w_h * entropy
    auto loss = [&] {
      double mu[2], v;
      ac::forward(params.data(), obs.data(), mu, &v);
      const double* ls = ac::log_std(params.data());
      return w_lp * ac::head::log_prob(mu, ls, action.data()) + w_v * v * v + w_h * ac::head::entropy(ls);
    };
    double mu[2], v;
    std::vector<double> acts(ac::acts_size), dz(ac::acts_size), d_params(ac::param_count, 0.0), d_obs(5);
    ac::forward(params.data(), obs.data(), mu, &v, acts.data());
    double d_mu[2] = {0, 0}, d_ls[2] = {0, 0};
    ac::head::log_prob_grad(mu, ac::log_std(params.data()), action.data(), w_lp, d_mu, d_ls);
    ac::head::entropy_grad(w_h, d_ls);
    ac::backward(params.data(), obs.data(), acts.data(), d_mu, 2 * w_v * v, d_ls, d_params.data(), dz.data(),
                 d_obs.data());
    int bad = 0;
    for (int p = 0; p < ac::param_count; ++p)
      if (!nn_test::close(d_params[p], nn_test::central_difference(loss, params[p]), 1e-6)) ++bad;
    CHECK(bad == 0);
    for (int i = 0; i < 5; ++i) CHECK(nn_test::close(d_obs[i], nn_test::central_difference(loss, obs[i]), 1e-6));
    // act() draws the same action as forward + sample with the same stream.
    gmi::rng r1(3, 4), r2(3, 4);
    double a1[2], lp1, v1, a2[2], lp2;
    ac::act(params.data(), obs.data(), r1, a1, &lp1, &v1);
    ac::head::sample(mu, ac::log_std(params.data()), r2, a2, &lp2);
    CHECK(a1[0] == a2[0]);
    CHECK(a1[1] == a2[1]);
    CHECK(lp1 == lp2);
    CHECK(v1 == v);
  }

  TEST_CASE("nn.actor_critic.categorical_backward_matches_finite_differences") {
    using ac = categorical_actor_critic<3, 4, layers<7>, tanh_act, double>;
    auto params = nn_test::random_vector(ac::param_count, 41, -0.8, 0.8);
    auto obs = nn_test::random_vector(3, 42, -2, 2);
    const int action = 2;
    auto loss = [&] {
      double z[4], v;
      ac::forward(params.data(), obs.data(), z, &v);
      return 0.9 * ac::head::log_prob(z, action) - 0.4 * v + 0.05 * ac::head::entropy(z);
    };
    double z[4], v;
    std::vector<double> acts(ac::acts_size), dz(ac::acts_size), d_params(ac::param_count, 0.0);
    ac::forward(params.data(), obs.data(), z, &v, acts.data());
    double d_z[4] = {0, 0, 0, 0};
    ac::head::log_prob_grad(z, action, 0.9, d_z);
    ac::head::entropy_grad(z, 0.05, d_z);
    ac::backward(params.data(), obs.data(), acts.data(), d_z, -0.4, d_params.data(), dz.data());
    int bad = 0;
    for (int p = 0; p < ac::param_count; ++p)
      if (!nn_test::close(d_params[p], nn_test::central_difference(loss, params[p]), 1e-6)) ++bad;
    CHECK(bad == 0);
  }
}

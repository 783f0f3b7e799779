// The actor-critics' policy interface (what PPO, APPO and serving call): log_prob_grad and entropy_grad through
// backward match finite differences for both the Gaussian and the categorical network, policy_gradient is their
// combination, and sampling stores what log_prob reads.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <gmi/nn/actor_critic.hpp>

#include "fd.hpp"

using namespace gmi::nn;

namespace {
// L = w_lp * log_prob(action) + w_h * entropy + w_v * value^2 through the network; its gradient from the interface
// (log_prob_grad, entropy_grad, backward with d_dist) against central differences over every parameter and input.
template <class Net>
int mismatched_gradients(const std::vector<double>& action, std::uint64_t seed) {
  auto params = nn_test::random_vector(Net::param_count, seed, -0.7, 0.7);
  auto obs = nn_test::random_vector(Net::obs_dim, seed + 1, -2, 2);
  const double w_lp = -1.3, w_v = 0.7, w_h = 0.2;
  auto loss = [&] {
    double out[Net::dist_dim], v;
    Net::forward(params.data(), obs.data(), out, &v);
    return w_lp * Net::log_prob(params.data(), out, action.data()) + w_h * Net::entropy(params.data(), out) +
           w_v * v * v;
  };
  double out[Net::dist_dim], v;
  std::vector<double> acts(Net::acts_size), dz(Net::acts_size), d_params(Net::param_count, 0.0), d_obs(Net::obs_dim);
  Net::forward(params.data(), obs.data(), out, &v, acts.data());
  double d_out[Net::dist_dim] = {};
  double d_dist[Net::dist_param_count > 0 ? Net::dist_param_count : 1] = {};
  Net::log_prob_grad(params.data(), out, action.data(), w_lp, d_out, d_dist);
  Net::entropy_grad(params.data(), out, w_h, d_out, d_dist);
  Net::backward(params.data(), obs.data(), acts.data(), d_out, 2 * w_v * v, d_dist, d_params.data(), dz.data(),
                d_obs.data());
  int bad = 0;
  for (int p = 0; p < Net::param_count; ++p)
    if (!nn_test::close(d_params[p], nn_test::central_difference(loss, params[p]), 1e-6)) ++bad;
  for (int i = 0; i < Net::obs_dim; ++i)
    if (!nn_test::close(d_obs[i], nn_test::central_difference(loss, obs[i]), 1e-6)) ++bad;
  return bad;
}

// policy_gradient (assigned) = scale * (d_log_prob * dlogp - entropy_coef * dH), with no bounds term.
template <class Net>
double policy_gradient_gap(const std::vector<double>& action, std::uint64_t seed) {
  const auto params = nn_test::random_vector(Net::param_count, seed, -0.7, 0.7);
  const auto out = nn_test::random_vector(Net::dist_dim, seed + 2, -0.9, 0.9);  // inside the bounds
  constexpr int D = Net::dist_param_count > 0 ? Net::dist_param_count : 1;
  const double d_lp = -0.8, ent = 0.01, scale = 0.25;
  double want_out[Net::dist_dim] = {}, want_dist[D] = {}, got_out[Net::dist_dim], got_dist[D] = {};
  Net::log_prob_grad(params.data(), out.data(), action.data(), scale * d_lp, want_out, want_dist);
  Net::entropy_grad(params.data(), out.data(), -scale * ent, want_out, want_dist);
  const double bounds =
      Net::policy_gradient(params.data(), out.data(), action.data(), d_lp, ent, 1.1, 5.0, scale, got_out, got_dist);
  double gap = std::abs(bounds);
  for (int k = 0; k < Net::dist_dim; ++k) gap = std::max(gap, std::abs(got_out[k] - want_out[k]));
  for (int k = 0; k < Net::dist_param_count; ++k) gap = std::max(gap, std::abs(got_dist[k] - want_dist[k]));
  return gap;
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("nn.policy_interface.gaussian_gradients_match_finite_differences") {
    using ac = gaussian_actor_critic<5, 2, layers<8, 6>, elu, double>;
    static_assert(!ac::discrete && ac::dist_dim == 2 && ac::act_dim == 2 && ac::dist_param_count == 2);
    CHECK(mismatched_gradients<ac>({0.4, -0.9}, 31) == 0);
    CHECK(policy_gradient_gap<ac>({0.4, -0.9}, 33) < 1e-12);
  }

  TEST_CASE("nn.policy_interface.categorical_gradients_match_finite_differences") {
    using ac = categorical_actor_critic<3, 4, layers<7, 5>, tanh_act, double>;
    static_assert(ac::discrete && ac::dist_dim == 4 && ac::act_dim == 1 && ac::dist_param_count == 0);
    for (int a = 0; a < 4; ++a) {
      CAPTURE(a);
      CHECK(mismatched_gradients<ac>({double(a)}, 41 + a) == 0);
      CHECK(policy_gradient_gap<ac>({double(a)}, 51 + a) < 1e-12);
    }
  }

  // A wrong entropy gradient (sign flipped) is caught: the check can fail.
  TEST_CASE("nn.policy_interface.finite_differences_see_a_wrong_entropy_gradient") {
    using ac = categorical_actor_critic<3, 4, layers<7>, tanh_act, double>;
    const auto params = nn_test::random_vector(ac::param_count, 61, -0.7, 0.7);
    auto out = nn_test::random_vector(4, 62, -1, 1);
    double d_out[4] = {};
    ac::entropy_grad(params.data(), out.data(), -1.0, d_out, nullptr);  // the wrong sign
    auto h = [&] { return ac::entropy(params.data(), out.data()); };
    int bad = 0;
    for (int k = 0; k < 4; ++k)
      if (!nn_test::close(d_out[k], nn_test::central_difference(h, out[k]), 1e-6)) ++bad;
    CHECK(bad > 0);
  }

  TEST_CASE("nn.policy_interface.categorical_sample_stores_the_index") {
    using ac = categorical_actor_critic<3, 3, layers<6>, elu, float>;
    const auto params = nn_test::random_vector<float>(ac::param_count, 71, -1, 1);
    const float logits[3] = {0.5f, -1.0f, 2.0f};
    gmi::rng r(5, 6);
    int hits[3] = {0, 0, 0};
    for (int s = 0; s < 3000; ++s) {
      float a, lp;
      ac::sample(params.data(), logits, r, &a, &lp);
      REQUIRE((a == 0.0f || a == 1.0f || a == 2.0f));
      CHECK(lp == ac::log_prob(params.data(), logits, &a));
      ++hits[static_cast<int>(a)];
    }
    CHECK(hits[2] > hits[0]);
    CHECK(hits[0] > hits[1]);
  }

  // The Gaussian's sample through the interface draws what the head draws with the network's log_std.
  TEST_CASE("nn.policy_interface.gaussian_sample_is_the_heads") {
    using ac = gaussian_actor_critic<4, 2, layers<8>, elu, float>;
    auto params = nn_test::random_vector<float>(ac::param_count, 81, -1, 1);
    const float mu[2] = {0.3f, -0.2f};
    gmi::rng r1(1, 2), r2(1, 2);
    float a1[2], a2[2], lp1, lp2;
    ac::sample(params.data(), mu, r1, a1, &lp1);
    ac::head::sample(mu, ac::log_std(params.data()), r2, a2, &lp2);
    CHECK(a1[0] == a2[0]);
    CHECK(a1[1] == a2[1]);
    CHECK(lp1 == lp2);
    CHECK(ac::entropy(params.data(), mu) == ac::head::entropy(ac::log_std(params.data())));
  }
}

#include <doctest/doctest.h>

#include <gmi/nn/mlp.hpp>

#include <cmath>
#include <vector>

#include "fd.hpp"

namespace {
using namespace gmi::nn;

// Loss = sum_k c_k y_k, so dL/dy = c. Checks d_params and d_x of the per-sample backward against finite
// differences of the forward, in double.
template <class Net>
void check_backward_against_fd(std::uint64_t seed) {
  using T = typename Net::scalar;
  static_assert(std::is_same_v<T, double>);
  auto params = nn_test::random_vector(Net::param_count, seed, -0.6, 0.6);
  auto x = nn_test::random_vector(Net::in, seed + 1, -1.5, 1.5);
  const auto c = nn_test::random_vector(Net::out, seed + 2);
  auto loss = [&] {
    std::vector<double> y(Net::out);
    Net::forward(params.data(), x.data(), y.data());
    double l = 0;
    for (int k = 0; k < Net::out; ++k) l += c[k] * y[k];
    return l;
  };
  std::vector<double> acts(Net::activation_size), dz(Net::activation_size), y(Net::out);
  Net::forward(params.data(), x.data(), y.data(), acts.data());
  std::vector<double> d_params(Net::param_count, 0.25), d_x(Net::in);  // backward adds: start from non-zero
  Net::backward(params.data(), x.data(), acts.data(), c.data(), d_params.data(), d_x.data(), dz.data());
  int bad = 0;
  for (int p = 0; p < Net::param_count; ++p) {
    const double fd = nn_test::central_difference(loss, params[p]);
    if (!nn_test::close(d_params[p] - 0.25, fd, 1e-6)) {
      if (++bad < 5) FAIL_CHECK("param " << p << ": backward " << d_params[p] - 0.25 << ", finite difference " << fd);
    }
  }
  for (int i = 0; i < Net::in; ++i) {
    const double fd = nn_test::central_difference(loss, x[i]);
    CHECK_MESSAGE(nn_test::close(d_x[i], fd, 1e-6), "input " << i << ": backward " << d_x[i] << ", fd " << fd);
  }
  CHECK(bad == 0);
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("nn.activation.derivatives_match_finite_differences") {
    auto check = [](auto act) {
      using A = decltype(act);
      for (double x : {-2.3, -0.7, -0.01, 0.013, 0.4, 1.9}) {
        const double h = 1e-6;
        const double fd = (A::f(x + h) - A::f(x - h)) / (2 * h);
        CHECK(nn_test::close(A::grad_from_output(A::f(x)), fd, 1e-7));
      }
    };
    check(elu{});
    check(relu{});
    check(tanh_act{});
    check(identity{});
    CHECK(elu::f(-1.0) == doctest::Approx(std::exp(-1.0) - 1));
    CHECK(elu::f(2.0f) == 2.0f);
  }

  TEST_CASE("nn.mlp.forward_matches_hand_computation") {
    using net = mlp<layers<2, 2, 1>, relu, identity, double>;
    // W0 = [[1, -1], [0.5, 2]], b0 = [0, -1], W1 = [[3, -2]], b1 = [0.5]
    const std::vector<double> p = {1, -1, 0.5, 2, 0, -1, 3, -2, 0.5};
    static_assert(net::param_count == 9);
    const double x[2] = {2, 1};
    double y[1], acts[net::activation_size];
    net::forward(p.data(), x, y, acts);
    // h = relu([1, 2]) + [0, -1] -> relu([1, 3 - 1]) = [1, 2]; y = 3 * 1 - 2 * 2 + 0.5 = -0.5
    CHECK(acts[0] == 1.0);
    CHECK(acts[1] == 2.0);
    CHECK(y[0] == -0.5);
    CHECK(acts[2] == -0.5);
  }

  TEST_CASE("nn.mlp.backward_matches_finite_differences") {
    SUBCASE("elu, one hidden layer") { check_backward_against_fd<mlp<layers<3, 5, 2>, elu, identity, double>>(11); }
    SUBCASE("elu, two hidden layers (cartpole shape)") {
      check_backward_against_fd<mlp<layers<4, 32, 32, 1>, elu, identity, double>>(12);
    }
    SUBCASE("relu") { check_backward_against_fd<mlp<layers<6, 16, 8, 3>, relu, identity, double>>(13); }
    SUBCASE("tanh") { check_backward_against_fd<mlp<layers<5, 12, 4>, tanh_act, identity, double>>(14); }
    SUBCASE("activation on the output too") {
      check_backward_against_fd<mlp<layers<4, 9, 7>, elu, tanh_act, double>>(15);
    }
    SUBCASE("single linear layer") { check_backward_against_fd<mlp<layers<7, 3>, elu, identity, double>>(16); }
  }

  TEST_CASE("nn.mlp.float_and_double_agree") {
    using netd = mlp<layers<4, 32, 32, 2>, elu, identity, double>;
    using netf = netd::rebind<float>;
    const auto pd = nn_test::random_vector(netd::param_count, 3, -0.5, 0.5);
    const auto xd = nn_test::random_vector(4, 4);
    std::vector<float> pf(pd.begin(), pd.end()), xf(xd.begin(), xd.end());
    double yd[2];
    float yf[2];
    netd::forward(pd.data(), xd.data(), yd);
    netf::forward(pf.data(), xf.data(), yf);
    for (int k = 0; k < 2; ++k) CHECK(yf[k] == doctest::Approx(yd[k]).epsilon(1e-5));
  }

  TEST_CASE("nn.mlp.host_batch_equals_per_sample_sum_and_is_deterministic") {
    using net = mlp<layers<5, 24, 16, 3>, elu, identity, double>;
    const std::size_t n = 777;
    const auto params = nn_test::random_vector(net::param_count, 21, -0.5, 0.5);
    const auto x = nn_test::random_vector(n * net::in, 22);
    const auto d_out = nn_test::random_vector(n * net::out, 23);
    std::vector<double> out(n * net::out), acts(n * net::activation_size);
    batch_mlp<net, gmi::exec::host> one(gmi::exec::host{.threads = 1});
    batch_mlp<net, gmi::exec::host> many(gmi::exec::host{.threads = 8});
    using cs = gmi::host_span<const double>;
    using ms = gmi::host_span<double>;
    one.forward(cs(params.data(), params.size()), cs(x.data(), x.size()), ms(out.data(), out.size()),
                ms(acts.data(), acts.size()));
    std::vector<double> g1(net::param_count), g8(net::param_count), dx1(n * net::in), dx8(n * net::in);
    one.backward(cs(params.data(), params.size()), cs(x.data(), x.size()), cs(acts.data(), acts.size()),
                 cs(d_out.data(), d_out.size()), ms(g1.data(), g1.size()), ms(dx1.data(), dx1.size()));
    many.backward(cs(params.data(), params.size()), cs(x.data(), x.size()), cs(acts.data(), acts.size()),
                  cs(d_out.data(), d_out.size()), ms(g8.data(), g8.size()), ms(dx8.data(), dx8.size()));
    CHECK(g1 == g8);
    CHECK(dx1 == dx8);
    // Reference: the per-sample backward summed in a plain loop.
    std::vector<double> ref(net::param_count, 0.0), dz(net::activation_size), a(net::activation_size), y(net::out),
        dx(net::in);
    for (std::size_t s = 0; s < n; ++s) {
      net::forward(params.data(), x.data() + s * net::in, y.data(), a.data());
      for (int k = 0; k < net::out; ++k) CHECK(y[k] == out[s * net::out + k]);
      net::backward(params.data(), x.data() + s * net::in, a.data(), d_out.data() + s * net::out, ref.data(),
                    dx.data(), dz.data());
      for (int i = 0; i < net::in; ++i) CHECK(dx[i] == doctest::Approx(dx1[s * net::in + i]).epsilon(1e-12));
    }
    for (int p = 0; p < net::param_count; ++p) CHECK(g1[p] == doctest::Approx(ref[p]).epsilon(1e-10));
    // Inference without an activation record gives the same outputs.
    std::vector<double> out2(out.size());
    many.forward(cs(params.data(), params.size()), cs(x.data(), x.size()), ms(out2.data(), out2.size()));
    CHECK(out2 == out);
  }

  TEST_CASE("nn.mlp.batch_sizes_are_checked") {
    using net = mlp<layers<3, 4, 2>, elu>;
    std::vector<float> params(net::param_count), x(10), out(8);
    batch_mlp<net, gmi::exec::host> b;
    try {
      b.forward({params.data(), params.size()}, {x.data(), x.size()}, {out.data(), out.size()});
      FAIL("no error for an x size that is not a multiple of 3");
    } catch (const gmi::config_error& e) {
      CHECK(std::string(e.what()) == "mlp forward: x size: got 10, need a multiple of the input width 3");
    }
  }
}

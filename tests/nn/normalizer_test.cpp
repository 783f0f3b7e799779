#include <doctest/doctest.h>

#include <gmi/nn/normalizer.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "fd.hpp"

using gmi::nn::running_mean_std;

TEST_SUITE("cpu") {
  TEST_CASE("nn.normalizer.equals_two_pass_statistics_and_merges") {
    const int dim = 3;
    const std::size_t n = 1001;
    auto x = nn_test::random_vector<float>(n * dim, 7, -3, 5);
    for (std::size_t s = 0; s < n; ++s) x[s * dim + 2] = 1000.0f + 0.01f * x[s * dim + 2];  // large offset
    running_mean_std<gmi::exec::host> whole(dim), halves(dim), a(dim), b(dim);
    whole.update({x.data(), x.size()});
    const std::size_t cut = 400 * dim;
    halves.update({x.data(), cut});
    halves.update({x.data() + cut, x.size() - cut});
    a.update({x.data(), cut});
    b.update({x.data() + cut, x.size() - cut});
    a.merge(b.stats());
    for (int f = 0; f < dim; ++f) {
      double mean = 0, var = 0;
      for (std::size_t s = 0; s < n; ++s) mean += x[s * dim + f];
      mean /= n;
      for (std::size_t s = 0; s < n; ++s) var += std::pow(x[s * dim + f] - mean, 2);
      var /= n;
      CHECK(whole.mean()[f] == doctest::Approx(mean).epsilon(1e-12));
      CHECK(whole.variance()[f] == doctest::Approx(var).epsilon(1e-10));
      CHECK(halves.mean()[f] == doctest::Approx(mean).epsilon(1e-12));
      CHECK(halves.variance()[f] == doctest::Approx(var).epsilon(1e-10));
      CHECK(a.mean()[f] == doctest::Approx(mean).epsilon(1e-12));
      CHECK(a.variance()[f] == doctest::Approx(var).epsilon(1e-10));
    }
    CHECK(whole.count() == n);
    CHECK(a.count() == n);
  }

  TEST_CASE("nn.normalizer.normalizes_and_clips") {
    running_mean_std<gmi::exec::host> rms(2, {.clip = 2.0f, .epsilon = 1e-8});
    // Before any data the normalizer is the identity (clipped).
    std::vector<float> in = {0.5f, 7.0f}, out(2);
    rms.normalize({in.data(), 2}, {out.data(), 2});
    CHECK(out[0] == 0.5f);
    CHECK(out[1] == 2.0f);
    const std::vector<float> batch = {1, 10, 3, 10, 5, 10, 7, 10};  // feature 0: mean 4, var 5; feature 1: var 0
    rms.update({batch.data(), batch.size()});
    const std::vector<float> probe = {6.0f, 10.0f, -100.0f, 11.0f};
    std::vector<float> y(4);
    rms.normalize({probe.data(), 4}, {y.data(), 4});
    CHECK(y[0] == doctest::Approx(2.0 / std::sqrt(5.0)));
    CHECK(y[1] == 0.0f);
    CHECK(y[2] == -2.0f);
    CHECK(y[3] == 2.0f);
    const auto v = rms.view();
    CHECK(v.denormalize(0, y[0]) == doctest::Approx(6.0));
  }

  TEST_CASE("nn.normalizer.bad_config_is_rejected_with_the_value") {
    CHECK_THROWS_WITH_AS(running_mean_std<gmi::exec::host>(0), "normalizer dim: got 0, need >= 1", gmi::config_error);
    CHECK_THROWS_WITH_AS(running_mean_std<gmi::exec::host>(2, {.clip = -1.0f}), "normalizer clip: got -1, need > 0",
                         gmi::config_error);
    running_mean_std<gmi::exec::host> rms(3);
    std::vector<float> x(7);
    CHECK_THROWS_WITH_AS(rms.update({x.data(), x.size()}), "normalizer update: batch size: got 7, need a multiple of dim 3",
                         gmi::config_error);
  }
}

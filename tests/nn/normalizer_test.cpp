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

  // With a window the held statistics shrink to window - n samples before a batch of n comes in: the mean and
  // variance they carry stay, their weight drops. The result equals the merge of a batch of the kept size.
  TEST_CASE("nn.normalizer.window_keeps_the_recent_samples") {
    auto first = nn_test::random_vector<float>(200, 3, 90, 110), second = nn_test::random_vector<float>(200, 4, -1, 1);
    running_mean_std<gmi::exec::host> windowed(1, {.window = 300}), all(1), a(1), b(1);
    windowed.update({first.data(), first.size()});
    CHECK(windowed.count() == 200);  // below the window nothing is forgotten
    windowed.update({second.data(), second.size()});
    all.update({first.data(), first.size()});
    all.update({second.data(), second.size()});
    a.update({first.data(), first.size()});
    b.update({second.data(), second.size()});
    // By hand: a's record cut to 100 samples (M2 halved), then merged with b's.
    const double ma = a.mean()[0], mb = b.mean()[0], m2a = a.m2()[0] / 2, m2b = b.m2()[0];
    const double mean = (100 * ma + 200 * mb) / 300, delta = mb - ma;
    const double m2 = m2a + m2b + delta * delta * 100 * 200 / 300;
    CHECK(windowed.count() == 300);
    CHECK(windowed.mean()[0] == doctest::Approx(mean).epsilon(1e-12));
    CHECK(windowed.m2()[0] == doctest::Approx(m2).epsilon(1e-12));
    CHECK(all.count() == 400);
    CHECK(all.mean()[0] == doctest::Approx((200 * ma + 200 * mb) / 400).epsilon(1e-12));

    // A scale that shrinks: after 20 batches near 0, a window of 1000 has forgotten the first batch near 100;
    // every sample ever seen has not.
    running_mean_std<gmi::exec::host> follows(1, {.window = 1000}), remembers(1);
    auto big = nn_test::random_vector<float>(1000, 5, 90, 110);
    follows.update({big.data(), big.size()});
    remembers.update({big.data(), big.size()});
    for (int k = 0; k < 20; ++k) {
      auto small = nn_test::random_vector<float>(500, 10 + k, -1, 1);
      follows.update({small.data(), small.size()});
      remembers.update({small.data(), small.size()});
    }
    CHECK(follows.count() == 1000);
    CHECK(std::abs(follows.mean()[0]) < 0.05);
    CHECK(follows.variance()[0] < 0.5);
    CHECK(remembers.mean()[0] > 8);
    CHECK(remembers.variance()[0] > 700);

    // A batch larger than the window replaces the statistics.
    running_mean_std<gmi::exec::host> replaced(1, {.window = 100});
    replaced.update({first.data(), first.size()});
    replaced.update({second.data(), second.size()});
    CHECK(replaced.count() == 200);
    CHECK(replaced.mean()[0] == doctest::Approx(mb).epsilon(1e-12));
    CHECK(replaced.m2()[0] == doctest::Approx(m2b).epsilon(1e-12));
  }

  TEST_CASE("nn.normalizer.bad_config_is_rejected_with_the_value") {
    CHECK_THROWS_WITH_AS(running_mean_std<gmi::exec::host>(0), "normalizer dim: got 0, need >= 1", gmi::config_error);
    CHECK_THROWS_WITH_AS(running_mean_std<gmi::exec::host>(2, {.clip = -1.0f}), "normalizer clip: got -1, need > 0",
                         gmi::config_error);
    CHECK_THROWS_WITH_AS(running_mean_std<gmi::exec::host>(2, {.window = -5}),
                         "normalizer window: got -5, need >= 0 samples and finite (0: every sample)", gmi::config_error);
    running_mean_std<gmi::exec::host> rms(3);
    std::vector<float> x(7);
    CHECK_THROWS_WITH_AS(rms.update({x.data(), x.size()}), "normalizer update: batch size: got 7, need a multiple of dim 3",
                         gmi::config_error);
  }
}

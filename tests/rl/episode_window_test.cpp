#include <doctest/doctest.h>

#include <gmi/rl/episode_window.hpp>

TEST_SUITE("cpu") {
  TEST_CASE("rl.episode_window.closes_after_min_episodes") {
    gmi::rl::episode_window w(32);
    CHECK_FALSE(w.add({20, 200.0, 400.0}).has_value());
    const auto mean = w.add({20, 600.0, 800.0});
    REQUIRE(mean.has_value());
    CHECK(*mean == doctest::Approx(20.0));  // 800 over 40 episodes
    CHECK(*w.last_length() == doctest::Approx(30.0));
    CHECK_FALSE(w.add({1, 1.0, 1.0}).has_value());  // a new window
  }

  // A long run keeps at most `cap` points, evenly spread, first and latest included.
  TEST_CASE("rl.learning_curve.thins_evenly_and_keeps_the_latest") {
    gmi::rl::learning_curve c(8);
    for (int k = 0; k < 5; ++k) c.add(k, 10.0 * k);
    auto p = c.points();
    REQUIRE(p.size() == 5);
    CHECK(p[4][1] == 40.0);
    for (int k = 5; k < 100; ++k) c.add(k, 10.0 * k);
    p = c.points();
    CHECK(p.size() <= 9);  // the kept points and the latest
    CHECK(p.front()[0] == 0.0);
    CHECK(p.back()[0] == 99.0);
    const double step = p[1][0] - p[0][0];
    for (std::size_t i = 1; i + 1 < p.size(); ++i) CHECK(p[i][0] - p[i - 1][0] == step);
  }
}

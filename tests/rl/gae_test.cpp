#include <doctest/doctest.h>

#include <gmi/rl/gae.hpp>

#include <cstdint>
#include <vector>

TEST_SUITE("cpu") {
  // Reference: the anchor's loop, in double, for 2 environments with an episode end in one of them.
  TEST_CASE("rl.gae.matches_reference_and_cuts_at_episode_end") {
    const int horizon = 5, envs = 2;
    const float gamma = 0.9f, lambda = 0.8f;
    std::vector<float> r{1, 0.5f, 2, -1, 0, 1, 1, 0.25f, 3, 2};
    std::vector<std::uint8_t> ends{0, 0, 0, 1, 1, 0, 0, 0, 0, 0};
    std::vector<float> v{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f, 1.0f, 1.1f, 1.2f};
    std::vector<float> adv(10), ret(10);
    for (int e = 0; e < envs; ++e) gmi::rl::gae_column(e, envs, horizon, gamma, lambda, r.data(), ends.data(), v.data(), adv.data(), ret.data());
    for (int e = 0; e < envs; ++e) {
      double g = 0;
      for (int t = horizon - 1; t >= 0; --t) {
        const int at = t * envs + e;
        const double nd = ends[at] ? 0.0 : 1.0;
        const double delta = r[at] + gamma * v[at + envs] * nd - v[at];
        g = delta + gamma * lambda * nd * g;
        CHECK(adv[at] == doctest::Approx(g).epsilon(1e-6));
        CHECK(ret[at] == doctest::Approx(g + v[at]).epsilon(1e-6));
      }
    }
    // The end at (t=2, env 0) means step 2 of env 0 does not see row 3's value.
    CHECK(adv[4] == doctest::Approx(0.0 - v[4]).epsilon(1e-6));
  }
}

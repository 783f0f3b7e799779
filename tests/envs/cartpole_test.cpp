// Cartpole against the anchor's equations (shared/anchors/torch_isaacgym_style.py), reimplemented here in double.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <gmi/envs/cartpole.hpp>
#include <gmi/rl/env_batch.hpp>

namespace {
struct anchor_out {
  double x, xd, th, thd, reward;
  bool done;
};
// One anchor step for one environment at episode step t (before the increment).
anchor_out anchor_step(double x, double xd, double th, double thd, double action, int t) {
  const double f = std::clamp(action, -1.0, 1.0) * 10.0;
  const double g = 9.8, mc = 1.0, mp = 0.1, l = 0.5, dt = 1.0 / 60;
  const double ct = std::cos(th), st = std::sin(th);
  const double tmp = (f + mp * l * thd * thd * st) / (mc + mp);
  const double tha = (g * st - ct * tmp) / (l * (4.0 / 3 - mp * ct * ct / (mc + mp)));
  const double xa = tmp - mp * l * tha * ct / (mc + mp);
  x = x + dt * xd;
  xd = xd + dt * xa;
  th = th + dt * thd;
  thd = thd + dt * tha;
  double r = 1.0 - th * th - 0.01 * std::fabs(xd) - 0.005 * std::fabs(thd);
  t += 1;
  const bool done = std::fabs(x) > 3.0 || std::fabs(th) > M_PI / 2 || t >= 500;
  if (done && t < 500) r = -2.0;
  return {x, xd, th, thd, r, done};
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("envs.cartpole.matches_anchor_equations") {
    // Each step is compared from the same float state, so float rounding does not accumulate; random actions
    // outside [-1, 1] exercise the clamp; 3000 steps cover falls, resets and the 500-step limit.
    const int n = 64;
    gmi::rl::env_batch<gmi::envs::cartpole> b(n, 11);
    std::vector<float> obs(n * 4), next(n * 4), final_obs(n * 4), act(n), rew(n);
    std::vector<std::uint8_t> te(n), tr(n);
    b.reset({obs.data(), obs.size()});
    for (float v : obs) {
      CHECK(v >= -0.1f);
      CHECK(v < 0.1f);
    }
    std::vector<int> t(n, 0);
    gmi::rng r(5, 0);
    int falls = 0, limits = 0;
    for (int step = 0; step < 3000; ++step) {
      for (int i = 0; i < n; ++i) {
        const float* o = &obs[i * 4];  // odd environments balance (a state-feedback controller), even ones flail
        act[i] = i % 2 ? 0.1f * o[0] + 0.2f * o[1] + 3.0f * o[2] + 0.5f * o[3] + 0.05f * r.uniform(-1.0f, 1.0f)
                       : 1.5f * r.uniform(-1.0f, 1.0f);
      }
      b.step({act.data(), act.size()}, {next.data(), next.size()}, {rew.data(), rew.size()}, {te.data(), te.size()},
             {tr.data(), tr.size()}, nullptr, {final_obs.data(), final_obs.size()});
      for (int i = 0; i < n; ++i) {
        const float* o = &obs[i * 4];
        const anchor_out a = anchor_step(o[0], o[1], o[2], o[3], act[i], t[i]);
        const bool done = te[i] || tr[i];
        REQUIRE(done == a.done);
        CHECK(rew[i] == doctest::Approx(a.reward).epsilon(1e-5));
        const float* after = done ? &final_obs[i * 4] : &next[i * 4];
        CHECK(after[0] == doctest::Approx(a.x).epsilon(1e-5));
        CHECK(after[1] == doctest::Approx(a.xd).epsilon(1e-5));
        CHECK(after[2] == doctest::Approx(a.th).epsilon(1e-5));
        CHECK(after[3] == doctest::Approx(a.thd).epsilon(1e-5));
        if (done) {
          // The anchor's time limit is truncation (bootstrap); a fall before it is termination.
          CHECK(bool(tr[i]) == (t[i] + 1 >= 500 && !te[i]));
          falls += te[i];
          limits += tr[i];
          for (int k = 0; k < 4; ++k) CHECK(std::fabs(next[i * 4 + k]) < 0.1f);  // auto-reset
          t[i] = 0;
        } else {
          t[i] += 1;
        }
      }
      obs = next;
    }
    CHECK(falls > 100);
    CHECK(limits > 0);
  }
}

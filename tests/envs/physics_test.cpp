// Physics checks of the tasks with real dynamics.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <gmi/envs/ball_balance.hpp>
#include <gmi/envs/ingenuity.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/envs/quadcopter.hpp>

TEST_SUITE("cpu") {
  TEST_CASE("envs.pendulum.energy_does_not_drift_under_semi_implicit_euler") {
    // Undamped, unforced, no speed clamp: symplectic Euler keeps the energy within O(dt) of its start and
    // without a trend, where explicit Euler would gain energy every swing.
    using P = gmi::envs::pendulum;
    P::params p;
    p.max_speed = 1e9f;
    P::state s{3.14159265f - 1.0f, 0.0f};  // 1 rad from hanging down
    gmi::rng r(0, 0);
    const float zero = 0.0f;
    const double e0 = P::energy(s, p);
    const double scale = p.mass * p.gravity * p.length / 2;  // m g l / 2: the potential's amplitude
    double worst = 0, first = 0, last = 0;
    const int steps = 20000;
    for (int i = 0; i < steps; ++i) {
      P::step(s, &zero, r, p);
      const double d = (P::energy(s, p) - e0) / scale;
      worst = std::max(worst, std::fabs(d));
      if (i < 1000) first += d / 1000;
      if (i >= steps - 1000) last += d / 1000;
    }
    CHECK(worst < 0.05);                       // O(dt) oscillation, dt = 0.05
    CHECK(std::fabs(last - first) < 2e-3);     // no drift over 1000 s of swinging
  }

  TEST_CASE("envs.pendulum.explicit_reference_gains_energy") {
    // The check above can fail: the same pendulum under explicit Euler drifts well past its bound.
    double th = 3.14159265 - 1.0, w = 0, dt = 0.05;
    auto energy = [&] { return 0.5 / 3 * w * w + 10.0 / 2 * std::cos(th); };
    const double e0 = energy();
    for (int i = 0; i < 2000; ++i) {
      const double acc = 15.0 * std::sin(th);
      th += dt * w;
      w += dt * acc;
    }
    CHECK(std::fabs(energy() - e0) / 5.0 > 0.05);
  }

  TEST_CASE("envs.quadcopter.zero_thrust_falls_freely") {
    using Q = gmi::envs::quadcopter;
    Q::params p;
    Q::state s{};
    gmi::rng r(1, 0);
    s.body.pos = {0.3f, -0.2f, 50.0f};
    s.body.vel = {0.5f, 0.0f, 1.0f};
    s.body.rot = {1.0f, 0.0f, 0.0f, 0.0f};
    s.body.ang_vel = {0.0f, 0.0f, 0.0f};
    float a[12];
    for (int j = 0; j < 8; ++j) a[j] = 0.7f * (j % 3 - 1);  // gimbals move; without thrust that changes nothing
    for (int j = 8; j < 12; ++j) a[j] = -1.0f;          // zero thrust
    const int steps = 200;
    for (int k = 0; k < steps; ++k) Q::step(s, a, r, p);
    // Semi-implicit Euler: v_n = v0 - g n dt, z_n = z0 + dt * sum_{k=1..n} v_k.
    const double dt = p.dt, g = p.gravity, n = steps;
    CHECK(s.body.vel.z == doctest::Approx(1.0 - g * n * dt).epsilon(1e-5));
    CHECK(s.body.pos.z == doctest::Approx(50.0 + dt * (n * 1.0 - g * dt * n * (n + 1) / 2)).epsilon(1e-5));
    CHECK(s.body.pos.x == doctest::Approx(0.3 + 0.5 * n * dt).epsilon(1e-5));
    // and within O(dt) of the continuous parabola
    const double t = n * dt;
    CHECK(std::fabs(s.body.pos.z - (50.0 + t - 0.5 * g * t * t)) < g * dt * t);
    CHECK(s.body.ang_vel.x == 0.0f);
    CHECK(s.body.rot.w == 1.0f);
  }

  TEST_CASE("envs.quadcopter.level_thrust_balances_weight") {
    using Q = gmi::envs::quadcopter;
    Q::params p;
    Q::state s{};
    gmi::rng r(1, 0);
    s.body.pos = {0, 0, 1};
    s.body.rot = {1, 0, 0, 0};
    float a[12] = {};
    const float per_rotor = p.mass * p.gravity / 4;
    for (int j = 8; j < 12; ++j) a[j] = 2 * per_rotor / p.max_thrust - 1;
    for (int k = 0; k < 100; ++k) Q::step(s, a, r, p);
    CHECK(std::fabs(s.body.vel.z) < 1e-4f);
    CHECK(std::fabs(s.body.ang_vel.z) < 1e-5f);  // alternating spin directions cancel the yaw reactions
  }

  TEST_CASE("envs.ingenuity.zero_thrust_falls_under_mars_gravity") {
    using I = gmi::envs::ingenuity;
    I::params p;
    I::state s{};
    gmi::rng r(1, 0);
    s.pos = {0, 0, 20};
    s.rot = {1, 0, 0, 0};
    const float a[6] = {0.3f, -0.4f, -1.0f, 1.0f, 1.0f, -1.0f};  // cyclic without collective: no force
    for (int k = 0; k < 100; ++k) I::step(s, a, r, p);
    CHECK(s.vel.z == doctest::Approx(-3.721 * 100 * 0.01).epsilon(1e-5));
    CHECK(s.vel.x == 0.0f);
  }

  TEST_CASE("envs.ball_balance.ball_rolls_down_a_tilted_table_at_five_sevenths_g") {
    using B = gmi::envs::ball_balance;
    B::params p;
    B::state s{};
    gmi::rng r(1, 0);
    s.leg[0] = 0.52f;  // leg 0 (on +x) up, the others down: the table falls towards -x
    s.leg[1] = s.leg[2] = 0.49f;
    float gx, gy;
    B::gradient(s.leg, p, gx, gy);
    CHECK(gy == doctest::Approx(0.0).epsilon(1e-6));
    const float a[3] = {0, 0, 0};  // no force: legs keep their length (no velocity, damping only)
    for (int k = 0; k < 20; ++k) B::step(s, a, r, p);
    const double t = 20 * p.dt;
    const double expect = -(5.0 / 7) * p.gravity * gx / (1 + gx * gx) * t;
    CHECK(s.bvx == doctest::Approx(expect).epsilon(1e-4));
    CHECK(s.bvy == 0.0f);
    float obs[24];
    B::observe(s, obs, p);
    CHECK(obs[20] == doctest::Approx(1 / std::sqrt(1 + gx * gx)).epsilon(1e-6));  // normal z
    CHECK(obs[15] + obs[16] + obs[17] == doctest::Approx(p.ball_mass * p.gravity).epsilon(1e-5));  // loads sum to weight
  }
}

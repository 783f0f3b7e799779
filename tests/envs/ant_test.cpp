// gmi::envs::ant on the host: the observation's layout and sizes, the reward's terms against a hand computation
// of Isaac Gym's formulas on a known state, termination below the termination height with the death cost, and the
// feet's contact forces carrying the ant's weight at rest.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <gmi/envs/ant.hpp>
#include <gmi/envs/registry.hpp>

namespace {
using A = gmi::envs::ant;

struct bound_ant {
  A::params p{};
  std::vector<float> table;
  bound_ant() {
    table = A::make_table(p);
    A::bind_table(p, table.data());
  }
};

std::vector<float> observation(const A::state& s, const A::params& p) {
  std::vector<float> o(A::obs_dim + 2, 777.0f);  // sentinels after the observation
  A::observe(s, o.data(), p);
  CHECK(o[A::obs_dim] == 777.0f);
  CHECK(o[A::obs_dim + 1] == 777.0f);
  return o;
}

constexpr double pi = 3.14159265358979323846;
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("envs.ant.sizes_model_and_registry") {
    CHECK(A::obs_dim == 60);
    CHECK(A::act_dim == 8);
    CHECK(A::obs_action + A::nj == A::obs_dim);
    CHECK(gmi::envs::visit_task("ant", []<class T>() { return gmi::envs::is_physics_task<T>; }));
    bound_ant b;
    const auto& m = b.p.model;
    CHECK(m.timestep == doctest::Approx(1.0 / 120.0));
    CHECK(A::dt(b.p) == doctest::Approx(1.0 / 60.0));
    CHECK(m.size.nbody == 10);
    CHECK(m.size.nu == 8);
    // The foot bodies: below a leg body that hangs from the torso, each with one hinge (the ankle).
    for (int f = 0; f < A::nfeet; ++f) {
      const int body = A::first_foot_body + A::foot_body_stride * f;
      CAPTURE(body);
      CHECK(m.body_parent[body] == body - 1);
      CHECK(m.body_parent[body - 1] == 1);
      CHECK(m.jnt_bodyid[2 + 2 * f] == body);
    }
    // Motor j drives joint j (tree order), gear 15; ranges hips +-40 degrees, ankles 30 to 100 degrees either side.
    for (int j = 0; j < A::nj; ++j) {
      CHECK(m.actuator_joint[j] == 1 + j);
      CHECK(m.actuator_gear[j] == doctest::Approx(15.0));
      const double lo = A::lower(j, b.p) * 180 / pi, hi = A::upper(j, b.p) * 180 / pi;
      if (j % 2 == 0) {
        CHECK(lo == doctest::Approx(-40.0).epsilon(1e-5));
        CHECK(hi == doctest::Approx(40.0).epsilon(1e-5));
      } else {
        CHECK(hi - lo == doctest::Approx(70.0).epsilon(1e-5));
        CHECK((lo == doctest::Approx(30.0).epsilon(1e-5) || hi == doctest::Approx(-30.0).epsilon(1e-5)));
      }
    }
  }

  TEST_CASE("envs.ant.reset_and_observation_layout") {
    bound_ant b;
    for (int i = 0; i < 20; ++i) {
      gmi::rng r(9, i);
      A::state s;
      A::reset(s, r, b.p);
      const std::vector<float> o = observation(s, b.p);
      CHECK(o[A::obs_height] == doctest::Approx(0.44));
      for (int k = 0; k < 3; ++k) {
        CHECK(o[A::obs_vel + k] == 0.0f);
        CHECK(o[A::obs_angvel + k] == 0.0f);
      }
      CHECK(o[A::obs_yaw] == 0.0f);
      CHECK(o[A::obs_roll] == 0.0f);
      CHECK(std::fabs(o[A::obs_angle]) < 1e-6f);
      CHECK(o[A::obs_up] == 1.0f);
      CHECK(o[A::obs_heading] == 1.0f);
      for (int j = 0; j < A::nj; ++j) {
        CAPTURE(j);
        const float lo = A::lower(j, b.p), hi = A::upper(j, b.p);
        // Inside the range by the margin (1e-3 rad), not on a limit.
        CHECK(s.qpos[7 + j] >= lo + 0.999e-3f);
        CHECK(s.qpos[7 + j] <= hi - 0.999e-3f);
        // Hips start about 0, ankles about the limit nearer 0 (clamped: within 0.2 rad of it).
        const float start = lo > 0 ? lo : (hi < 0 ? hi : 0.0f);
        CHECK(std::fabs(s.qpos[7 + j] - start) <= 0.201f + 1e-6f);
        CHECK(std::fabs(s.qvel[6 + j]) <= 0.1f);
        CHECK(o[A::obs_dof_pos + j] >= -1.0f);
        CHECK(o[A::obs_dof_pos + j] <= 1.0f);
        CHECK(o[A::obs_dof_pos + j] == doctest::Approx((2 * s.qpos[7 + j] - hi - lo) / (hi - lo)));
        CHECK(o[A::obs_dof_vel + j] == doctest::Approx(0.2 * s.qvel[6 + j]));
        CHECK(o[A::obs_action + j] == 0.0f);
      }
      for (int k = 0; k < 6 * A::nfeet; ++k) CHECK(o[A::obs_foot + k] == 0.0f);
    }
    // A turned, moving torso: yaw 90 degrees, world velocity +x, angular velocity (body frame) scaled.
    A::state s;
    gmi::rng r(1, 0);
    A::reset(s, r, b.p);
    s.qpos[0] = 3.0f;
    s.qpos[1] = 0.0f;
    s.qpos[3] = std::cos(pi / 4);
    s.qpos[4] = s.qpos[5] = 0.0f;
    s.qpos[6] = std::sin(pi / 4);
    s.qvel[0] = 1.0f;
    s.qvel[1] = s.qvel[2] = 0.0f;
    s.qvel[3] = 0.5f;
    s.qvel[4] = -0.25f;
    s.qvel[5] = 2.0f;
    for (int k = 0; k < 6 * A::nfeet; ++k) s.foot_ft[k] = float(k + 1);
    for (int j = 0; j < A::nj; ++j) s.last_action[j] = 0.1f * float(j) - 0.3f;
    b.p.angular_velocity_scale = 0.25f;
    const std::vector<float> o = observation(s, b.p);
    CHECK(o[A::obs_vel + 0] == doctest::Approx(0.0).epsilon(1e-6));
    CHECK(o[A::obs_vel + 1] == doctest::Approx(-1.0));  // +x in the world is -y for a torso facing +y
    CHECK(o[A::obs_angvel + 0] == doctest::Approx(0.125));
    CHECK(o[A::obs_angvel + 2] == doctest::Approx(0.5));
    CHECK(o[A::obs_yaw] == doctest::Approx(pi / 2));
    CHECK(o[A::obs_roll] == doctest::Approx(0.0));
    CHECK(o[A::obs_angle] == doctest::Approx(-pi / 2).epsilon(1e-5));
    CHECK(o[A::obs_up] == doctest::Approx(1.0));
    CHECK(std::fabs(o[A::obs_heading]) < 1e-6f);
    for (int k = 0; k < 6 * A::nfeet; ++k) CHECK(o[A::obs_foot + k] == doctest::Approx(0.1 * (k + 1)));
    for (int j = 0; j < A::nj; ++j) CHECK(o[A::obs_action + j] == s.last_action[j]);
  }

  TEST_CASE("envs.ant.reward_terms_match_a_hand_computation") {
    // A known state: tilted 30 degrees about x (roll; the up projection cos 30 < 0.93 earns no up reward), yawed
    // so that the heading projection is below 0.8, two joints at or past 0.99 of their upper limit.
    bound_ant b;
    A::state s;
    gmi::rng r(2, 0);
    A::reset(s, r, b.p);
    const double roll = pi / 6, yaw = 0.9;  // q = q_yaw * q_roll
    const double cr = std::cos(roll / 2), sr = std::sin(roll / 2), cy = std::cos(yaw / 2), sy = std::sin(yaw / 2);
    s.qpos[0] = 2.0f;
    s.qpos[1] = -1.0f;
    s.qpos[2] = 0.5f;
    s.qpos[3] = float(cy * cr);
    s.qpos[4] = float(cy * sr);
    s.qpos[5] = float(sy * sr);
    s.qpos[6] = float(sy * cr);
    for (int j = 0; j < A::nj; ++j) {
      const float lo = A::lower(j, b.p), hi = A::upper(j, b.p);
      s.qpos[7 + j] = j == 1 ? hi : (j == 4 ? lo + 0.996f * (hi - lo) : 0.5f * (lo + hi));
      s.qvel[6 + j] = 0.7f * float(j) - 2.0f;
    }
    float a[A::act_dim];
    for (int j = 0; j < A::act_dim; ++j) a[j] = 0.3f * float(j) - 1.0f;
    const float before[2] = {1.9f, -1.0f};
    const A::reward_terms t = A::terms(s, before, a, b.p);
    // By hand, in double.
    const double dt = 1.0 / 60.0;
    const double d1 = std::hypot(1000.0 - 2.0, 1.0), d0 = std::hypot(1000.0 - 1.9, 1.0);
    CHECK(t.progress == doctest::Approx((d0 - d1) / dt).epsilon(1e-5));  // without the potentials' cancellation
    CHECK(t.alive == 0.5f);
    const double up = std::cos(roll);  // z of the body z axis after the roll (the yaw keeps it)
    CHECK(up < 0.93);
    CHECK(t.up == 0.0f);
    // The body x axis: the yaw turns it to (cos yaw, sin yaw, 0) (the roll is about body x); the target direction
    // is (998, 1) normalized.
    const double heading = (std::cos(yaw) * 998.0 + std::sin(yaw) * 1.0) / d1;
    CHECK(heading < 0.8);
    CHECK(t.heading == doctest::Approx(0.5 * heading / 0.8).epsilon(1e-5));
    double a2 = 0, energy = 0;
    for (int j = 0; j < A::nj; ++j) {
      a2 += double(a[j]) * a[j];
      energy += std::fabs(double(a[j]) * 0.2 * s.qvel[6 + j]);
    }
    CHECK(t.actions == doctest::Approx(0.005 * a2));
    CHECK(t.energy == doctest::Approx(0.05 * energy));
    CHECK(t.joints_at_limit == doctest::Approx(0.2));  // joints 1 and 4
    CHECK(t.sum() ==
          doctest::Approx(t.progress + 0.5 + 0.5 * heading / 0.8 - 0.005 * a2 - 0.05 * energy - 0.2).epsilon(1e-4));
    // Upright and facing the target: the up and heading rewards in full.
    A::state u = s;
    u.qpos[3] = 1.0f;
    u.qpos[4] = u.qpos[5] = u.qpos[6] = 0.0f;
    const A::reward_terms tu = A::terms(u, before, a, b.p);
    CHECK(tu.up == doctest::Approx(0.1));
    CHECK(tu.heading == doctest::Approx(0.5));
  }

  TEST_CASE("envs.ant.step_reward_is_the_terms_from_the_position_before") {
    bound_ant b;
    gmi::rng r(4, 0);
    A::state s;
    A::reset(s, r, b.p);
    float a[A::act_dim];
    bool any_contact = false;
    for (int t = 0; t < 60; ++t) {
      for (int k = 0; k < A::act_dim; ++k) a[k] = r.uniform(-1.5f, 1.5f);  // clipped by the task
      const float before[2] = {s.qpos[0], s.qpos[1]};
      const gmi::transition tr = A::step(s, a, r, b.p);
      float clipped[A::act_dim];
      for (int k = 0; k < A::act_dim; ++k) {
        clipped[k] = std::fmin(std::fmax(a[k], -1.0f), 1.0f);
        CHECK(s.last_action[k] == clipped[k]);
      }
      if (tr.terminated) break;
      CHECK(tr.reward == doctest::Approx(A::terms(s, before, clipped, b.p).sum()).epsilon(1e-5));
      for (int f = 0; f < A::nfeet; ++f) any_contact = any_contact || s.foot_ft[6 * f + 2] > 0.0f;
    }
    CHECK(any_contact);
  }

  TEST_CASE("envs.ant.terminates_below_the_termination_height_with_the_death_cost") {
    bound_ant b;
    gmi::rng r(3, 0);
    A::state s;
    A::reset(s, r, b.p);
    const float zero[A::act_dim] = {};
    A::state low = s;
    low.qpos[2] = 0.2f;  // below 0.31 after one step
    const gmi::transition tl = A::step(low, zero, r, b.p);
    CHECK(tl.terminated);
    CHECK(tl.reward == -2.0f);
    A::state nan = s;
    nan.qvel[0] = std::numeric_limits<float>::quiet_NaN();
    CHECK(A::step(nan, zero, r, b.p).terminated);
    // Zero actions from the start pose: the ant settles on its feet above the termination height.
    for (int t = 0; t < 200; ++t) {
      const gmi::transition tr = A::step(s, zero, r, b.p);
      CHECK_FALSE(tr.terminated);
    }
    CHECK(s.qpos[2] > 0.31f);
  }

  TEST_CASE("envs.ant.foot_contact_forces_carry_the_weight_at_rest") {
    // Zero actions for 3 s from the start pose without noise: the ant rests on its four feet (nothing else touches
    // the floor), so the feet's vertical contact forces sum to the weight, and by symmetry each carries a quarter.
    bound_ant b;
    b.p.reset_dof_noise = 0.0f;
    b.p.reset_vel_noise = 0.0f;
    gmi::rng r(3, 0);
    A::state s;
    A::reset(s, r, b.p);
    const float zero[A::act_dim] = {};
    for (int t = 0; t < 180; ++t) A::step(s, zero, r, b.p);
    double mass = 0;
    for (int k = 1; k < b.p.model.size.nbody; ++k) mass += b.p.model.body_mass[k];
    double fz = 0, fx = 0, fy = 0;
    for (int f = 0; f < A::nfeet; ++f) {
      CAPTURE(f);
      fx += s.foot_ft[6 * f];
      fy += s.foot_ft[6 * f + 1];
      fz += s.foot_ft[6 * f + 2];
      CHECK(s.foot_ft[6 * f + 2] == doctest::Approx(mass * 9.81 / 4).epsilon(0.05));
    }
    MESSAGE("ant at rest: mass " << mass << " kg, feet's vertical forces " << fz << " N (weight " << mass * 9.81
                                       << " N), horizontal " << fx << ", " << fy);
    CHECK(fz == doctest::Approx(mass * 9.81).epsilon(0.02));
    CHECK(std::fabs(fx) < 0.02 * fz);
    CHECK(std::fabs(fy) < 0.02 * fz);
    CHECK(s.qpos[2] > 0.31f);
  }
}

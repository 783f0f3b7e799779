// gmi::envs::humanoid on the host: the model and the observation's layout and sizes, the reward's terms against
// a hand computation of Isaac Gym's formulas on a known state, termination below the termination height with the
// death cost, and the feet's contact forces while it stands.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gmi/envs/humanoid.hpp>
#include <gmi/envs/registry.hpp>

namespace {
using H = gmi::envs::humanoid;

struct bound_humanoid {
  H::params p{};
  std::vector<float> table;
  bound_humanoid() {
    table = H::make_table(p);
    H::bind_table(p, table.data());
  }
};

std::vector<float> observation(const H::state& s, const H::params& p) {
  std::vector<float> o(H::obs_dim + 2, 777.0f);  // sentinels after the observation
  H::observe(s, o.data(), p);
  CHECK(o[H::obs_dim] == 777.0f);
  CHECK(o[H::obs_dim + 1] == 777.0f);
  return o;
}

constexpr double pi = 3.14159265358979323846;
namespace ig = gmi::envs::isaac_gym;

// Isaac Gym's Humanoid joints in its dof order: gear, lower and upper limit (degrees).
struct joint_fact {
  double gear, lo, hi;
};
constexpr joint_fact joints[21] = {
    {67.5, -45, 45},  {67.5, -75, 30},  {67.5, -35, 35},                                   // abdomen z, y, x
    {45, -45, 15},    {45, -60, 35},    {135, -120, 45}, {90, -160, 2}, {22.5, -50, 50}, {22.5, -50, 50},  // right leg
    {45, -45, 15},    {45, -60, 35},    {135, -120, 45}, {90, -160, 2}, {22.5, -50, 50}, {22.5, -50, 50},  // left leg
    {67.5, -90, 70},  {67.5, -90, 70},  {45, -90, 50},                                     // right arm
    {67.5, -90, 70},  {67.5, -90, 70},  {45, -90, 50}};                                    // left arm
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("envs.humanoid.sizes_model_and_registry") {
    CHECK(H::obs_dim == 108);
    CHECK(H::act_dim == 21);
    CHECK(H::obs_dof_pos == 12);
    CHECK(H::obs_dof_vel == 33);
    CHECK(H::obs_dof_force == 54);
    CHECK(H::obs_foot == 75);
    CHECK(H::obs_action == 87);
    CHECK(H::obs_action + H::nj == H::obs_dim);
    CHECK(gmi::envs::visit_task("humanoid", []<class T>() { return gmi::envs::is_physics_task<T>; }));
    bound_humanoid b;
    const auto& m = b.p.model;
    CHECK(m.timestep == doctest::Approx(1.0 / 120.0));
    CHECK(H::dt(b.p) == doctest::Approx(1.0 / 60.0));
    CHECK(m.size.nbody == 14);
    CHECK(m.size.nu == 21);
    CHECK(m.size.nq == 28);
    CHECK(m.qpos0[2] == doctest::Approx(1.34));
    // The feet: below the shins, each with the two ankle hinges (joints 8, 9 and 14, 15 counting the free joint).
    CHECK(m.body_parent[H::right_foot_body] == 5);
    CHECK(m.body_parent[H::left_foot_body] == 8);
    CHECK(m.jnt_bodyid[8] == H::right_foot_body);
    CHECK(m.jnt_bodyid[9] == H::right_foot_body);
    CHECK(m.jnt_bodyid[14] == H::left_foot_body);
    CHECK(m.jnt_bodyid[15] == H::left_foot_body);
    CHECK(H::foot_of(H::right_foot_body) == 0);
    CHECK(H::foot_of(H::left_foot_body) == 1);
    int feet = 0;
    for (int body = 0; body < m.size.nbody; ++body) feet += H::foot_of(body) >= 0 ? 1 : 0;
    CHECK(feet == 2);
    // Motor j drives joint j (tree order) with Isaac Gym's gear; ranges as Isaac Gym's asset.
    for (int j = 0; j < H::nj; ++j) {
      CAPTURE(j);
      CHECK(m.actuator_joint[j] == 1 + j);
      CHECK(H::effort(j, b.p) == doctest::Approx(joints[j].gear));
      CHECK(H::lower(j, b.p) * 180 / pi == doctest::Approx(joints[j].lo).epsilon(1e-5));
      CHECK(H::upper(j, b.p) * 180 / pi == doctest::Approx(joints[j].hi).epsilon(1e-5));
    }
    CHECK(H::max_effort(b.p) == doctest::Approx(135.0));
  }

  TEST_CASE("envs.humanoid.reset_and_observation_layout") {
    bound_humanoid b;
    for (int i = 0; i < 20; ++i) {
      gmi::rng r(9, i);
      H::state s;
      H::reset(s, r, b.p);
      const std::vector<float> o = observation(s, b.p);
      CHECK(o[ig::obs_height] == doctest::Approx(1.34));
      for (int k = 0; k < 3; ++k) {
        CHECK(o[ig::obs_vel + k] == 0.0f);
        CHECK(o[ig::obs_angvel + k] == 0.0f);
      }
      CHECK(o[ig::obs_yaw] == 0.0f);
      CHECK(o[ig::obs_roll] == 0.0f);
      CHECK(std::fabs(o[ig::obs_angle]) < 1e-6f);
      CHECK(o[ig::obs_up] == 1.0f);
      CHECK(o[ig::obs_heading] == 1.0f);
      for (int j = 0; j < H::nj; ++j) {
        CAPTURE(j);
        const float lo = H::lower(j, b.p), hi = H::upper(j, b.p);
        CHECK(s.qpos[7 + j] >= lo + 0.999e-3f);
        CHECK(s.qpos[7 + j] <= hi - 0.999e-3f);
        CHECK(std::fabs(s.qpos[7 + j]) <= 0.201f);  // every range holds 0: the start is 0
        CHECK(std::fabs(s.qvel[6 + j]) <= 0.1f);
        CHECK(o[H::obs_dof_pos + j] == doctest::Approx((2 * s.qpos[7 + j] - hi - lo) / (hi - lo)));
        CHECK(o[H::obs_dof_vel + j] == doctest::Approx(0.1 * s.qvel[6 + j]));
        CHECK(o[H::obs_dof_force + j] == 0.0f);
        CHECK(o[H::obs_action + j] == 0.0f);
      }
      for (int k = 0; k < 6 * H::nfeet; ++k) CHECK(o[H::obs_foot + k] == 0.0f);
    }
    // A turned, moving torso: yaw 90 degrees, world velocity +x, angular velocity (body frame) scaled by 0.25;
    // joint forces from the last actions times the gears, scaled by 0.01.
    H::state s;
    gmi::rng r(1, 0);
    H::reset(s, r, b.p);
    s.qpos[0] = 3.0f;
    s.qpos[1] = 0.0f;
    s.qpos[3] = float(std::cos(pi / 4));
    s.qpos[4] = s.qpos[5] = 0.0f;
    s.qpos[6] = float(std::sin(pi / 4));
    s.qvel[0] = 1.0f;
    s.qvel[1] = s.qvel[2] = 0.0f;
    s.qvel[3] = 0.5f;
    s.qvel[4] = -0.25f;
    s.qvel[5] = 2.0f;
    for (int k = 0; k < 6 * H::nfeet; ++k) s.foot_ft[k] = float(k + 1);
    for (int j = 0; j < H::nj; ++j) s.last_action[j] = 0.1f * float(j) - 1.0f;
    const std::vector<float> o = observation(s, b.p);
    CHECK(o[ig::obs_vel + 0] == doctest::Approx(0.0).epsilon(1e-6));
    CHECK(o[ig::obs_vel + 1] == doctest::Approx(-1.0));  // +x in the world is -y for a torso facing +y
    CHECK(o[ig::obs_angvel + 0] == doctest::Approx(0.125));
    CHECK(o[ig::obs_angvel + 1] == doctest::Approx(-0.0625));
    CHECK(o[ig::obs_angvel + 2] == doctest::Approx(0.5));
    CHECK(o[ig::obs_yaw] == doctest::Approx(pi / 2));
    CHECK(o[ig::obs_angle] == doctest::Approx(-pi / 2).epsilon(1e-5));
    CHECK(std::fabs(o[ig::obs_heading]) < 1e-6f);
    for (int k = 0; k < 6 * H::nfeet; ++k) CHECK(o[H::obs_foot + k] == doctest::Approx(0.01 * (k + 1)));
    for (int j = 0; j < H::nj; ++j) {
      CAPTURE(j);
      CHECK(o[H::obs_dof_force + j] == doctest::Approx(0.01 * joints[j].gear * s.last_action[j]));
      CHECK(o[H::obs_action + j] == s.last_action[j]);
    }
  }

  TEST_CASE("envs.humanoid.reward_terms_match_a_hand_computation") {
    // A known state: tilted 30 degrees about x (the up projection cos 30 < 0.93 earns no up reward), yawed so that
    // the heading projection is below 0.8; joint 1 at its upper limit, joint 5 at 0.99 of its range toward the
    // lower limit (both past 0.98 of the scaled range), the rest mid-range.
    bound_humanoid b;
    H::state s;
    gmi::rng r(2, 0);
    H::reset(s, r, b.p);
    const double roll = pi / 6, yaw = 0.9;  // q = q_yaw * q_roll
    const double cr = std::cos(roll / 2), sr = std::sin(roll / 2), cy = std::cos(yaw / 2), sy = std::sin(yaw / 2);
    s.qpos[0] = 2.0f;
    s.qpos[1] = -1.0f;
    s.qpos[2] = 1.2f;
    s.qpos[3] = float(cy * cr);
    s.qpos[4] = float(cy * sr);
    s.qpos[5] = float(sy * sr);
    s.qpos[6] = float(sy * cr);
    for (int j = 0; j < H::nj; ++j) {
      const float lo = H::lower(j, b.p), hi = H::upper(j, b.p);
      s.qpos[7 + j] = j == 1 ? hi : (j == 5 ? hi - 0.995f * (hi - lo) : 0.5f * (lo + hi));
      s.qvel[6 + j] = 0.4f * float(j) - 3.0f;
    }
    float a[H::act_dim];
    for (int j = 0; j < H::act_dim; ++j) a[j] = 0.09f * float(j) - 0.9f;
    const float before[2] = {1.9f, -1.0f};
    const H::reward_terms t = H::terms(s, before, a, b.p);
    // By hand, in double, from Isaac Gym's formulas (compute_humanoid_reward).
    const double dt = 1.0 / 60.0;
    const double d1 = std::hypot(1000.0 - 2.0, 1.0), d0 = std::hypot(1000.0 - 1.9, 1.0);
    CHECK(t.progress == doctest::Approx((d0 - d1) / dt).epsilon(1e-5));
    CHECK(t.alive == 2.0f);
    CHECK(std::cos(roll) < 0.93);
    CHECK(t.up == 0.0f);
    const double heading = (std::cos(yaw) * 998.0 + std::sin(yaw) * 1.0) / d1;
    CHECK(heading < 0.8);
    CHECK(t.heading == doctest::Approx(0.5 * heading / 0.8).epsilon(1e-5));
    double a2 = 0, energy = 0, limit = 0;
    for (int j = 0; j < H::nj; ++j) {
      const double ratio = joints[j].gear / 135.0;
      a2 += double(a[j]) * a[j];
      energy += std::fabs(double(a[j]) * 0.1 * s.qvel[6 + j]) * ratio;
      const double lo = joints[j].lo * pi / 180, hi = joints[j].hi * pi / 180;
      const double x = std::fabs((2 * double(s.qpos[7 + j]) - hi - lo) / (hi - lo));
      if (x > 0.98) limit += 0.25 * (x - 0.98) / 0.02 * ratio;
    }
    // Joint 1 (abdomen_y, gear 67.5) at its limit: 0.25 x 1 x 0.5; joint 5 (right_hip_y, gear 135) at 0.99:
    // 0.25 x 0.5 x 1.
    CHECK(limit == doctest::Approx(0.25).epsilon(1e-3));
    CHECK(t.actions == doctest::Approx(0.01 * a2));
    CHECK(t.energy == doctest::Approx(0.05 * energy));
    CHECK(t.joints_at_limit == doctest::Approx(limit).epsilon(1e-3));
    CHECK(t.sum() ==
          doctest::Approx(t.progress + 2.0 + 0.5 * heading / 0.8 - 0.01 * a2 - 0.05 * energy - limit).epsilon(1e-4));
    // Upright and facing the target: the up and heading rewards in full.
    H::state u = s;
    u.qpos[3] = 1.0f;
    u.qpos[4] = u.qpos[5] = u.qpos[6] = 0.0f;
    const H::reward_terms tu = H::terms(u, before, a, b.p);
    CHECK(tu.up == doctest::Approx(0.1));
    CHECK(tu.heading == doctest::Approx(0.5));
  }

  TEST_CASE("envs.humanoid.step_reward_is_the_terms_from_the_position_before") {
    bound_humanoid b;
    gmi::rng r(4, 0);
    H::state s;
    H::reset(s, r, b.p);
    float a[H::act_dim];
    bool any_contact = false;
    int steps = 0;
    for (int t = 0; t < 60; ++t) {
      for (int k = 0; k < H::act_dim; ++k) a[k] = r.uniform(-1.5f, 1.5f);  // clipped by the task
      const float before[2] = {s.qpos[0], s.qpos[1]};
      const gmi::transition tr = H::step(s, a, r, b.p);
      float clipped[H::act_dim];
      for (int k = 0; k < H::act_dim; ++k) {
        clipped[k] = std::fmin(std::fmax(a[k], -1.0f), 1.0f);
        CHECK(s.last_action[k] == clipped[k]);
      }
      for (int f = 0; f < H::nfeet; ++f) any_contact = any_contact || s.foot_ft[6 * f + 2] > 0.0f;
      if (tr.terminated) break;
      ++steps;
      CHECK(tr.reward == doctest::Approx(H::terms(s, before, clipped, b.p).sum()).epsilon(1e-5));
    }
    CHECK(steps >= 10);
    CHECK(any_contact);
  }

  TEST_CASE("envs.humanoid.terminates_below_the_termination_height_with_the_death_cost") {
    bound_humanoid b;
    gmi::rng r(3, 0);
    H::state s;
    H::reset(s, r, b.p);
    const float zero[H::act_dim] = {};
    H::state low = s;
    low.qpos[2] = 0.6f;  // below 0.8 after one step
    const gmi::transition tl = H::step(low, zero, r, b.p);
    CHECK(tl.terminated);
    CHECK(tl.reward == -1.0f);
    H::state nan = s;
    nan.qvel[0] = std::numeric_limits<float>::quiet_NaN();
    CHECK(H::step(nan, zero, r, b.p).terminated);
    // Zero actions from the start pose: it lands on its feet and, unpowered, falls within 5 s (the torso below
    // 0.8 m ends the episode with the death cost; the sprung joints alone do not hold it up).
    int end = -1;
    for (int t = 0; t < 300 && end < 0; ++t) {
      const gmi::transition tr = H::step(s, zero, r, b.p);
      if (tr.terminated) {
        end = t;
        CHECK(tr.reward == -1.0f);
        CHECK(s.qpos[2] < 0.8f);
      } else {
        CHECK(s.qpos[2] >= 0.8f);
      }
    }
    MESSAGE("humanoid, zero actions: terminated at env step " << end);
    CHECK(end > 10);
  }

  TEST_CASE("envs.humanoid.foot_contact_forces_carry_the_weight_while_standing") {
    // Zero actions from the start pose without noise: after it lands (0.2 s) and before it topples, the feet are
    // the only bodies on the floor, so the feet's vertical contact forces carry the weight (within the body's
    // vertical acceleration: checked over a window, on average), and the left and right feet carry about the same.
    bound_humanoid b;
    b.p.reset_dof_noise = 0.0f;
    b.p.reset_vel_noise = 0.0f;
    gmi::rng r(3, 0);
    H::state s;
    H::reset(s, r, b.p);
    const float zero[H::act_dim] = {};
    double mass = 0;
    for (int k = 1; k < b.p.model.size.nbody; ++k) mass += b.p.model.body_mass[k];
    double fz = 0, right = 0, left = 0;
    int n = 0;
    for (int t = 0; t < 30; ++t) {
      const gmi::transition tr = H::step(s, zero, r, b.p);
      REQUIRE_FALSE(tr.terminated);
      if (t >= 15) {
        right += s.foot_ft[2];
        left += s.foot_ft[6 + 2];
        fz += s.foot_ft[2] + s.foot_ft[6 + 2];
        ++n;
      }
    }
    fz /= n;
    MESSAGE("humanoid standing: mass " << mass << " kg, feet's mean vertical force " << fz << " N (weight "
                                             << mass * 9.81 << " N), right " << right / n << ", left " << left / n);
    CHECK(fz == doctest::Approx(mass * 9.81).epsilon(0.1));
    CHECK(right == doctest::Approx(left).epsilon(0.1));
  }
}

// gmi::physics against MuJoCo's C library (2.2.2 in Debian 12) on the same MJCF files: the compiled models
// agree, and contact-free trajectories stay within 1e-4 relative over 1000 steps (observed: 1e-15 where the
// models are identical, 1e-7 for a body whose inertia MuJoCo diagonalises iteratively).
#include <doctest/doctest.h>
#include <mujoco/mujoco.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gmi/physics/physics.hpp>

namespace {
namespace ph = gmi::physics;

std::string model_path(const char* name) { return std::string(GMI_PHYSICS_MODELS) + "/" + name; }

// One model loaded by both simulators, stepped side by side.
struct twin {
  ph::model<double> m;
  ph::data_layout layout;
  std::vector<double> buffer;
  ph::data<double> d;
  mjModel* mm = nullptr;
  mjData* md = nullptr;

  explicit twin(const char* file) : m(ph::load_mjcf_file(model_path(file))) {
    layout = ph::make_layout(m.size);
    buffer.assign(layout.reals_per_env, 0.0);
    d = ph::data_of(layout, buffer.data(), 1, 0);
    char error[1000] = "";
    mm = mj_loadXML(model_path(file).c_str(), nullptr, error, sizeof error);
    REQUIRE_MESSAGE(mm != nullptr, error);
    md = mj_makeData(mm);
    for (int i = 0; i < m.size.nq; ++i) d.qpos[i] = m.qpos0[i];
  }
  ~twin() {
    if (md) mj_deleteData(md);
    if (mm) mj_deleteModel(mm);
  }
  twin(const twin&) = delete;
  twin& operator=(const twin&) = delete;

  void set_state(const std::vector<double>& qpos, const std::vector<double>& qvel) {
    REQUIRE(static_cast<int>(qpos.size()) == m.size.nq);
    REQUIRE(static_cast<int>(qvel.size()) == m.size.nv);
    for (int i = 0; i < m.size.nq; ++i) d.qpos[i] = md->qpos[i] = qpos[i];
    for (int i = 0; i < m.size.nv; ++i) d.qvel[i] = md->qvel[i] = qvel[i];
  }
  void set_ctrl(int u, double c) { d.ctrl[u] = md->ctrl[u] = c; }
  void step() {
    ph::step(m.view(), d);
    mj_step(mm, md);
  }
};

// Largest difference over a run, relative to the largest reference magnitude of the same vector.
struct deviation {
  double diff = 0, scale = 0;
  void add(const double* ours, const double* ref, int n) {
    for (int i = 0; i < n; ++i) {
      diff = std::max(diff, std::fabs(ours[i] - ref[i]));
      scale = std::max(scale, std::fabs(ref[i]));
    }
  }
  [[nodiscard]] double relative() const { return diff / std::max(scale, 1e-12); }
};

// Steps both for `steps`, calling control(t) before each step, and returns the relative deviations of qpos and
// qvel over the run.
template <class Control>
std::pair<double, double> run(twin& t, int steps, Control control) {
  deviation q, v;
  std::vector<double> ours(std::max(t.m.size.nq, t.m.size.nv));
  for (int s = 0; s < steps; ++s) {
    control(t, s * t.m.timestep);
    t.step();
    for (int i = 0; i < t.m.size.nq; ++i) ours[i] = t.d.qpos[i];
    q.add(ours.data(), t.md->qpos, t.m.size.nq);
    for (int i = 0; i < t.m.size.nv; ++i) ours[i] = t.d.qvel[i];
    v.add(ours.data(), t.md->qvel, t.m.size.nv);
  }
  MESSAGE("qpos: max |diff| " << q.diff << ", relative " << q.relative() << "; qvel: max |diff| " << v.diff
                              << ", relative " << v.relative());
  return {q.relative(), v.relative()};
}

void no_control(twin&, double) {}

// The compiled models agree element by element.
void check_same_model(const twin& t) {
  const ph::model<double>& m = t.m;
  const mjModel* mm = t.mm;
  REQUIRE(m.size.nq == mm->nq);
  REQUIRE(m.size.nv == mm->nv);
  REQUIRE(m.size.nbody == mm->nbody);
  REQUIRE(m.size.njnt == mm->njnt);
  REQUIRE(m.size.nu == mm->nu);
  REQUIRE(m.size.nM == mm->nM);
  CHECK(m.timestep == doctest::Approx(mm->opt.timestep));
  for (int b = 0; b < m.size.nbody; ++b) {
    CHECK(m.body_parent[b] == mm->body_parentid[b]);
    CHECK(m.body_mass[b] == doctest::Approx(mm->body_mass[b]).epsilon(1e-12));
    // MuJoCo keeps principal axes (iquat) and moments; compare the full tensor in body axes.
    const ph::mat3<double> r = ph::to_mat(ph::quat<double>{mm->body_iquat[4 * b], mm->body_iquat[4 * b + 1],
                                                           mm->body_iquat[4 * b + 2], mm->body_iquat[4 * b + 3]});
    double full[9];
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        full[3 * i + j] = 0;
        for (int k = 0; k < 3; ++k) full[3 * i + j] += r.m[3 * i + k] * mm->body_inertia[3 * b + k] * r.m[3 * j + k];
      }
    const double ours[6] = {m.body_inertia[6 * b],     m.body_inertia[6 * b + 1], m.body_inertia[6 * b + 2],
                            m.body_inertia[6 * b + 3], m.body_inertia[6 * b + 4], m.body_inertia[6 * b + 5]};
    const double ref[6] = {full[0], full[4], full[8], full[1], full[2], full[5]};
    // A body of several geoms: MuJoCo diagonalises the summed tensor iteratively (principal moments to about
    // 1e-8 relative) where ours stays exact, hence 1e-7 here and the 1e-6 forward tolerance of free_spin below.
    const double scale = std::max({std::fabs(ref[0]), std::fabs(ref[1]), std::fabs(ref[2]), 1e-12});
    for (int k = 0; k < 6; ++k) CHECK(std::fabs(ours[k] - ref[k]) <= 1e-7 * scale);
    for (int k = 0; k < 3; ++k) {
      // MuJoCo's ipos is the centre of mass in body coordinates, as ours.
      CHECK(m.body_ipos[3 * b + k] == doctest::Approx(mm->body_ipos[3 * b + k]).epsilon(1e-9).scale(1));
      CHECK(m.body_pos[3 * b + k] == doctest::Approx(mm->body_pos[3 * b + k]).epsilon(1e-12).scale(1));
    }
    for (int k = 0; k < 4; ++k)
      CHECK(m.body_quat[4 * b + k] == doctest::Approx(mm->body_quat[4 * b + k]).epsilon(1e-12).scale(1));
  }
  for (int i = 0; i < m.size.nq; ++i) CHECK(m.qpos0[i] == doctest::Approx(mm->qpos0[i]).epsilon(1e-12).scale(1));
  for (int i = 0; i < m.size.nq; ++i)
    CHECK(m.qpos_spring[i] == doctest::Approx(mm->qpos_spring[i]).epsilon(1e-12).scale(1));
  for (int i = 0; i < m.size.nv; ++i) {
    CHECK(m.dof_parent[i] == mm->dof_parentid[i]);
    CHECK(m.dof_Madr[i] == mm->dof_Madr[i]);
    CHECK(m.dof_damping[i] == doctest::Approx(mm->dof_damping[i]));
    CHECK(m.dof_armature[i] == doctest::Approx(mm->dof_armature[i]));
    CHECK(m.dof_invweight0[i] == doctest::Approx(mm->dof_invweight0[i]).epsilon(1e-9));
  }
  for (int j = 0; j < m.size.njnt; ++j) {
    CHECK(m.jnt_type[j] == mm->jnt_type[j]);
    CHECK(m.jnt_limited[j] == mm->jnt_limited[j]);
    CHECK(m.jnt_stiffness[j] == doctest::Approx(mm->jnt_stiffness[j]));
    for (int k = 0; k < 2; ++k)
      CHECK(m.jnt_range[2 * j + k] == doctest::Approx(mm->jnt_range[2 * j + k]).epsilon(1e-12).scale(1));
    for (int k = 0; k < 3; ++k) {
      CHECK(m.jnt_axis[3 * j + k] == doctest::Approx(mm->jnt_axis[3 * j + k]).epsilon(1e-12).scale(1));
      CHECK(m.jnt_pos[3 * j + k] == doctest::Approx(mm->jnt_pos[3 * j + k]).epsilon(1e-12).scale(1));
    }
  }
  for (int u = 0; u < m.size.nu; ++u) {
    CHECK(m.actuator_gear[u] == doctest::Approx(mm->actuator_gear[6 * u]));
    CHECK(m.actuator_gain[u] == doctest::Approx(mm->actuator_gainprm[mjNGAIN * u]));
    for (int k = 0; k < 3; ++k)
      CHECK(m.actuator_bias[3 * u + k] == doctest::Approx(mm->actuator_biasprm[mjNBIAS * u + k]));
    CHECK(m.actuator_ctrllimited[u] == mm->actuator_ctrllimited[u]);
    CHECK(m.actuator_forcelimited[u] == mm->actuator_forcelimited[u]);
  }
}

// One forward pass from the current state: mass matrix, bias, passive and actuator forces, acceleration.
void check_same_forward(twin& t, double tol = 1e-9) {
  ph::forward(t.m.view(), t.d);
  mj_forward(t.mm, t.md);
  for (int k = 0; k < t.m.size.nM; ++k) CHECK(t.d.qM[k] == doctest::Approx(t.md->qM[k]).epsilon(tol).scale(1));
  for (int i = 0; i < t.m.size.nv; ++i) {
    CHECK(t.d.qfrc_bias[i] == doctest::Approx(t.md->qfrc_bias[i]).epsilon(tol).scale(1));
    CHECK(t.d.qfrc_passive[i] == doctest::Approx(t.md->qfrc_passive[i]).epsilon(tol).scale(1));
    CHECK(t.d.qfrc_actuator[i] == doctest::Approx(t.md->qfrc_actuator[i]).epsilon(tol).scale(1));
  }
}

constexpr double tolerance = 1e-4;  // relative, over 1000 steps (issue 35)
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("physics.mujoco.models_compile_alike") {
    for (const char* file : {"pendulum.xml", "chain3.xml", "free_spin.xml", "free_toss.xml", "slide.xml", "ball.xml",
                             "limit.xml", "ant_tree.xml", "drop_ball.xml", "box_slide.xml", "capsule_rest.xml",
                             "capsule_pile.xml", "ant_floor.xml", "humanoid_tree.xml", "box_stack.xml"}) {
      CAPTURE(file);
      twin t(file);
      check_same_model(t);
    }
  }

  TEST_CASE("physics.mujoco.pendulum_follows_reference") {
    twin t("pendulum.xml");
    t.set_state({1.0}, {0.0});
    check_same_forward(t);
    const auto [q, v] = run(t, 1000, no_control);
    CHECK(q < tolerance);
    CHECK(v < tolerance);
  }

  TEST_CASE("physics.mujoco.chain3_with_actuators_follows_reference") {
    // Damped and driven at moderate amplitude: the reference is not chaotic over 2 s (a 1e-9 change in the
    // initial state moves MuJoCo's own final state by < 1e-7, checked in the next test).
    twin t("chain3.xml");
    t.set_state({0.3, -0.2, 0.5}, {0.5, -0.3, 1.0});
    t.set_ctrl(0, 0.6);
    t.set_ctrl(1, 0.4);
    check_same_forward(t);
    const auto [q, v] = run(t, 1000, [](twin& tw, double time) {
      tw.set_ctrl(0, 1.5 * std::sin(2 * time));  // beyond ctrlrange part of the time: clamped
      tw.set_ctrl(1, 0.8 * std::cos(3 * time));
    });
    CHECK(q < tolerance);
    CHECK(v < tolerance);
  }

  TEST_CASE("physics.mujoco.chain3_reference_is_not_chaotic_over_the_run") {
    auto final_state = [](double nudge) {
      twin t("chain3.xml");
      t.set_state({0.3 + nudge, -0.2, 0.5}, {0.5, -0.3, 1.0});
      for (int s = 0; s < 1000; ++s) mj_step(t.mm, t.md);
      return std::vector<double>(t.md->qpos, t.md->qpos + t.mm->nq);
    };
    const auto a = final_state(0), b = final_state(1e-9);
    double diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::fabs(a[i] - b[i]));
    MESSAGE("final-state change from a 1e-9 nudge: " << diff);
    CHECK(diff < 1e-7);
  }

  TEST_CASE("physics.mujoco.free_spin_follows_reference") {
    twin t("free_spin.xml");
    std::vector<double> q(t.m.qpos0.begin(), t.m.qpos0.end());
    t.set_state(q, {0.1, 0.0, 0.2, 1.0, 0.5, 3.0});  // mostly about the axis of largest inertia: stable
    check_same_forward(t, 1e-6);
    const auto [dq, dv] = run(t, 1000, no_control);
    CHECK(dq < tolerance);
    CHECK(dv < tolerance);
  }

  TEST_CASE("physics.mujoco.free_toss_with_flap_follows_reference") {
    twin t("free_toss.xml");
    std::vector<double> q(t.m.qpos0.begin(), t.m.qpos0.end());
    q[8 - 1] = 0.4;  // flap angle
    t.set_state(q, {1.0, 0.0, 3.0, 0.5, 2.0, 0.3, 1.0});
    check_same_forward(t);
    const auto [dq, dv] = run(t, 1000, no_control);
    CHECK(dq < tolerance);
    CHECK(dv < tolerance);
  }

  TEST_CASE("physics.mujoco.slide_with_spring_and_motor_follows_reference") {
    twin t("slide.xml");
    t.set_state({0.3, 0.5}, {0.0, 0.0});
    t.set_ctrl(0, 1.0);
    check_same_forward(t);
    const auto [q, v] = run(t, 1000, [](twin& tw, double time) { tw.set_ctrl(0, 2.5 * std::sin(5 * time)); });
    CHECK(q < tolerance);
    CHECK(v < tolerance);
  }

  TEST_CASE("physics.mujoco.ball_joint_follows_reference") {
    twin t("ball.xml");
    const double half = 0.25, s = std::sin(half) / std::sqrt(2.0);
    t.set_state({std::cos(half), s, s, 0.0, 0.3}, {0.5, -0.2, 1.0, 0.0});
    check_same_forward(t);
    const auto [q, v] = run(t, 1000, no_control);
    CHECK(q < tolerance);
    CHECK(v < tolerance);
  }

  TEST_CASE("physics.mujoco.joint_limits_follow_reference") {
    // Both joints are driven into their limits within the first steps and bounce off the soft constraints.
    twin t("limit.xml");
    t.set_state({40 * M_PI / 180, 0.0}, {2.0, 3.0});
    const auto [q, v] = run(t, 1000, no_control);
    CHECK(q < tolerance);
    CHECK(v < tolerance);
  }

  TEST_CASE("physics.mujoco.ant_tree_with_limits_and_motors_follows_reference") {
    // The ant's tree falling freely under sinusoidal motor commands, every ankle starting outside its range
    // (qpos0 = 0 against 30..70 degrees), so all eight limits act from the first step. 1000 steps of 10 ms.
    twin t("ant_tree.xml");
    std::vector<double> q(t.m.qpos0.begin(), t.m.qpos0.end());
    std::vector<double> v(t.m.size.nv, 0.0);
    v[3] = 0.3;
    v[5] = -0.5;
    t.set_state(q, v);
    check_same_forward(t);
    const auto [dq, dv] = run(t, 1000, [](twin& tw, double time) {
      for (int u = 0; u < 8; ++u) tw.set_ctrl(u, 0.8 * std::sin(1.5 * time + 0.7 * u));
    });
    CHECK(dq < tolerance);
    CHECK(dv < tolerance);
  }

  // Contact scenes: the constraint solve is iterated to convergence (MuJoCo's Newton solver converges to the same
  // minimiser), so trajectories (1e-6 relative; observed 1e-14), settled positions and contact forces (1%, the
  // issue's bound; observed equal to printed precision) compare directly.
  double normal_force_ours(const twin& t) {
    double f = 0;
    for (int c = 0; c < static_cast<int>(t.d.ncon[0]); ++c) f += t.d.con_force[3 * c];
    return f;
  }
  double normal_force_reference(const twin& t) {
    double f = 0;
    for (int c = 0; c < t.md->ncon; ++c) {
      if (t.md->contact[c].exclude) continue;
      mjtNum out[6];
      mj_contactForce(t.mm, t.md, c, out);
      f += out[0];
    }
    return f;
  }
  int contacts_reference(const twin& t) {
    int n = 0;
    for (int c = 0; c < t.md->ncon; ++c) n += t.md->contact[c].exclude ? 0 : 1;
    return n;
  }

  // The total normal force of the contacts, ours against MuJoCo's (mj_contactForce), within 1%.
  void check_same_normal_force(const twin& t) {
    const double f = normal_force_ours(t), fr = normal_force_reference(t);
    MESSAGE("normal force " << f << " N (MuJoCo " << fr << " N)");
    CHECK(std::fabs(f - fr) <= 1e-2 * std::fabs(fr));
  }

  // Drops a body onto the floor for `steps`, then compares the run, the rest height, the contact count and the
  // total normal force with MuJoCo's.
  void settles_like_reference(const char* file, int steps) {
    twin t(file);
    t.m.iterations = 100000;
    t.m.tolerance = 1e-14;
    const auto [q, v] = run(t, steps, no_control);
    CHECK(q < 1e-6);
    CHECK(v < 1e-6);
    const double z = t.d.qpos[2], zr = t.md->qpos[2];
    MESSAGE("rest height " << z << " (MuJoCo " << zr << "), contacts " << t.d.ncon[0] << " (" << contacts_reference(t)
                           << ")");
    CHECK(std::fabs(z - zr) <= 1e-2 * zr);
    CHECK(t.d.ncon[0] == contacts_reference(t));
    check_same_normal_force(t);
  }

  TEST_CASE("physics.mujoco.dropped_ball_bounces_and_settles_like_reference") {
    settles_like_reference("drop_ball.xml", 1500);
  }

  TEST_CASE("physics.mujoco.box_slides_the_reference_distance") {
    twin t("box_slide.xml");
    t.m.iterations = 100000;
    t.m.tolerance = 1e-14;
    std::vector<double> q(t.m.qpos0.begin(), t.m.qpos0.end());
    q[2] = 0.0998;  // resting depth, so the box slides instead of dropping
    t.set_state(q, {2.0, 0.0, 0.0, 0.0, 0.0, 0.0});
    const auto [dq, dv] = run(t, 500, no_control);
    const double x = t.d.qpos[0], xr = t.md->qpos[0];
    MESSAGE("sliding distance " << x << " m (MuJoCo " << xr << " m; Coulomb v^2 / (2 mu g) = " << 4.0 / (2 * 0.5 * 9.81)
                                << " m); speed left " << t.d.qvel[0]);
    CHECK(std::fabs(x - xr) <= 1e-2 * xr);
    CHECK(dq < 1e-6);
    CHECK(dv < 1e-6);
    check_same_normal_force(t);
  }

  TEST_CASE("physics.mujoco.capsule_comes_to_rest_like_reference") { settles_like_reference("capsule_rest.xml", 1000); }

  TEST_CASE("physics.mujoco.box_on_box_settles_like_reference") {
    // A turned box dropped onto a box on the floor, 1 s. gmi's box-box finds MuJoCo's contacts but reports their
    // full depth where MuJoCo 2.2.2 reports half of it on a face axis (fixed upstream after 3.3.7), so the upper box
    // rests less deep and the runs are compared where they settle: both boxes' heights within 1% and their
    // horizontal positions within 2 mm, orientations within 1e-2 rad, total normal force 1%.
    twin t("box_stack.xml");
    t.m.iterations = 100000;
    t.m.tolerance = 1e-14;
    int most_box = 0;
    run(t, 1000, [&most_box](twin& tw, double) {
      int n = 0;
      for (int c = 0; c < static_cast<int>(tw.d.ncon[0]); ++c) {
        const int p = static_cast<int>(tw.d.con_pair[c]);
        n += tw.m.geom_type[tw.m.pair_geom1[p]] == ph::geom_box ? 1 : 0;
      }
      most_box = std::max(most_box, n);
    });
    MESSAGE("box-box contacts at most " << most_box << "; contacts at the end " << t.d.ncon[0] << " (MuJoCo "
                                        << contacts_reference(t) << ")");
    CHECK(most_box >= 3);
    for (const int body : {0, 7}) {
      CAPTURE(body);
      MESSAGE("body at qpos " << body << ": z " << t.d.qpos[body + 2] << " (MuJoCo " << t.md->qpos[body + 2] << ")");
      CHECK(std::fabs(t.d.qpos[body + 2] - t.md->qpos[body + 2]) <= 1e-2 * t.md->qpos[body + 2]);
      for (int k = 0; k < 2; ++k) CHECK(std::fabs(t.d.qpos[body + k] - t.md->qpos[body + k]) <= 2e-3);
      double dotq = 0;
      for (int k = 3; k < 7; ++k) dotq += t.d.qpos[body + k] * t.md->qpos[body + k];
      const double angle = 2 * std::acos(std::min(1.0, std::fabs(dotq)));  // rotation between the two
      MESSAGE("orientation apart by " << angle << " rad");
      CHECK(angle <= 1e-2);
    }
    for (int i = 0; i < t.m.size.nv; ++i) CHECK(std::fabs(t.d.qvel[i]) < 1e-2);  // at rest
    check_same_normal_force(t);
  }

  TEST_CASE("physics.mujoco.spheres_on_a_box_follow_reference") {
    // gmi's sphere-box collider (nearest box point; the nearest face with the centre inside) against MuJoCo's,
    // 1.5 s: a ball settling on the box's face, a ball off its edge onto the floor, where it keeps rolling.
    twin t("sphere_box.xml");
    t.m.iterations = 100000;
    t.m.tolerance = 1e-14;
    int most_box = 0;
    const auto [q, v] = run(t, 750, [&most_box](twin& tw, double) {
      int n = 0;
      for (int c = 0; c < static_cast<int>(tw.d.ncon[0]); ++c) {
        const int p = static_cast<int>(tw.d.con_pair[c]);
        n += tw.m.geom_type[tw.m.pair_geom2[p]] == ph::geom_box ? 1 : 0;
      }
      most_box = std::max(most_box, n);
    });
    MESSAGE("sphere-box: largest difference over the run qpos " << q << ", qvel " << v << "; sphere-box contacts at "
                                                                << "most " << most_box);
    CHECK(most_box >= 1);
    for (const int body : {0, 7}) {
      CAPTURE(body);
      MESSAGE("ball at qpos " << body << ": " << t.d.qpos[body] << " " << t.d.qpos[body + 1] << " " << t.d.qpos[body + 2]
                              << " (MuJoCo " << t.md->qpos[body] << " " << t.md->qpos[body + 1] << " "
                              << t.md->qpos[body + 2] << ")");
      for (int k = 0; k < 3; ++k) CHECK(std::fabs(t.d.qpos[body + k] - t.md->qpos[body + k]) <= 2e-3);
    }
    CHECK(t.d.qpos[2] > 0.45);  // the first ball rests on the box (top at 0.4), the second on the floor
    CHECK(t.d.qpos[9] < 0.1);
    CHECK(q < 1e-6);
    CHECK(v < 1e-6);
    for (int i = 0; i < 6; ++i) CHECK(std::fabs(t.d.qvel[i]) < 1e-2);  // the first ball is at rest
    check_same_normal_force(t);
  }

  TEST_CASE("physics.mujoco.capsule_on_a_box_settles_like_reference") {
    // gmi's capsule-box collider is its own (end spheres, and the axis point nearest the box where it dips
    // deeper: physics.collision.capsule_across_a_box_edge_touches_in_the_middle); on a face its end contacts are
    // MuJoCo's, so the run is compared throughout (1e-6) and where it settles, 1.5 s: height within 1%,
    // horizontal position 2 mm, orientation 1e-2 rad, at rest, total normal force 1%.
    twin t("capsule_box.xml");
    t.m.iterations = 100000;
    t.m.tolerance = 1e-14;
    int most_box = 0;
    const auto [q, v] = run(t, 750, [&most_box](twin& tw, double) {
      int n = 0;
      for (int c = 0; c < static_cast<int>(tw.d.ncon[0]); ++c) {
        const int p = static_cast<int>(tw.d.con_pair[c]);
        n += tw.m.geom_type[tw.m.pair_geom2[p]] == ph::geom_box ? 1 : 0;
      }
      most_box = std::max(most_box, n);
    });
    MESSAGE("capsule-box contacts at most " << most_box << "; at the end " << t.d.ncon[0] << " (MuJoCo "
                                            << contacts_reference(t) << "); z " << t.d.qpos[2] << " (MuJoCo "
                                            << t.md->qpos[2] << ")");
    CHECK(most_box >= 2);
    CHECK(q < 1e-6);
    CHECK(v < 1e-6);
    CHECK(t.d.qpos[2] > 0.4);  // on the box
    CHECK(std::fabs(t.d.qpos[2] - t.md->qpos[2]) <= 1e-2 * t.md->qpos[2]);
    for (int k = 0; k < 2; ++k) CHECK(std::fabs(t.d.qpos[k] - t.md->qpos[k]) <= 2e-3);
    double dotq = 0;
    for (int k = 3; k < 7; ++k) dotq += t.d.qpos[k] * t.md->qpos[k];
    const double angle = 2 * std::acos(std::min(1.0, std::fabs(dotq)));
    MESSAGE("orientation apart by " << angle << " rad");
    CHECK(angle <= 1e-2);
    for (int i = 0; i < t.m.size.nv; ++i) CHECK(std::fabs(t.d.qvel[i]) < 1e-2);
    check_same_normal_force(t);
  }

  TEST_CASE("physics.mujoco.sphere_and_capsule_pile_follows_reference") {
    twin t("capsule_pile.xml");
    t.m.iterations = 100000;
    t.m.tolerance = 1e-14;
    bool seen[7][7] = {};  // geom type pairs that touched during the run
    const auto [q, v] = run(t, 1000, [&seen](twin& tw, double) {
      for (int c = 0; c < static_cast<int>(tw.d.ncon[0]); ++c) {
        const int p = static_cast<int>(tw.d.con_pair[c]);
        seen[tw.m.geom_type[tw.m.pair_geom1[p]]][tw.m.geom_type[tw.m.pair_geom2[p]]] = true;
      }
    });
    CHECK(seen[ph::geom_sphere][ph::geom_capsule]);
    CHECK(seen[ph::geom_capsule][ph::geom_capsule]);
    CHECK(seen[ph::geom_plane][ph::geom_sphere]);
    CHECK(q < 1e-6);
    CHECK(v < 1e-6);
    for (int i = 0; i < t.m.size.nq; ++i) CHECK(t.d.qpos[i] == doctest::Approx(t.md->qpos[i]).epsilon(1e-2).scale(1));
  }

  TEST_CASE("physics.mujoco.ant_on_the_floor_follows_reference") {
    // The ant falls onto the floor and pushes with sinusoidal motor commands: contacts, limits and actuators
    // together for 300 steps of 10 ms.
    twin t("ant_floor.xml");
    t.m.iterations = 100000;
    t.m.tolerance = 1e-14;
    MESSAGE("ant_floor: " << t.m.size.npair << " geom pairs, capacity " << t.m.size.ncon_max << " contacts, "
                          << t.m.size.nefc_max << " rows");
    int most = 0;
    const auto [q, v] = run(t, 300, [&most](twin& tw, double time) {
      most = std::max(most, static_cast<int>(tw.d.ncon[0]));
      for (int u = 0; u < 8; ++u) tw.set_ctrl(u, 0.8 * std::sin(3.0 * time + 0.7 * u));
    });
    MESSAGE("most contacts at once: " << most);
    CHECK(most >= 4);
    CHECK(t.m.size.ncon_max == 32);  // <size nconmax>
    CHECK(q < 1e-4);
    CHECK(v < 1e-4);
  }

  TEST_CASE("physics.mujoco.humanoid_tree_falls_like_reference") {
    // 17 limited, sprung hinges under motor commands; the body falls onto the floor (friction) and its limbs meet
    // each other (frictionless self-contacts): 300 steps of 5 ms.
    twin t("humanoid_tree.xml");
    t.m.iterations = 100000;
    t.m.tolerance = 1e-14;
    int most = 0;
    bool frictionless = false;
    const auto [q, v] = run(t, 300, [&](twin& tw, double time) {
      most = std::max(most, static_cast<int>(tw.d.ncon[0]));
      for (int c = 0; c < static_cast<int>(tw.d.ncon[0]); ++c) {
        frictionless = frictionless || tw.m.pair_condim[static_cast<int>(tw.d.con_pair[c])] == 1;
      }
      for (int u = 0; u < tw.m.size.nu; ++u) tw.set_ctrl(u, 0.4 * std::sin(4.0 * time + 0.5 * u));
    });
    MESSAGE("most contacts at once: " << most << "; a frictionless self-contact seen: " << frictionless);
    CHECK(most >= 2);
    CHECK(q < 1e-4);
    CHECK(v < 1e-4);
  }
}

// The dynamics stages on their own: the factorization solves, invariants (angular momentum of a free body,
// energy of an undamped pendulum) hold within stated bounds, and float agrees with double.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gmi/core/rng.hpp>
#include <gmi/physics/physics.hpp>

namespace {
namespace ph = gmi::physics;

std::string model_path(const char* name) { return std::string(GMI_PHYSICS_MODELS) + "/" + name; }

template <class T>
struct sim {
  ph::model<T> m;
  ph::data_layout layout;
  std::vector<T> buffer;
  ph::data<T> d;
  explicit sim(ph::model<T> model) : m(std::move(model)) {
    layout = ph::make_layout(m.size);
    buffer.assign(layout.reals_per_env, T(0));
    d = ph::data_of(layout, buffer.data(), 1, 0);
    for (int i = 0; i < m.size.nq; ++i) d.qpos[i] = m.qpos0[i];
  }
};
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("physics.factor.solves_the_mass_matrix") {
    sim<double> s(ph::load_mjcf_file(model_path("free_toss.xml")));
    s.d.qpos[7] = 0.7;
    const auto v = s.m.view();
    ph::kinematics(v, s.d);
    ph::com_frames(v, s.d);
    ph::mass_matrix(v, s.d);
    ph::factor(v, s.d.qM, s.d.qLD, static_cast<const double*>(nullptr), 0.0);
    const int n = s.m.size.nv;
    // Dense M from the sparse rows, then M (M^-1 b) == b.
    std::vector<double> dense(n * n, 0.0);
    for (int i = 0; i < n; ++i) {
      int at = s.m.dof_Madr[i];
      for (int j = i; j >= 0; j = s.m.dof_parent[j], ++at) dense[n * i + j] = dense[n * j + i] = s.d.qM[at];
    }
    std::vector<double> b{1, -2, 0.5, 3, -1, 0.25, 2};
    for (int i = 0; i < n; ++i) s.d.efc_col[i] = b[i];
    ph::solve(v, s.d.qLD, s.d.efc_col);
    for (int i = 0; i < n; ++i) {
      double r = 0;
      for (int j = 0; j < n; ++j) r += dense[n * i + j] * s.d.efc_col[j];
      CHECK(r == doctest::Approx(b[i]).epsilon(1e-12));
    }
  }

  TEST_CASE("physics.free_body.angular_momentum_is_conserved_to_first_order") {
    // No gravity, no damping: L = R I w about the centre of mass is constant in the world. MuJoCo's Euler step
    // (which we match) takes the gyroscopic term explicitly, so L drifts by O(h): bound 5e-3 relative over 4 s
    // at h = 2 ms (observed 1.4e-3), and halving h must shrink the drift to about half (first order).
    auto drift = [](double h) {
      sim<double> s(ph::load_mjcf_file(model_path("free_spin.xml")));
      s.m.timestep = h;
      const double w0[3] = {1.0, 0.5, 3.0};
      for (int i = 0; i < 3; ++i) s.d.qvel[3 + i] = w0[i];
      auto momentum = [&] {
        ph::kinematics(s.m.view(), s.d);
        const double* I = s.m.body_inertia.data() + 6;
        const ph::vec3<double> w{s.d.qvel[3], s.d.qvel[4], s.d.qvel[5]};
        ph::mat3<double> r;
        for (int k = 0; k < 9; ++k) r.m[k] = s.d.xmat[9 + k];
        return r * ph::sym_mul(I, w);
      };
      const auto l0 = momentum();
      double worst = 0;
      const int steps = static_cast<int>(std::lround(4.0 / h));
      for (int k = 0; k < steps; ++k) {
        ph::step(s.m.view(), s.d);
        worst = std::max(worst, ph::norm(momentum() - l0) / ph::norm(l0));
      }
      return worst;
    };
    const double coarse = drift(0.002), fine = drift(0.001);
    MESSAGE("largest relative change of the angular momentum over 4 s: " << coarse << " at h = 2 ms, " << fine
                                                                         << " at 1 ms");
    CHECK(coarse < 5e-3);
    CHECK(fine < 0.6 * coarse);
    CHECK(fine > 0.4 * coarse);
  }

  TEST_CASE("physics.pendulum.energy_drift_is_bounded") {
    // Undamped, unforced: semi-implicit Euler keeps the energy within O(h) of its start without a trend.
    sim<double> s(ph::load_mjcf_file(model_path("pendulum.xml")));
    s.d.qpos[0] = 1.0;
    const auto v = s.m.view();
    auto energy = [&] {
      ph::forward(v, s.d);
      const double w = s.d.qvel[0];
      double e = 0.5 * s.d.qM[0] * w * w;
      for (int b = 1; b < s.m.size.nbody; ++b) e += s.m.body_mass[b] * 9.81 * s.d.xipos[3 * b + 2];
      return e;
    };
    const double e0 = energy();
    const double scale = s.m.body_mass[1] * 9.81 * 1.0;  // m g l: the potential's swing
    double worst = 0, first = 0, last = 0;
    const int steps = 20000;
    for (int k = 0; k < steps; ++k) {
      ph::step(v, s.d);
      const double d = (energy() - e0) / scale;
      worst = std::max(worst, std::fabs(d));
      if (k < 2000) first += d / 2000;
      if (k >= steps - 2000) last += d / 2000;
    }
    MESSAGE("energy: worst " << worst << ", mean drift " << last - first << " (of m g l)");
    CHECK(worst < 5e-3);
    CHECK(std::fabs(last - first) < 1e-4);
  }

  TEST_CASE("physics.float.follows_double_on_the_chain") {
    // The device runs float: over 1000 steps of the driven, damped chain the float trajectory stays within
    // 1e-3 (absolute, radians and rad/s) of the double one.
    const auto md = ph::load_mjcf_file(model_path("chain3.xml"));
    sim<double> a(md);
    sim<float> b(md.cast<float>());
    const double q0[3] = {0.3, -0.2, 0.5}, v0[3] = {0.5, -0.3, 1.0};
    for (int i = 0; i < 3; ++i) {
      a.d.qpos[i] = q0[i];
      b.d.qpos[i] = float(q0[i]);
      a.d.qvel[i] = v0[i];
      b.d.qvel[i] = float(v0[i]);
    }
    double worst = 0;
    for (int k = 0; k < 1000; ++k) {
      const double t = k * 0.002;
      a.d.ctrl[0] = 1.5 * std::sin(2 * t);
      b.d.ctrl[0] = float(a.d.ctrl[0]);
      a.d.ctrl[1] = 0.8 * std::cos(3 * t);
      b.d.ctrl[1] = float(a.d.ctrl[1]);
      ph::step(a.m.view(), a.d);
      ph::step(b.m.view(), b.d);
      for (int i = 0; i < 3; ++i) {
        worst = std::max(worst, std::fabs(a.d.qpos[i] - double(b.d.qpos[i])));
        worst = std::max(worst, std::fabs(a.d.qvel[i] - double(b.d.qvel[i])));
      }
    }
    MESSAGE("float against double, largest difference: " << worst);
    CHECK(worst < 1e-3);
  }

  TEST_CASE("physics.float.contacts_settle_like_double") {
    // The device's float contact solve: a ball and a capsule dropped on the floor settle within 1e-5 m of the
    // double run, and carry the same weight within 1e-4 relative, with the default 100 Gauss-Seidel sweeps.
    for (const char* file : {"drop_ball.xml", "capsule_rest.xml", "box_slide.xml"}) {
      CAPTURE(file);
      const auto md = ph::load_mjcf_file(model_path(file));
      sim<double> a(md);
      sim<float> b(md.cast<float>());
      double worst = 0;
      for (int k = 0; k < 1500; ++k) {
        ph::step(a.m.view(), a.d);
        ph::step(b.m.view(), b.d);
        for (int i = 0; i < 3; ++i) worst = std::max(worst, std::fabs(a.d.qpos[i] - double(b.d.qpos[i])));
      }
      double fa = 0, fb = 0;
      for (int c = 0; c < static_cast<int>(a.d.ncon[0]); ++c) fa += a.d.con_force[3 * c];
      for (int c = 0; c < static_cast<int>(b.d.ncon[0]); ++c) fb += b.d.con_force[3 * c];
      MESSAGE(std::string(file) << ": float against double, largest position difference " << worst
                                << " m; normal force " << fb << " against " << fa << " N");
      CHECK(worst < 1e-5);
      CHECK(fa > 0);
      CHECK(std::fabs(fa - fb) <= 1e-4 * fa);
    }
  }

  TEST_CASE("physics.host_batch.threads_step_each_environment_as_alone") {
    // 600 ants on the floor on host threads (exec::host splits from 512 environments up), each with its own
    // controls: every one ends exactly where the same environment stepped alone ends.
    const auto m = ph::load_mjcf_file(model_path("ant_floor.xml"));
    const int n = 600;
    ph::host_batch<double> batch(m, n, gmi::exec::host{4});
    auto controls = [](const ph::data<double>& d, int e) {
      for (int u = 0; u < 8; ++u) d.ctrl[u] = 0.8 * std::sin(0.01 * e + 0.7 * u);
    };
    for (int e = 0; e < n; ++e) controls(batch.env(e), e);
    batch.step(20);
    for (int e : {0, 1, 313, 599}) {
      sim<double> alone(m);
      controls(alone.d, e);
      for (int k = 0; k < 20; ++k) ph::step(alone.m.view(), alone.d);
      for (int i = 0; i < m.size.nq; ++i) CHECK(batch.env(e).qpos[i] == alone.d.qpos[i]);
    }
    CHECK(batch.env(0).qpos[2] != batch.env(599).qpos[2]);  // the controls made them differ
  }

  TEST_CASE("physics.small_qp.finds_the_nonnegative_minimiser") {
    // Against scalar projected Gauss-Seidel run to convergence, on positive definite 4 x 4 problems whose
    // minimisers have every pattern of zero and positive components.
    gmi::rng r(7, 0);
    for (int trial = 0; trial < 200; ++trial) {
      double b[16], h[16], c[4], x[4], y[4] = {0, 0, 0, 0};
      for (double& v : b) v = r.uniform(-1.0f, 1.0f);
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          h[4 * i + j] = (i == j ? 0.1 : 0.0);
          for (int k = 0; k < 4; ++k) h[4 * i + j] += b[4 * i + k] * b[4 * j + k];
        }
        c[i] = r.uniform(-1.0f, 1.0f);
      }
      ph::detail::nonnegative_qp(4, h, c, x);
      for (int sweep = 0; sweep < 20000; ++sweep) {
        for (int i = 0; i < 4; ++i) {
          double g = c[i];
          for (int j = 0; j < 4; ++j) g += h[4 * i + j] * y[j];
          y[i] = std::max(0.0, y[i] - g / h[4 * i + i]);
        }
      }
      for (int i = 0; i < 4; ++i) {
        CHECK(x[i] >= 0);
        CHECK(x[i] == doctest::Approx(y[i]).epsilon(1e-6).scale(1));
      }
    }
  }

  TEST_CASE("physics.box_box.faces_edges_and_separation") {
    namespace ph = gmi::physics;
    using v3 = ph::vec3<double>;
    struct hit {
      v3 pos, n;
      double dist;
    };
    auto collide = [](const ph::detail::box<double>& a, const ph::detail::box<double>& b) {
      std::vector<hit> out;
      ph::detail::box_box(a, b, [&](v3 p, v3 n, double d) { out.push_back({p, n, d}); });
      return out;
    };
    const double r = std::sqrt(0.5);
    const ph::detail::box<double> unit{{0, 0, 0}, {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, {0.5, 0.5, 0.5}};
    // Face on face, overlapping by 1 cm: the four corners of the top box's bottom face.
    ph::detail::box<double> top = unit;
    top.c = {0.1, 0, 0.99};
    const std::vector<hit> face = collide(unit, top);
    REQUIRE(face.size() == 4);
    for (const hit& h : face) {
      CHECK(h.dist == doctest::Approx(-0.01));
      CHECK(h.n.z == doctest::Approx(1.0));
      CHECK(h.pos.z == doctest::Approx(0.495));
      CHECK(std::fabs(h.pos.x) <= 0.5 + 1e-12);  // clipped to the lower box's face
    }
    // Edge on edge: the lower box turned 45 degrees about x, the upper about y; one contact between the edges.
    const ph::detail::box<double> ex{{0, 0, 0}, {{1, 0, 0}, {0, r, r}, {0, -r, r}}, {0.5, 0.5, 0.5}};
    ph::detail::box<double> ey{{0, 0, 1.4}, {{r, 0, -r}, {0, 1, 0}, {r, 0, r}}, {0.5, 0.5, 0.5}};
    const std::vector<hit> edge = collide(ex, ey);
    REQUIRE(edge.size() == 1);
    CHECK(edge[0].dist == doctest::Approx(1.4 - 2 * 0.5 * std::sqrt(2.0)));
    CHECK(edge[0].n.z == doctest::Approx(1.0));
    CHECK(edge[0].pos.z == doctest::Approx(0.7));
    CHECK(std::fabs(edge[0].pos.x) < 1e-9);
    CHECK(std::fabs(edge[0].pos.y) < 1e-9);
    // Apart: no contact.
    ey.c.z = 1.5;
    CHECK(collide(ex, ey).empty());
    top.c.z = 1.01;
    CHECK(collide(unit, top).empty());
  }
}

// The warp-per-environment step (batch_warp.cuh) splits stages into per-item work and puts it back in order with
// scans and a reduction. These host tests replay that bookkeeping with plain loops in place of a warp's lanes and
// check it against the serial stages bit for bit on the built-in models in contact: collision by pair slots,
// contact rows at scanned offsets (capacities cut as the serial loops cut them), the QP's pairwise argmin over
// active sets, and the warm start's search.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include <gmi/core/rng.hpp>
#include <gmi/physics/builtin/ant_model.hpp>
#include <gmi/physics/builtin/anymal_model.hpp>
#include <gmi/physics/builtin/humanoid_model.hpp>
#include <gmi/physics/builtin_task.hpp>
#include <gmi/physics/constraints.hpp>
#include <gmi/physics/detail/small_qp.hpp>

namespace {
namespace ph = gmi::physics;

// A built-in model stepped from qpos0 under sinusoidal controls until it touches the floor, with two copies of
// its scratch to run a stage serially and split.
template <class M>
struct scene {
  using sim = ph::builtin_sim<M>;
  std::vector<float> table = sim::table();
  ph::model_view<float> m = sim::view(table.data());
  std::vector<float> a = std::vector<float>(sim::scratch_reals, 0.0f), b = a;
  ph::data<float> da = sim::bind(a.data()), db = sim::bind(b.data());
  explicit scene(int steps) {
    float q[sim::nq], v[sim::nv] = {}, c[sim::nu];
    for (int k = 0; k < sim::nq; ++k) q[k] = m.qpos0[k];
    for (int u = 0; u < sim::nu; ++u) c[u] = 0.9f * std::sin(0.7f * u + 0.3f);
    sim::simulate(m, a.data(), q, v, c, steps);
    // a holds the last step's frames and contacts; recompute the position stages from its final state
    ph::kinematics(m, da);
    ph::com_frames(m, da);
    ph::mass_matrix(m, da);
    ph::velocities(m, da);
    b = a;
  }
};

// collide() as batch_warp.cuh's warp_collide does it: count each pair, scan, write from each pair's first slot.
void collide_by_slots(const ph::model_view<float>& m, const ph::data<float>& d) {
  for (int g = 0; g < m.size.ngeom; ++g) ph::geom_frames(m, d, g);
  int base = 0;
  for (int p = 0; p < m.size.npair; ++p) {
    ph::detail::slot_sink<float> counter{nullptr, m.size.ncon_max, p, 0};
    ph::collide_pair(m, d, p, counter);
    if (counter.added > 0 && base < m.size.ncon_max) {
      ph::detail::slot_sink<float> writer{&d, m.size.ncon_max, p, base};
      ph::collide_pair(m, d, p, writer);
    }
    base += counter.added;
  }
  d.ncon[0] = float(base < m.size.ncon_max ? base : m.size.ncon_max);
}

// add_contact_rows() as warp_contact_rows does it: offsets by a scan over all contacts, a contact kept when its
// rows end within nefc_max.
void contact_rows_by_scan(const ph::model_view<float>& m, const ph::data<float>& d) {
  const int ncon = static_cast<int>(d.ncon[0]);
  int r0 = static_cast<int>(d.nefc[0]), kept = 0;
  for (int c = 0; c < ncon; ++c) {
    const int p = static_cast<int>(d.con_pair[c]);
    const int rows = m.pair_condim[p] == 1 ? 1 : 4;
    if (r0 + rows <= m.size.nefc_max) {
      int nth = 0;
      while (c - nth - 1 >= 0 && static_cast<int>(d.con_pair[c - nth - 1]) == p) ++nth;
      ph::contact_rows(m, d, c, r0, nth);
      kept += rows;
    }
    r0 += rows;
  }
  d.nefc[0] = d.nefc[0] + float(kept);
}

bool same(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

template <class M>
void check_collision_and_rows(int steps, int ncon_cap, int nefc_cap) {
  scene<M> s(steps);
  ph::model_view<float> m = s.m;
  if (ncon_cap > 0) m.size.ncon_max = ncon_cap;
  if (nefc_cap > 0) m.size.nefc_max = nefc_cap;
  ph::collide(m, s.da);
  collide_by_slots(m, s.db);
  CHECK(s.da.ncon[0] > 0.0f);  // the scene has contacts: the comparison is not vacuous
  CHECK(same(s.a, s.b));
  for (const ph::data<float>* d : {&s.da, &s.db}) {
    d->nefc[0] = 0;
    ph::add_limit_rows(m, *d);
  }
  ph::add_contact_rows(m, s.da);
  contact_rows_by_scan(m, s.db);
  CHECK(s.da.nefc[0] > 0.0f);
  CHECK(same(s.a, s.b));
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE_TEMPLATE("physics.split.collision_and_rows_match_the_serial_stages", M, ph::builtin::ant_model,
                     ph::builtin::humanoid_model, ph::builtin::anymal_model) {
    for (const int steps : {160, 240, 320}) {
      CAPTURE(steps);
      check_collision_and_rows<M>(steps, 0, 0);
      check_collision_and_rows<M>(steps, 3, 0);   // contacts dropped for room
      check_collision_and_rows<M>(steps, 0, 6);   // rows dropped for room: the loop stops at the first misfit
    }
  }

  TEST_CASE("physics.split.qp_pairwise_argmin_is_the_serial_one") {
    gmi::rng r(7, 0);
    int nonzero = 0;
    for (int t = 0; t < 2000; ++t) {
      // H = A A' + 0.1 I, sometimes with repeated rows for ties.
      float a[16], h[16], c[4];
      for (float& x : a) x = r.uniform(-1.0f, 1.0f);
      if (t % 5 == 0) for (int k = 0; k < 4; ++k) a[4 + k] = a[k];
      for (int i = 0; i < 4; ++i) {
        c[i] = r.uniform(-1.0f, 1.0f);
        for (int j = 0; j < 4; ++j) {
          float v = i == j ? 0.1f : 0.0f;
          for (int k = 0; k < 4; ++k) v += a[4 * i + k] * a[4 * j + k];
          h[4 * i + j] = v;
        }
      }
      float serial[4];
      ph::detail::nonnegative_qp(4, h, c, serial);
      // Lanes 0..31 hold masks 1..15 (and none); butterfly reduction as __shfl_xor_sync pairs them.
      float best[32], x[32][4] = {};
      int who[32];
      for (int lane = 0; lane < 32; ++lane) {
        int idx[4], k = 0;
        float y[4], objective = 0.0f;
        const int mask = lane + 1;
        const bool ok = mask < 16 && ph::detail::qp_candidate(4, h, c, mask, idx, k, y, objective);
        best[lane] = ok && objective < 0.0f ? objective : 0.0f;
        who[lane] = ok && objective < 0.0f ? mask : 0;
        if (ok) for (int q = 0; q < k; ++q) x[lane][idx[q]] = y[q];
      }
      for (int o = 16; o > 0; o >>= 1) {
        float nb[32];
        int nw[32];
        for (int lane = 0; lane < 32; ++lane) {
          const int other = lane ^ o;
          const bool take = ph::detail::qp_prefer(best[other], who[other], best[lane], who[lane]);
          nb[lane] = take ? best[other] : best[lane];
          nw[lane] = take ? who[other] : who[lane];
        }
        for (int lane = 0; lane < 32; ++lane) {
          best[lane] = nb[lane];
          who[lane] = nw[lane];
        }
      }
      for (int lane = 1; lane < 32; ++lane) REQUIRE(who[lane] == who[0]);
      float warp[4] = {0, 0, 0, 0};
      if (who[0] != 0) for (int i = 0; i < 4; ++i) warp[i] = x[who[0] - 1][i];
      for (int i = 0; i < 4; ++i) REQUIRE(std::memcmp(&warp[i], &serial[i], sizeof(float)) == 0);
      nonzero += who[0] != 0;
    }
    CHECK(nonzero > 100);
  }

  TEST_CASE("physics.split.warm_start_search_finds_the_previous_rows") {
    // Keys increasing with gaps; every current key is looked up as the serial merge walk would.
    std::vector<float> buf(ph::make_layout(ph::builtin::ant_model::sizes()).reals_per_env, 0.0f);
    const ph::data<float> d = ph::builtin_sim<ph::builtin::ant_model>::bind(buf.data());
    const int np = 30, n = 40;
    for (int q = 0; q < np; ++q) {
      d.prev_key[q] = float(3 * q + 1);
      d.prev_force[q] = float(q + 1);
    }
    int hits = 0;
    for (int r = 0; r < n; ++r) d.efc_key[r] = float(2 * r + 1);
    for (int r = 0, q = 0; r < n; ++r) {
      while (q < np && d.prev_key[q] < d.efc_key[r]) ++q;
      const float merge = q < np && d.prev_key[q] == d.efc_key[r] ? d.prev_force[q] : 0.0f;
      CHECK(ph::warm_force(d, r, np) == merge);
      hits += merge != 0.0f;
    }
    CHECK(hits > 3);
    CHECK(ph::warm_force(d, 0, 0) == 0.0f);
  }

  TEST_CASE("physics.collision.sphere_inside_a_box_leaves_by_the_nearest_face") {
    // The case MuJoCo's scenes above do not reach (spheres_on_a_box_follow_reference covers face and edge): the
    // centre inside, 0.04 below the top face and farther from the others.
    struct record {
      int added = 0;
      ph::vec3<float> pos{}, n{};
      float dist = 0;
      void add(ph::vec3<float> p, ph::vec3<float> normal, ph::vec3<float>, float d) {
        ++added;
        pos = p;
        n = normal;
        dist = d;
      }
    } out;
    ph::mat3<float> turn{};  // a quarter turn about z: box x along world y
    turn.m[1] = -1.0f;
    turn.m[3] = 1.0f;
    turn.m[8] = 1.0f;
    const float h[3] = {0.3f, 0.2f, 0.1f};
    ph::detail::sphere_box(out, ph::vec3<float>{0.0f, 0.05f, 1.06f}, 0.05f, ph::vec3<float>{0.0f, 0.0f, 1.0f}, turn, h);
    REQUIRE(out.added == 1);
    CHECK(out.n.z == doctest::Approx(-1.0f));  // from the sphere into the box, against the top face's normal
    CHECK(out.dist == doctest::Approx(-0.09f));
    CHECK(out.pos.y == doctest::Approx(0.05f));
    CHECK(out.pos.z == doctest::Approx(1.055f));  // midway between the face (1.1) and the deepest point (1.01)
    record side;
    // Nearer the box's +x face (world +y after the turn): pushed out along world y.
    ph::detail::sphere_box(side, ph::vec3<float>{0.0f, 0.28f, 1.0f}, 0.05f, ph::vec3<float>{0.0f, 0.0f, 1.0f}, turn, h);
    REQUIRE(side.added == 1);
    CHECK(side.n.y == doctest::Approx(-1.0f));
    CHECK(side.dist == doctest::Approx(-0.07f));
  }

  TEST_CASE("physics.collision.capsule_across_a_box_edge_touches_in_the_middle") {
    // A capsule along y lying over the box's top edge at x = 0.3: its ends are beyond the box's y range, so only
    // the axis point nearest the box touches, 0.02 above the edge with radius 0.05.
    struct record {
      int added = 0;
      ph::vec3<float> n{};
      float dist = 0;
      void add(ph::vec3<float>, ph::vec3<float> normal, ph::vec3<float>, float d) {
        ++added;
        n = normal;
        dist = d;
      }
    } out;
    ph::mat3<float> id{};
    id.m[0] = id.m[4] = id.m[8] = 1.0f;
    const float h[3] = {0.3f, 0.3f, 0.3f};
    ph::detail::capsule_box(out, ph::vec3<float>{0.3f, 0.0f, 0.32f}, ph::vec3<float>{0.0f, 0.5f, 0.0f}, 0.05f,
                            ph::vec3<float>{0.0f, 0.0f, 0.0f}, id, h);
    REQUIRE(out.added == 1);
    CHECK(out.n.z == doctest::Approx(-1.0f));
    CHECK(out.dist == doctest::Approx(-0.03f).epsilon(1e-3));
    record flat;  // lying on the face within its y range: the two ends, no middle contact
    ph::detail::capsule_box(flat, ph::vec3<float>{0.0f, 0.0f, 0.34f}, ph::vec3<float>{0.0f, 0.2f, 0.0f}, 0.05f,
                            ph::vec3<float>{0.0f, 0.0f, 0.0f}, id, h);
    CHECK(flat.added == 2);
    CHECK(flat.dist == doctest::Approx(-0.01f).epsilon(1e-3));
  }
}

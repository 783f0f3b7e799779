// The built-in models (include/gmi/physics/builtin/*_model.hpp) are what gmi's loader makes of their MJCF files:
// sizes, options and every word equal, and the embedded MJCF text is the file's. Regenerate a header with
// gmi.tool.physics_model_header when its file changes. The colliders a built-in model compiles
// (builtin_sim::colliders) are its pairs' type pairs, and stepping with only those equals stepping with all.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmi/physics/builtin/ant_model.hpp>
#include <gmi/physics/builtin/ant_v4_model.hpp>
#include <gmi/physics/builtin/anymal_model.hpp>
#include <gmi/physics/builtin/humanoid_model.hpp>
#include <gmi/physics/builtin/humanoid_v4_model.hpp>
#include <gmi/physics/builtin_task.hpp>
#include <gmi/physics/mjcf.hpp>
#include <gmi/physics/step.hpp>

namespace {
std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE_TEMPLATE("physics.builtin.headers_match_their_mjcf", M, gmi::physics::builtin::ant_v4_model,
                     gmi::physics::builtin::humanoid_v4_model, gmi::physics::builtin::anymal_model,
                     gmi::physics::builtin::ant_model, gmi::physics::builtin::humanoid_model) {
    namespace ph = gmi::physics;
    const std::string file = std::string(GMI_SOURCE_DIR) + "/" + M::source;
    CAPTURE(file);
    const std::string text = read(file);
    CHECK(text == std::string(M::mjcf));
    const ph::model<float> m = ph::load_mjcf_string(text, file).cast<float>();
    CHECK(ph::same_sizes(m.size, M::sizes()));
    const ph::model_options o = ph::options_of(m), h = M::options();
    CHECK(o.timestep == h.timestep);
    for (int k = 0; k < 3; ++k) CHECK(o.gravity[k] == h.gravity[k]);
    CHECK(o.iterations == h.iterations);
    CHECK(o.tolerance == h.tolerance);
    const std::vector<std::uint32_t> w = ph::pack_words(m);
    REQUIRE(w.size() == sizeof(M::words) / 4);
    int differ = 0;
    for (std::size_t i = 0; i < w.size(); ++i) differ += w[i] != M::words[i] ? 1 : 0;
    CHECK(differ == 0);
    // The view over the words reads what the model holds.
    const std::vector<float> t = ph::builtin_sim<M>::table();
    const ph::model_view<float> v = ph::builtin_sim<M>::view(t.data());
    const ph::model_view<float> mv = m.view();
    for (int b = 0; b < m.size.nbody; ++b) CHECK(v.body_mass[b] == mv.body_mass[b]);
    for (int j = 0; j < m.size.njnt; ++j) CHECK(v.jnt_type[j] == mv.jnt_type[j]);
    for (int q = 0; q < m.size.nq; ++q) CHECK(v.qpos_spring[q] == mv.qpos_spring[q]);
  }

  TEST_CASE_TEMPLATE("physics.builtin.colliders_are_the_pairs_types", M, gmi::physics::builtin::ant_v4_model,
                     gmi::physics::builtin::humanoid_v4_model, gmi::physics::builtin::anymal_model,
                     gmi::physics::builtin::ant_model, gmi::physics::builtin::humanoid_model) {
    namespace ph = gmi::physics;
    using sim = ph::builtin_sim<M>;
    const std::vector<float> t = sim::table();
    const ph::model_view<float> v = sim::view(t.data());
    ph::collider_set pairs = 0;
    for (int p = 0; p < v.size.npair; ++p)
      pairs |= ph::collider_bit(v.geom_type[v.pair_geom1[p]], v.geom_type[v.pair_geom2[p]]);
    CHECK(pairs != 0);
    CHECK(sim::colliders == pairs);
    // Falling from qpos0 onto the floor under fixed controls: the same bits with the model's colliders as with all.
    std::vector<float> a(sim::scratch_reals), b(sim::scratch_reals);
    const ph::data<float> da = sim::bind(a.data()), db = sim::bind(b.data());
    for (const ph::data<float>* d : {&da, &db}) {
      for (int k = 0; k < sim::nq; ++k) d->qpos[k] = v.qpos0[k];
      for (int k = 0; k < sim::nv; ++k) d->qvel[k] = d->qfrc_applied[k] = 0.0f;
      for (int k = 0; k < sim::nu; ++k) d->ctrl[k] = (k % 2 == 0 ? 0.3f : -0.2f);
      d->time[0] = 0.0f;
      d->prev_nefc[0] = 0.0f;
    }
    int most = 0, differ = 0;
    for (int s = 0; s < 400; ++s) {
      ph::step<sim::colliders>(v, da);
      ph::step<ph::all_colliders>(v, db);
      most = std::max(most, static_cast<int>(da.ncon[0]));
    }
    for (int k = 0; k < sim::nq; ++k) differ += std::memcmp(&da.qpos[k], &db.qpos[k], 4) != 0 ? 1 : 0;
    for (int k = 0; k < sim::nv; ++k) differ += std::memcmp(&da.qvel[k], &db.qvel[k], 4) != 0 ? 1 : 0;
    CHECK(most > 0);  // the steps met the floor
    CHECK(differ == 0);
  }
}

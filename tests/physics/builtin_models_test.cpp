// The built-in models (include/gmi/physics/builtin/*_model.hpp) are what gmi's loader makes of their MJCF files:
// sizes, options and every word equal, and the embedded MJCF text is the file's. Regenerate a header with
// gmi.tool.physics_model_header when its file changes.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmi/physics/builtin/ant_model.hpp>
#include <gmi/physics/builtin/anymal_model.hpp>
#include <gmi/physics/builtin/humanoid_model.hpp>
#include <gmi/physics/builtin_task.hpp>
#include <gmi/physics/mjcf.hpp>

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
  TEST_CASE_TEMPLATE("physics.builtin.headers_match_their_mjcf", M, gmi::physics::builtin::ant_model,
                     gmi::physics::builtin::humanoid_model, gmi::physics::builtin::anymal_model) {
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
}

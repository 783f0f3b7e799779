// MuJoCo models with predefined contact pairs (mujoco_pairs.hpp): gmi's Ant steps bit for bit as with MuJoCo's dynamic
// collision (same contacts, same order) with the broadphase off, every admitted pair listed once; models the rewrite
// does not cover are refused in one line.
#include <doctest/doctest.h>
#include <mujoco/mujoco.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gmi/actors/mujoco.hpp>
#include <gmi/actors/mujoco_pairs.hpp>

namespace {
namespace mj = gmi::actors::mujoco;
std::string builtin(const char* name) { return std::string(GMI_BUILTIN_MODELS) + "/" + name; }
float action_at(int step, int env, int u) {
  return std::sin(0.37f * float(step) + 1.1f * float(u) + 0.5f * float(env));
}
}  // namespace

TEST_CASE("actors.mujoco.pairs_step_as_dynamic_collision") {
  const mj::model_ptr dynamic = mj::load(builtin("ant_v4.xml"));
  const mj::model_ptr pairs = mj::load_with_predefined_pairs(builtin("ant_v4.xml"));
  CHECK(dynamic->opt.collision == mjCOL_ALL);
  CHECK(pairs->opt.collision == mjCOL_PAIR);
  CHECK(pairs->npair == 13);  // the floor with each of the 13 body geoms; legs never touch legs (conaffinity 0)
  CHECK(mj::admitted_pairs(dynamic.get()).size() == 13);
  CHECK(dynamic->njmax == 500);  // MuJoCo 2.2's default
  CHECK(pairs->njmax == 20 * 4 + 8);  // nconmax 20 contacts of condim 3 (4 pyramid rows) and 8 limited hinges
  CHECK(pairs->nstack < dynamic->nstack / 10);
  constexpr int envs = 8, steps = 400;
  // per_env: b.data(i) is environment i's own step (its contacts)
  mj::sim<mj::ant_v4> a(dynamic, envs, 5u, {}, mj::data_layout::per_env), b(pairs, envs, 5u, {}, mj::data_layout::per_env);
  std::vector<float> oa(envs * 27), ob(envs * 27), act(8), fa(27), fb(27);
  for (int i = 0; i < envs; ++i) {
    a.reset_one(std::size_t(i), oa.data() + i * 27);
    b.reset_one(std::size_t(i), ob.data() + i * 27);
  }
  long contacts = 0, differences = 0, ends = 0;
  for (int k = 0; k < steps; ++k) {
    for (int i = 0; i < envs; ++i) {
      for (int u = 0; u < 8; ++u) act[std::size_t(u)] = action_at(k, i, u);
      const auto ra = a.step_one(std::size_t(i), act.data(), oa.data() + i * 27, fa.data());
      const auto rb = b.step_one(std::size_t(i), act.data(), ob.data() + i * 27, fb.data());
      contacts += b.data(std::size_t(i))->ncon;
      differences += (ra.reward != rb.reward) + (ra.terminated != rb.terminated) + (ra.truncated != rb.truncated);
      ends += ra.terminated || ra.truncated;
      for (int j = 0; j < 27; ++j) differences += oa[std::size_t(i * 27 + j)] != ob[std::size_t(i * 27 + j)];
    }
  }
  CHECK(contacts > envs * steps / 4);  // the legs touched the floor: the pairs were exercised
  CHECK(ends > 0);                     // and episodes ended and reset
  CHECK(differences == 0);
  long most_rows = 0;
  for (int i = 0; i < envs; ++i) most_rows = std::max<long>(most_rows, b.data(std::size_t(i))->nefc);
  CHECK(most_rows <= pairs->njmax);
}

TEST_CASE("actors.mujoco.pairs_refuse_what_they_do_not_cover") {
  const std::string contact = "<mujoco><worldbody><geom name=\"a\" type=\"plane\" size=\"1 1 1\"/><body><freejoint/>"
                              "<geom name=\"b\" type=\"sphere\" size=\"0.1\"/></body></worldbody><contact>"
                              "<exclude body1=\"world\" body2=\"world\"/></contact></mujoco>";
  try {
    (void)mj::load_text_with_predefined_pairs("contact.xml", contact);
    FAIL("a model with its own <contact> section was rewritten");
  } catch (const gmi::config_error& e) {
    const std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);
    CHECK(what.find("MJCF contact.xml with predefined pairs: got \"a <contact> section or collision option\"") == 0);
  }
  // Without the section: one admitted pair (plane and sphere), the sphere's unnamed geom named for it.
  const std::string plain = "<mujoco><worldbody><geom type=\"plane\" size=\"1 1 1\"/><body pos=\"0 0 1\"><freejoint/>"
                            "<geom type=\"sphere\" size=\"0.1\"/></body></worldbody></mujoco>";
  const mj::model_ptr m = mj::load_text_with_predefined_pairs("plain.xml", plain);
  CHECK(m->npair == 1);
  CHECK(mj_name2id(m.get(), mjOBJ_GEOM, "gmi_geom_1") == 1);
  // Several geoms a body (the Humanoid): every admitted pair once, whatever order MuJoCo's compiler gives them.
  const mj::model_ptr humanoid_v4 = mj::load_with_predefined_pairs(builtin("humanoid_v4.xml"));
  CHECK(humanoid_v4->npair == int(mj::admitted_pairs(mj::load(builtin("humanoid_v4.xml")).get()).size()));
  CHECK(humanoid_v4->npair > 13);
}

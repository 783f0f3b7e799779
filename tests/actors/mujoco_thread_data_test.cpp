// mujoco::sim with one mjData per thread (data_layout::per_thread, mujoco_thread_data.hpp) steps as with one
// mjData per environment, bit for bit: observations, final observations, rewards and flags over episodes that end
// and reset, an invalid action, steps on threads that come and go (each with a new mjData), and checkpoints
// saved from one layout and loaded into the other.
#include <doctest/doctest.h>
#include <mujoco/mujoco.h>

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <gmi/actors/mujoco.hpp>
#include <gmi/actors/mujoco_pairs.hpp>
#include <gmi/io/checkpoint.hpp>

namespace {
namespace mj = gmi::actors::mujoco;
std::string builtin(const char* name) { return std::string(GMI_BUILTIN_MODELS) + "/" + name; }
float action_at(int step, int env, int u) {
  return 1.5f * std::sin(0.37f * float(step) + 1.1f * float(u) + 0.5f * float(env));
}

// Steps a and b `steps` times over all environments (step k on a new thread where k % 3 == 1); returns the
// number of differences and counts the episodes that ended.
long step_both(mj::sim<mj::ant_v4>& a, mj::sim<mj::ant_v4>& b, int first, int steps, long& ends) {
  const int envs = int(a.num_envs());
  std::vector<float> oa(27), ob(27), fa(27), fb(27), act(8);
  long differences = 0;
  for (int k = first; k < first + steps; ++k) {
    auto one = [&] {
      for (int i = 0; i < envs; ++i) {
        for (int u = 0; u < 8; ++u) act[std::size_t(u)] = action_at(k, i, u);
        if (k == first + 7 && i == 3) act[2] = std::numeric_limits<float>::quiet_NaN();  // refused: a reset
        const auto ra = a.step_one(std::size_t(i), act.data(), oa.data(), fa.data());
        const auto rb = b.step_one(std::size_t(i), act.data(), ob.data(), fb.data());
        differences += (ra.reward != rb.reward) + (ra.terminated != rb.terminated) + (ra.truncated != rb.truncated);
        for (int j = 0; j < 27; ++j) differences += oa[std::size_t(j)] != ob[std::size_t(j)];
        if (ra.terminated || ra.truncated) {
          ++ends;
          for (int j = 0; j < 27; ++j) differences += fa[std::size_t(j)] != fb[std::size_t(j)];
        }
      }
    };
    if (k % 3 == 1) {
      std::thread(one).join();
    } else {
      one();
    }
  }
  return differences;
}
}  // namespace

TEST_CASE("actors.mujoco.per_thread_data_steps_as_per_env") {
  for (const bool pairs : {true, false}) {
    CAPTURE(pairs);
    const mj::model_ptr m = pairs ? mj::load_with_predefined_pairs(builtin("ant_v4.xml")) : mj::load(builtin("ant_v4.xml"));
    constexpr int envs = 6;
    mj::sim<mj::ant_v4> a(m, envs, 5u, {}, mj::data_layout::per_env), b(m, envs, 5u);
    CHECK(a.layout() == mj::data_layout::per_env);
    CHECK(b.layout() == mj::data_layout::per_thread);  // the default (mujoco::default_layout)
    std::vector<float> oa(27), ob(27);
    long differences = 0, ends = 0;
    for (int i = 0; i < envs; ++i) {
      a.reset_one(std::size_t(i), oa.data());
      b.reset_one(std::size_t(i), ob.data());
      for (int j = 0; j < 27; ++j) differences += oa[std::size_t(j)] != ob[std::size_t(j)];
    }
    differences += step_both(a, b, 0, 300, ends);
    CHECK(ends > envs);  // episodes ended and reset
    // The state rows as per_env keeps them: a checkpoint of either loads into the other and continues alike.
    gmi::io::checkpoint ca, cb;
    a.save_state(ca, "x.");
    b.save_state(cb, "x.");
    for (const char* f : {"time", "qpos", "qvel", "qacc_warmstart", "xpos"}) {
      const std::string name = std::string("x.mujoco.") + f;
      CHECK(ca.get<double>(name) == cb.get<double>(name));
    }
    mj::sim<mj::ant_v4> c(m, envs, 5u, {}, mj::data_layout::per_thread), d(m, envs, 5u, {}, mj::data_layout::per_env);
    c.load_state(ca, "x.");
    d.load_state(cb, "x.");
    differences += step_both(a, c, 300, 60, ends);  // per_env on, and per_thread from per_env's checkpoint
    differences += step_both(d, b, 300, 60, ends);  // per_env from per_thread's checkpoint, and per_thread on
    CHECK(differences == 0);
    CHECK(a.read_stats().invalid_actions == 2);
    CHECK(b.read_stats().invalid_actions == 2);
  }
}

// rl/physics_staged.hpp on the host: the staged env step (begin, each substep's stages over all environments, end;
// the arrays between passes element-major, as the device keeps them) against env_batch's one-call step, bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gmi/envs/ant.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid.hpp>
#include <gmi/envs/humanoid_v4.hpp>
#include <gmi/physics/step.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/physics_staged.hpp>

#include "envs_gpu/gpu_runs.hpp"  // test_action: the GPU test's actions

namespace {

TEST_CASE_TEMPLATE("rl.physics_staged.host_twin_equals_the_one_call_step", T, gmi::envs::ant_v4, gmi::envs::humanoid_v4,
                   gmi::envs::anymal, gmi::envs::ant, gmi::envs::humanoid) {
  // Two host batches of 48 environments from one seed, 40 env steps of the GPU test's actions (contacts, limits,
  // episode ends and auto-resets), one action with a NaN (not applied: reset, counted invalid): env_batch::step
  // against staged_env_step_host on the other batch's view. Observations, rewards, flags, final observations and
  // the statistics equal bit for bit. Also with each stage's hot arrays in slices of 111 and 1023 floats
  // (physics/stage_shared.hpp, as the device's shared slices).
  const int n = 48, steps = 40;
  for (const int reals : {0, 111, 1023}) {
    CAPTURE(reals);
    gmi::rl::env_batch<T> a(n, 2024), b(n, 2024);
    std::vector<float> act(std::size_t(n) * T::act_dim), oa(std::size_t(n) * T::obs_dim), ob = oa, fa = oa, fb = oa,
                                                                                            ra(n), rb(n);
    std::vector<std::uint8_t> ta(n), tb(n), ua(n), ub(n);
    a.reset({oa.data(), oa.size()});
    b.reset({ob.data(), ob.size()});
    REQUIRE(oa == ob);
    long ends = 0, equal_steps = 0;
    for (int t = 0; t < steps; ++t) {
      for (int i = 0; i < n; ++i)
        for (int k = 0; k < T::act_dim; ++k) act[std::size_t(i) * T::act_dim + k] = test_action(7, t, i, T::act_dim, k);
      if (t == 5) act[3 * T::act_dim + 1] = std::numeric_limits<float>::quiet_NaN();
      a.step({act.data(), act.size()}, {oa.data(), oa.size()}, {ra.data(), ra.size()}, {ta.data(), ta.size()},
             {ua.data(), ua.size()}, nullptr, {fa.data(), fa.size()});
      gmi::rl::staged_env_step_host<T>(b.view(), act.data(), {rb.data(), tb.data(), ub.data(), ob.data(), fb.data()},
                                       reals);
      CAPTURE(t);
      const bool same = std::memcmp(oa.data(), ob.data(), oa.size() * sizeof(float)) == 0 &&
                        std::memcmp(ra.data(), rb.data(), ra.size() * sizeof(float)) == 0 && ta == tb && ua == ub &&
                        std::memcmp(fa.data(), fb.data(), fa.size() * sizeof(float)) == 0;
      CHECK(same);
      equal_steps += same;
      for (auto f : ta) ends += f;
    }
    const gmi::rl::episode_stats sa = a.read_stats(), sb = b.read_stats();
    CHECK(sa.episodes == sb.episodes);
    CHECK(sa.invalid_actions == sb.invalid_actions);
    CHECK(sa.invalid_actions >= 1);
    CHECK(ends >= 1);  // episodes ended (the NaN's at least): resets were compared too
    MESSAGE(std::string(T::name) << ": " << equal_steps << " of " << steps << " staged steps bit-identical (slices of "
                                 << reals << " floats), " << ends << " episodes ended");
  }
}

TEST_CASE("rl.physics_staged.stages_in_order_are_the_step") {
  // physics::step_stage 0 to 4 on one environment's arrays are physics::step, bit for bit, over 200 steps of the
  // ant_v4 under fixed controls (it falls and lands: contacts and the solve are in play).
  using sim = gmi::envs::ant_v4::sim;
  const std::vector<float> table = sim::table();
  const gmi::physics::model_view<float> m = sim::view(table.data());
  std::vector<float> x(sim::scratch_reals, 0.0f), y = x;
  const gmi::physics::data<float> dx = sim::bind(x.data()), dy = sim::bind(y.data());
  for (int k = 0; k < sim::nq; ++k) dx.qpos[k] = dy.qpos[k] = m.qpos0[k];
  for (int u = 0; u < sim::nu; ++u) dx.ctrl[u] = dy.ctrl[u] = 0.9f * std::sin(0.7f * u + 0.3f);
  int contacts = 0;
  for (int s = 0; s < 200; ++s) {
    gmi::physics::step<sim::colliders>(m, dx);
    for (int k = 0; k < gmi::physics::step_stages; ++k) gmi::physics::step_stage<sim::colliders>(k, m, dy);
    contacts += static_cast<int>(dx.ncon[0]);
  }
  CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
  CHECK(contacts > 0);
}

}  // namespace

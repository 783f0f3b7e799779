// physics/thread_shared.hpp on the host: the tasks' steps with the hottest arrays bound into a separate slice (shared
// memory on the device) give the same bits as the plain scratch, for every slice length; the slice's rules.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/envs/ant.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid.hpp>
#include <gmi/envs/humanoid_v4.hpp>
#include <gmi/physics/thread_shared.hpp>

#include "envs_gpu/gpu_runs.hpp"  // test_action: the GPU test's actions

namespace {
namespace ph = gmi::physics;

TEST_CASE_TEMPLATE("physics.thread_shared.steps_are_bit_identical_for_every_slice", T, gmi::envs::ant_v4,
                   gmi::envs::humanoid_v4, gmi::envs::anymal, gmi::envs::ant, gmi::envs::humanoid) {
  // 32 environments from the GPU test's resets, 12 env steps of its random actions (contacts, limits, episode
  // ends): split_step (plain scratch) against split_step_in over bind_shared with slices from none to the longest,
  // the slice and the scratch filled with NaN before each step (every value read must be written first there too).
  typename T::params p{};
  const std::vector<float> table = T::make_table(p);
  T::bind_table(p, table.data());
  const ph::model_sizes s = T::sim::sizes_v;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  int contacts = 0, ends = 0, moved = 0;
  for (const int slice : {0, 1, 15, 31, 63, 111, 151, 255}) {
    CAPTURE(slice);
    const int used = ph::thread_shared_used(s, slice);
    CHECK(used <= slice);
    for (int i = 0; i < 32; ++i) {
      gmi::rng r(2024, i);
      typename T::state plain;
      T::reset(plain, r, p);
      const typename T::state s0 = plain;
      typename T::state shared = plain;
      std::vector<float> scratch(T::sim::scratch_reals), hot(static_cast<std::size_t>(slice) + 1);
      for (int t = 0; t < 12; ++t) {
        float a[T::act_dim];
        for (int k = 0; k < T::act_dim; ++k) a[k] = test_action(7, t, std::size_t(i), T::act_dim, k);
        const gmi::transition want = T::step(plain, a, r, p);
        for (float& x : scratch) x = nan;
        for (float& x : hot) x = nan;
        const ph::data<float> d = ph::bind_shared<float>(s, scratch.data(), slice ? hot.data() : nullptr, slice);
        CHECK(d.qLD.p == d.qLDc.p);
        const gmi::transition got = gmi::envs::split_step_in<T>(shared, a, p, scratch.data(), d);
        CHECK(std::memcmp(&shared, &plain, sizeof plain) == 0);
        CHECK(std::memcmp(&got.reward, &want.reward, sizeof want.reward) == 0);
        CHECK(got.terminated == want.terminated);
        CHECK(std::isnan(hot[static_cast<std::size_t>(slice)]));  // nothing past the slice was written
        if (slice == 0) {
          contacts += static_cast<int>(d.ncon[0]);
          ends += want.terminated ? 1 : 0;
        }
        if (want.terminated) break;
      }
      moved += std::memcmp(&plain, &s0, sizeof s0) != 0;
    }
  }
  CHECK(contacts > 0);  // contact rows were in play
  CHECK(moved > 0);
  MESSAGE(std::string(T::name) << ": " << contacts << " contacts, " << ends << " episode ends; floats in a slice of 31 / 111 / 255: "
                  << ph::thread_shared_used(s, 31) << " / " << ph::thread_shared_used(s, 111) << " / "
                  << ph::thread_shared_used(s, 255));
}

TEST_CASE("physics.thread_shared.slice_rules") {
  CHECK(ph::thread_shared_slice(0) == 0);
  CHECK(ph::thread_shared_slice(1) == 1);
  CHECK(ph::thread_shared_slice(110) == 111);
  CHECK(ph::thread_shared_slice(111) == 111);
  CHECK(ph::thread_shared_slice(1000) == ph::max_thread_shared_reals);
  // The hot arrays fill in order and skip one that does not fit: the ant_v4 (nv 14, nM 81): efc_col, nefc, ncon make
  // 16, qLDc 97, qacc 111, qfrc_constraint 125; at 100 qacc and every later array is too long for the 3 left.
  const ph::model_sizes ant_v4 = gmi::envs::ant_v4::sim::sizes_v;
  CHECK(ph::thread_shared_used(ant_v4, 16) == 16);
  CHECK(ph::thread_shared_used(ant_v4, 100) == 97);
  CHECK(ph::thread_shared_used(ant_v4, 111) == 111);
  CHECK(ph::thread_shared_used(ant_v4, 125) == 125);
  CHECK(ph::requested_thread_shared_reals() == 0);
  CHECK_THROWS_AS(ph::request_thread_shared_reals(-1), gmi::config_error);
  CHECK_THROWS_AS(ph::request_thread_shared_reals(256), gmi::config_error);
  ph::request_thread_shared_reals(111);
  CHECK(ph::requested_thread_shared_reals() == 111);
  ph::request_thread_shared_reals(0);
}

}  // namespace

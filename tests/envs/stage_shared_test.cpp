// physics/stage_shared.hpp on the host: each stage of the staged step with its hot arrays bound into a slice
// (shared memory on the device) gives the same bits as the plain stage, for every slice length; the slice's rules.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/envs/ant.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid.hpp>
#include <gmi/envs/humanoid_v4.hpp>
#include <gmi/physics/stage_shared.hpp>
#include <gmi/physics/step.hpp>

namespace {
namespace ph = gmi::physics;

constexpr int field_count = static_cast<int>(ph::data_field::efc_col) + 1;

// Fields some stage keeps as its scratch (neither copied in nor out; qLD shares qLDc's slot): their global copies
// are stale after a stage with a slice, so they are left out of the comparison (a later stage that read one would
// change the compared arrays).
bool stage_scratch(ph::data_field f) {
  if (f == ph::data_field::qLD) return true;
  for (int k = 0; k < ph::step_stages; ++k)
    for (int j = 0; j < ph::stage_slot_count(k); ++j) {
      const ph::stage_slot s = ph::stage_slot_at(k, j);
      if (s.field == f && !s.in && !s.out) return true;
    }
  return false;
}

TEST_CASE_TEMPLATE("physics.stage_shared.stages_are_bit_identical_for_every_slice", T, gmi::envs::ant_v4,
                   gmi::envs::humanoid_v4, gmi::envs::anymal, gmi::envs::ant, gmi::envs::humanoid) {
  // 6 environments from the tasks' resets, 24 control steps of random controls each (every substep's five stages):
  // step_stage on plain arrays against step_stage over stage_bind (lane 1 of 3 of a slice filled with NaN before
  // each stage, so a value read before it is written shows) then stage_unbind, the scratch slots' global copies set
  // to NaN after it (a later stage that read them shows). After every stage every other array equals bit for bit,
  // and lanes 0 and 2 of the slice stay untouched.
  using sim = typename T::sim;
  typename T::params p{};
  const std::vector<float> table = T::make_table(p);
  T::bind_table(p, table.data());
  const ph::model_sizes s = sim::sizes_v;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  long contacts = 0, stages = 0, differing = 0, other_lanes = 0;
  for (const int reals : {0, 1, 14, 50, 84, 111, 200, 255, 511, 1023}) {
    CAPTURE(reals);
    for (int k = 0; k < ph::step_stages; ++k) CHECK(ph::stage_shared_used(s, k, reals) <= reals);
    for (int i = 0; i < 6; ++i) {
      gmi::rng r(2024, i);
      typename T::state st;
      T::reset(st, r, p);
      std::vector<float> x(sim::scratch_reals, 0.0f), y = x, slice(std::size_t(3) * (reals > 0 ? reals : 1));
      const ph::data<float> dx = sim::bind(x.data()), dy = sim::bind(y.data());
      for (int t = 0; t < 24; ++t) {
        float ctrl[sim::nu];
        for (int u = 0; u < sim::nu; ++u) ctrl[u] = r.uniform(-1.0f, 1.0f);
        sim::start(dx, st.qpos, st.qvel, ctrl);
        sim::start(dy, st.qpos, st.qvel, ctrl);
        for (int sub = 0; sub < T::physics_substeps(p); ++sub)
          for (int k = 0; k < ph::step_stages; ++k) {
            ph::step_stage<sim::colliders>(k, p.model, dx);
            for (float& v : slice) v = nan;
            const ph::data<float> d = ph::stage_bind(k, s, dy, reals > 0 ? slice.data() : nullptr, 1, 3, reals);
            ph::step_stage<sim::colliders>(k, p.model, d);
            ph::stage_unbind(k, s, dy, d, reals);
            for (int j = 0; j < ph::stage_slot_count(k); ++j) {
              const ph::stage_slot sl = ph::stage_slot_at(k, j);
              if (reals == 0 || ph::stage_slot_offset(s, k, j, reals) < 0 || sl.in || sl.out) continue;
              ph::data<float> poisoned = dy;
              for (int e = 0; e < ph::data_field_length(s, sl.field); ++e) ph::data_member(poisoned, sl.field)[e] = nan;
            }
            for (int f = 0; f < field_count; ++f) {
              const auto field = static_cast<ph::data_field>(f);
              if (stage_scratch(field)) continue;
              ph::data<float> a = dx, b = dy;
              const int len = ph::data_field_length(s, field);
              differing += std::memcmp(&ph::data_member(a, field)[0], &ph::data_member(b, field)[0],
                                       std::size_t(len) * sizeof(float)) != 0;
            }
            for (std::size_t e = 0; e < slice.size(); ++e) other_lanes += e % 3 != 1 && !std::isnan(slice[e]);
            ++stages;
          }
        contacts += static_cast<long>(dx.ncon[0]);
        for (int q = 0; q < sim::nq; ++q) st.qpos[q] = dx.qpos[q];
        for (int q = 0; q < sim::nv; ++q) st.qvel[q] = dx.qvel[q];
        if (!sim::finite(st.qpos, sim::nq) || !sim::finite(st.qvel, sim::nv)) break;
      }
    }
  }
  CHECK(differing == 0);
  CHECK(other_lanes == 0);
  CHECK(contacts > 0);  // contact rows and the solve were in play
  MESSAGE(std::string(T::name) << ": " << stages << " stages compared, " << contacts
                               << " contacts; floats placed in slices of 111 / 255 / 1023, stages 0-3: "
                               << ph::stage_shared_used(s, 0, 111) << "," << ph::stage_shared_used(s, 1, 111) << ","
                               << ph::stage_shared_used(s, 2, 111) << "," << ph::stage_shared_used(s, 3, 111) << " / "
                               << ph::stage_shared_used(s, 0, 255) << "," << ph::stage_shared_used(s, 1, 255) << ","
                               << ph::stage_shared_used(s, 2, 255) << "," << ph::stage_shared_used(s, 3, 255) << " / "
                               << ph::stage_shared_used(s, 0, 1023) << "," << ph::stage_shared_used(s, 1, 1023) << ","
                               << ph::stage_shared_used(s, 2, 1023) << "," << ph::stage_shared_used(s, 3, 1023));
}

TEST_CASE("physics.stage_shared.slice_rules") {
  // The ant_v4 (nv 14, nM 81): stage 3's slots efc_col 14, qLDc 81, qfrc_constraint 14, qacc 14, efc_force 88, qM 81.
  const ph::model_sizes s = gmi::envs::ant_v4::sim::sizes_v;
  CHECK(ph::stage_shared_used(s, 3, 13) == 0);
  CHECK(ph::stage_shared_used(s, 3, 14) == 14);
  CHECK(ph::stage_slot_offset(s, 3, 1, 95) == 14);   // qLDc after efc_col
  CHECK(ph::stage_slot_offset(s, 3, 1, 94) == -1);   // too long: skipped ...
  CHECK(ph::stage_slot_offset(s, 3, 2, 94) == 14);   // ... and qfrc_constraint takes its place
  CHECK(ph::stage_shared_used(s, 3, 111) == 109);    // efc_col, qLDc, qfrc_constraint
  CHECK(ph::stage_shared_used(s, 3, 1023) == 14 + 81 + 14 + 14 + 88 + 81);
  CHECK(ph::stage_shared_used(s, 4, 1023) == 0);     // integration keeps none
  // Auto (-1): the largest slice that keeps n environments resident in one wave. An H200: 132 SMs, 233472 bytes an
  // SM, 232448 a block, 1024 reserved a block. 65536 in blocks of 64: 8 blocks an SM, (29184 - 1024) / 256 = 110.
  CHECK(ph::staged_slice_reals(-1, 65536, 64, 132, 233472, 232448, 1024) == 110);
  CHECK(ph::staged_slice_reals(-1, 16384, 64, 132, 233472, 232448, 1024) == 452);
  CHECK(ph::staged_slice_reals(-1, 1024, 64, 132, 233472, 232448, 1024) == 908);  // one block an SM: a block's most
  CHECK(ph::staged_slice_reals(-1, 64, 32, 132, 233472, 232448, 1024) == ph::max_staged_shared_reals);
  CHECK(ph::staged_slice_reals(255, 65536, 64, 132, 233472, 232448, 1024) == 255);  // asked: kept (two waves)
  CHECK(ph::staged_slice_reals(1023, 65536, 256, 132, 233472, 232448, 1024) == 227);  // cut to a block's most
  CHECK(ph::staged_slice_reals(0, 65536, 64, 132, 233472, 232448, 1024) == 0);
  CHECK_THROWS_AS(ph::request_staged_shared_reals(-2), gmi::config_error);
  CHECK_THROWS_AS(ph::request_staged_shared_reals(1024), gmi::config_error);
  ph::request_staged_shared_reals(-1);
  CHECK(ph::requested_staged_shared_reals() == -1);
  ph::request_staged_shared_reals(0);
  CHECK(ph::requested_staged_shared_reals() == 0);
}

}  // namespace

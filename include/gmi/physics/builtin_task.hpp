#pragma once
// What a task over a built-in model (a generated header of flat_model words) needs to run one environment:
// the table its params point into, and one control step of several physics steps in scratch memory that the
// caller owns (a local array: thread stack on the host, per-thread local memory on the device, where the
// hardware interleaves threads so that accesses coalesce). Only qpos and qvel live in the task's state; the
// scratch holds everything the pipeline computes and starts cold each control step (no warm start across
// control steps: every value the pipeline reads is written first, which tests/physics/tasks_test.cpp checks
// by filling the scratch with NaN).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/flat_model.hpp>
#include <gmi/physics/kinematics.hpp>
#include <gmi/physics/model.hpp>
#include <gmi/physics/step.hpp>

namespace gmi::physics {

namespace detail {
// Where each int array starts in a model's words (the int pool's order, flat_model.hpp).
struct int_field_offsets {
#define GMI_PHYSICS_OFFSET(name, width, count) std::size_t name = 0;
  GMI_PHYSICS_INT_FIELDS(GMI_PHYSICS_OFFSET)
#undef GMI_PHYSICS_OFFSET
};
[[nodiscard]] constexpr int_field_offsets int_offsets(const model_sizes& s) {
  int_field_offsets o{};
  std::size_t at = 0;
#define GMI_PHYSICS_OFFSET(name, width, count) \
  o.name = at;                                 \
  at += static_cast<std::size_t>(width) * static_cast<std::size_t>(s.count);
  GMI_PHYSICS_INT_FIELDS(GMI_PHYSICS_OFFSET)
#undef GMI_PHYSICS_OFFSET
  return o;
}

// The geom type pairs of built-in model M's pairs: the colliders its steps compile (all, for a type past 7).
template <class M>
[[nodiscard]] constexpr collider_set colliders_of() {
  constexpr model_sizes s = M::sizes();
  constexpr int_field_offsets o = int_offsets(s);
  collider_set c = 0;
  for (int p = 0; p < s.npair; ++p) {
    const int t1 = static_cast<int>(M::words[o.geom_type + M::words[o.pair_geom1 + p]]);
    const int t2 = static_cast<int>(M::words[o.geom_type + M::words[o.pair_geom2 + p]]);
    if (t1 < 0 || t1 > 7 || t2 < 0 || t2 > 7) return all_colliders;
    c |= collider_bit(t1, t2);
  }
  return c;
}
}  // namespace detail

template <class M>
struct builtin_sim {
  using model_type = M;
  static constexpr model_sizes sizes_v = M::sizes();
  static constexpr int nq = sizes_v.nq, nv = sizes_v.nv, nu = sizes_v.nu, nbody = sizes_v.nbody;
  static constexpr std::size_t scratch_reals = make_layout(M::sizes()).reals_per_env;
  // The colliders M's pairs need (collision.hpp): the only ones its steps compile.
  static constexpr collider_set colliders = detail::colliders_of<M>();

  // The words as the float table a gmi::env driver copies (to the device, for kernels).
  static std::vector<float> table() {
    std::vector<float> t(sizeof(M::words) / sizeof(M::words[0]));
    std::memcpy(t.data(), M::words, t.size() * 4);
    return t;
  }
  // A view into a table laid out as table() returns it, wherever it lives.
  static model_view<float> view(const float* t) { return view_of_words(M::sizes(), M::options(), t); }

  GMI_HD static data<float> bind(float* scratch) {
    constexpr data_layout l = make_layout(M::sizes());
    return data_of(l, scratch, 1, 0);
  }

  // A control step's inputs into d: the state, the controls, no applied forces, time 0, no rows to warm-start from.
  GMI_HD static void start(const data<float>& d, const float* qpos, const float* qvel, const float* ctrl) {
    for (int k = 0; k < nq; ++k) d.qpos[k] = qpos[k];
    for (int k = 0; k < nv; ++k) d.qvel[k] = qvel[k];
    for (int k = 0; k < nv; ++k) d.qfrc_applied[k] = 0.0f;
    for (int k = 0; k < nu; ++k) d.ctrl[k] = ctrl[k];
    d.time[0] = 0.0f;
    d.prev_nefc[0] = 0.0f;
  }

  // substeps physics steps from (qpos, qvel) under ctrl; qpos and qvel are updated in place and the scratch
  // keeps what the last step computed (its contacts, actuator forces, frames before its integration).
  GMI_HD static data<float> simulate(const model_view<float>& m, float* scratch, float* qpos, float* qvel,
                                     const float* ctrl, int substeps) {
    return simulate_in(m, bind(scratch), qpos, qvel, ctrl, substeps);
  }
  // The same in arrays bound elsewhere (thread_shared.hpp's bind_shared: some of them in shared memory).
  GMI_HD static data<float> simulate_in(const model_view<float>& m, const data<float>& d, float* qpos, float* qvel,
                                        const float* ctrl, int substeps) {
    start(d, qpos, qvel, ctrl);
    for (int s = 0; s < substeps; ++s) step<colliders>(m, d);
    for (int k = 0; k < nq; ++k) qpos[k] = d.qpos[k];
    for (int k = 0; k < nv; ++k) qvel[k] = d.qvel[k];
    return d;
  }

  // Body frames and centres of mass of qpos (in the scratch's xpos, xquat, xmat, xipos).
  GMI_HD static data<float> frames(const model_view<float>& m, float* scratch, const float* qpos) {
    const data<float> d = bind(scratch);
    for (int k = 0; k < nq; ++k) d.qpos[k] = qpos[k];
    kinematics(m, d);
    return d;
  }

  // Centre of mass of all bodies, x coordinate, from frames already in d.
  GMI_HD static float com_x(const model_view<float>& m, const data<float>& d) {
    float mx = 0.0f, mass = 0.0f;
    for (int b = 1; b < nbody; ++b) {
      mx += m.body_mass[b] * d.xipos[3 * b];
      mass += m.body_mass[b];
    }
    return mx / mass;
  }

  GMI_HD static bool finite(const float* a, int n) {
    bool ok = true;
    for (int k = 0; k < n; ++k) {
      // On the bits (exponent all ones: NaN or infinity), so fast-math flags can not fold the check away.
      std::uint32_t b;
      std::memcpy(&b, &a[k], 4);
      ok = ok && (b & 0x7f800000u) != 0x7f800000u;
    }
    return ok;
  }
};

}  // namespace gmi::physics

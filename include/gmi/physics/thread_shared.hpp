#pragma once
// The thread-per-environment step with its hottest arrays in shared memory (issue 35; docs/physics.md, "The thread
// path's hot arrays in shared memory"). On the device a thread's pipeline arrays are local memory: 16 to 37 KB a
// thread, far beyond what L1 and L2 hold at 512 threads an SM, so most accesses wait on device memory. The arrays
// are not touched alike (gmi.tool.physics_traffic: a few small ones take a third to a half of the accesses), so
// bind_shared puts the most-read small arrays, in a fixed order, into a slice of `reals` floats of a block's shared
// memory (one slice a thread, contiguous, an odd length so that a warp reading word k of each slice hits 32
// different banks) while they fit, and leaves the rest in the thread's scratch. The final factor reuses the
// constraint solve's (qLD in qLDc's place: nothing reads qLDc after the final factor until the next step writes it
// again), so the two hottest arrays share one slot. Only where the arrays live changes, not the arithmetic:
// physics.thread_shared.* (host) checks bit-identical steps for every slice size.
//
// request_thread_shared_reals asks the env driver's thread path (rl/env_batch.cuh) for slices of that many floats;
// 0 (the default until measured faster) keeps the plain thread kernel.

#include <cstddef>
#include <string>
#include <string_view>

#include <gmi/core/error.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics {

// The most floats a thread's slice may have (a block of 128 threads then needs 128 KB of shared memory).
inline constexpr int max_thread_shared_reals = 255;

// The slice length a request of `reals` floats becomes: odd (bank-conflict free), at most max_thread_shared_reals,
// 0 for 0.
[[nodiscard]] GMI_HD constexpr int thread_shared_slice(int reals) {
  return reals <= 0 ? 0 : (reals > max_thread_shared_reals ? max_thread_shared_reals : reals | 1);
}

// The hot arrays in the order they are placed, by accesses per float over 300 env steps of each task
// (gmi.tool.physics_traffic; the counts are in the doc; qLDc with qLD's accesses, as they share it): their number,
// the length of the k-th and its member.
inline constexpr int thread_shared_fields = 13;
[[nodiscard]] GMI_HD constexpr int thread_shared_length(const model_sizes& s, int k) {
  switch (k) {
    case 0: return s.nv;           // efc_col
    case 1: return 1;              // nefc
    case 2: return 1;              // ncon
    case 3: return s.nM;           // qLDc (and qLD)
    case 4: return s.nv;           // qacc
    case 5: return s.nv;           // qfrc_constraint
    case 6: return 6 * s.nv;       // cdof
    case 7: return s.nv;           // qvel
    case 8: return 3 * s.nbody;    // xpos
    case 9: return 6 * s.nbody;    // cfrc
    case 10: return s.nq;          // qpos
    case 11: return s.nefc_max;    // efc_force
    default: return 3 * s.ngeom;   // geom_xpos
  }
}
template <class T>
[[nodiscard]] GMI_HD strided<T>& thread_shared_member(data<T>& d, int k) {
  switch (k) {
    case 0: return d.efc_col;
    case 1: return d.nefc;
    case 2: return d.ncon;
    case 3: return d.qLDc;
    case 4: return d.qacc;
    case 5: return d.qfrc_constraint;
    case 6: return d.cdof;
    case 7: return d.qvel;
    case 8: return d.xpos;
    case 9: return d.cfrc;
    case 10: return d.qpos;
    case 11: return d.efc_force;
    default: return d.geom_xpos;
  }
}

// The floats of a slice of `reals` that bind_shared fills for sizes s: the hot arrays in order, each while it fits
// (one that does not is skipped, a later smaller one may still fit). A kernel's slice need not be longer.
[[nodiscard]] GMI_HD constexpr int thread_shared_used(const model_sizes& s, int reals) {
  int at = 0;
  for (int k = 0; k < thread_shared_fields; ++k) {
    const int len = thread_shared_length(s, k);
    if (at + len <= reals) at += len;
  }
  return at;
}

// Binds model size s's arrays: the hot ones in hot[0, thread_shared_used(s, reals)) as that function places them,
// the others in scratch (laid out as make_layout(s): reals_per_env floats); qLD shares qLDc's slot, wherever it is.
template <class T>
GMI_HD data<T> bind_shared(const model_sizes& s, T* scratch, T* hot, int reals) {
  data<T> d = data_of(make_layout(s), scratch, 1, 0);
  int at = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int k = 0; hot && k < thread_shared_fields; ++k) {
    const int len = thread_shared_length(s, k);
    if (at + len <= reals) {
      thread_shared_member(d, k) = strided<T>{hot + at, 1};
      at += len;
    }
  }
  d.qLD = d.qLDc;
  return d;
}

namespace detail {
inline int& requested_thread_shared_reals() {
  static int r = 0;
  return r;
}
}  // namespace detail

// Asks every physics env batch stepped on a GPU with a thread per environment from now on in this process for a
// shared slice of `reals` floats a thread (0: none, the plain kernel). Throws config_error outside [0, 255].
inline void request_thread_shared_reals(int reals, std::string_view what = "--thread-shared-reals") {
  if (reals < 0 || reals > max_thread_shared_reals)
    throw gmi::config_error(gmi::got_need(std::string(what), reals, "0 to 255"));
  detail::requested_thread_shared_reals() = reals;
}
[[nodiscard]] inline int requested_thread_shared_reals() { return detail::requested_thread_shared_reals(); }

namespace detail {
inline bool& requested_thread_max_l1() {
  static bool r = false;
  return r;
}
}  // namespace detail

// Asks the plain thread kernel (no slice) for the largest L1 (its preferred shared-memory carveout 0; false: the
// driver's default, which may keep a carveout another kernel needed): every access that misses registers goes to L1
// first. No arithmetic changes.
inline void request_thread_max_l1(bool on) { detail::requested_thread_max_l1() = on; }
[[nodiscard]] inline bool requested_thread_max_l1() { return detail::requested_thread_max_l1(); }

}  // namespace gmi::physics

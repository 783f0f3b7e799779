#pragma once
// A stage of the staged step (step.hpp's step_stage; rl/physics_staged_step.cuh runs each as a kernel with a thread
// per environment) with its hottest arrays in a slice of shared memory (docs/physics.md, "The staged step's shared
// slices"). The staged kernels keep the pipeline's arrays in global memory between stages; within a stage, a thread
// reads and writes a few small arrays many times in a dependent chain (the solve's factor and constrained
// acceleration, the positions' dof motions), and those accesses mostly miss L1 and L2. A stage kernel holds no
// other per-thread arrays, and at 16384 to 65536 environments the environments, not registers or shared memory, bound
// the threads an SM holds, so a slice costs no occupancy as long as it fits beside them (the thread path's slices
// did: thread_shared.hpp). stage_bind puts stage k's hot arrays, in a fixed order, into the slice while they fit and
// copies in those the stage reads before it writes; stage_unbind copies out those a later pass reads. Arrays that
// live only within the stage (its scratch: the solve's factors and efc_col, the bias forces' cfrc) are neither copied
// in nor out. Only where the arrays live changes, not the arithmetic: physics.stage_shared.* (host) checks every
// stage bit-identical to the plain one for slices of 0 to 1023 floats.

#include <cstddef>
#include <string>
#include <string_view>

#include <gmi/core/error.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics {

// data<T>'s arrays by name, their lengths and members (from GMI_PHYSICS_DATA_FIELDS).
enum class data_field : int {
#define GMI_PHYSICS_FIELD_ENUM(name, len) name,
  GMI_PHYSICS_DATA_FIELDS(GMI_PHYSICS_FIELD_ENUM)
#undef GMI_PHYSICS_FIELD_ENUM
};
[[nodiscard]] GMI_HD constexpr int data_field_length(const model_sizes& s, data_field f) {
  switch (f) {
#define GMI_PHYSICS_FIELD_LENGTH(name, len) \
  case data_field::name: return static_cast<int>(len);
    GMI_PHYSICS_DATA_FIELDS(GMI_PHYSICS_FIELD_LENGTH)
#undef GMI_PHYSICS_FIELD_LENGTH
  }
  return 0;
}
template <class T>
[[nodiscard]] GMI_HD strided<T>& data_member(data<T>& d, data_field f) {
  switch (f) {
#define GMI_PHYSICS_FIELD_MEMBER(name, len) \
  case data_field::name: return d.name;
    GMI_PHYSICS_DATA_FIELDS(GMI_PHYSICS_FIELD_MEMBER)
#undef GMI_PHYSICS_FIELD_MEMBER
  }
  return d.qpos;
}

// One array of a stage's slice: copied in before the stage (it reads values an earlier pass wrote) and out after it
// (a later pass reads what it wrote); neither: the stage's own scratch. qLDc's slot also holds qLD (stage 3 writes
// each before it reads it, and nothing after stage 3 reads either).
struct stage_slot {
  data_field field;
  bool in, out;
};

// The slots of stage k in the order they are placed: by accesses per float within the stage
// (gmi.tool.physics_traffic's counts split by stage, ant_v4, humanoid_v4 and anymal alike), the copies counted against it.
inline constexpr int stage_slots_max = 10;
[[nodiscard]] GMI_HD constexpr int stage_slot_count(int k) {
  return k == 0 ? 10 : k == 1 ? 5 : k == 2 ? 7 : k == 3 ? 6 : 0;
}
[[nodiscard]] GMI_HD constexpr stage_slot stage_slot_at(int k, int j) {
  using f = data_field;
  constexpr stage_slot none{f::qpos, false, false};
  if (k == 0) {  // positions: frames, inertias, mass matrix (all written whole; crb only here)
    constexpr stage_slot s[10] = {{f::cdof, false, true},    {f::crb, false, false},  {f::xpos, false, true},
                                  {f::xmat, false, true},    {f::cinert, false, true}, {f::xanchor, false, true},
                                  {f::xquat, false, true},   {f::xipos, false, true}, {f::xaxis, false, true},
                                  {f::qM, false, true}};
    return j < 10 ? s[j] : none;
  }
  if (k == 1) {  // collision: the geom frames (written first, read only here) and the body frames it reads
    constexpr stage_slot s[5] = {{f::geom_xpos, false, false}, {f::geom_xmat, false, false}, {f::xmat, true, false},
                                 {f::xquat, true, false},      {f::xpos, true, false}};
    return j < 5 ? s[j] : none;
  }
  if (k == 2) {  // forces and rows: the recursive Newton-Euler passes' arrays (read only here) and what it reads
    constexpr stage_slot s[7] = {{f::cfrc, false, false},     {f::qvel, true, false},  {f::cdof, true, false},
                                 {f::cvel, false, false},     {f::cdof_dot, false, false}, {f::cacc, false, false},
                                 {f::cinert, true, false}};
    return j < 7 ? s[j] : none;
  }
  if (k == 3) {  // solve: efc_col and both factors are its scratch
    constexpr stage_slot s[6] = {{f::efc_col, false, false},
                                 {f::qLDc, false, false},
                                 {f::qfrc_constraint, false, true},
                                 {f::qacc, true, true},
                                 {f::efc_force, true, true},
                                 {f::qM, true, false}};
    return j < 6 ? s[j] : none;
  }
  return none;  // integration: a few accesses a float, nothing to gain
}

// Where slot j of stage k starts in a slice of `reals` floats for sizes s, or -1 where it is not placed: the slots go
// in order, each while it fits (one that does not is skipped, a later shorter one may still fit).
[[nodiscard]] GMI_HD constexpr int stage_slot_offset(const model_sizes& s, int k, int j, int reals) {
  int at = 0;
  for (int q = 0; q < j; ++q) {
    const int len = data_field_length(s, stage_slot_at(k, q).field);
    if (at + len <= reals) at += len;
  }
  return at + data_field_length(s, stage_slot_at(k, j).field) <= reals ? at : -1;
}

// The floats of a slice of `reals` that stage k's arrays take for sizes s. A kernel's slice need not be longer.
[[nodiscard]] GMI_HD constexpr int stage_shared_used(const model_sizes& s, int k, int reals) {
  int used = 0;
  for (int j = 0; j < stage_slot_count(k); ++j) {
    const int at = stage_slot_offset(s, k, j, reals);
    if (at >= 0) used = at + data_field_length(s, stage_slot_at(k, j).field);
  }
  return used;
}

// Calls f(slot, offset) for each slot of stage k placed in a slice of `reals` floats for sizes s, in order.
template <class F>
GMI_HD void for_each_placed(int k, const model_sizes& s, int reals, F&& f) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j < stage_slots_max; ++j) {
    if (j >= stage_slot_count(k)) break;
    const int at = stage_slot_offset(s, k, j, reals);
    if (at >= 0) f(stage_slot_at(k, j), at);
  }
}

// Stage k's arrays of one environment: g's, with the slots that fit in `reals` floats of the slice moved to `slice`
// (lane `lane` of `lanes`: element e of a slot at slice[(offset + e) * lanes + lane], so a warp's accesses to one
// element hit 32 banks), the in slots copied from g. No slice (null): g's.
template <class T>
GMI_HD data<T> stage_bind(int k, const model_sizes& s, const data<T>& g, T* slice, int lane, int lanes, int reals) {
  data<T> d = g, from = g;
  if (!slice) return d;
  for_each_placed(k, s, reals, [&](const stage_slot& sl, int at) {
    strided<T>& member = data_member(d, sl.field);
    member = strided<T>{slice + static_cast<std::size_t>(at) * lanes + lane, lanes};
    if (sl.in)
      for (int e = 0; e < data_field_length(s, sl.field); ++e) member[e] = data_member(from, sl.field)[e];
    if (sl.field == data_field::qLDc) d.qLD = member;
  });
  return d;
}

// After stage k ran on d (stage_bind's over g with the same reals): the out slots back into g.
template <class T>
GMI_HD void stage_unbind(int k, const model_sizes& s, const data<T>& g, data<T> d, int reals) {
  data<T> to = g;
  for_each_placed(k, s, reals, [&](const stage_slot& sl, int) {
    if (!sl.out) return;
    const strided<T> a = data_member(d, sl.field), b = data_member(to, sl.field);
    for (int e = 0; e < data_field_length(s, sl.field); ++e) b[e] = a[e];
  });
}

// The most floats a staged kernel's slice may have a thread (blocks of 64 then take 256 KB: more than an SM has; the
// launcher cuts a slice to what one block can have).
inline constexpr int max_staged_shared_reals = 1023;

namespace detail {
inline int& requested_staged_shared_reals() {
  static int r = 0;
  return r;
}
}  // namespace detail

// Asks the staged path's stage kernels in this process for slices of up to `reals` floats a thread (0: none, the
// plain stage kernels; -1: auto, the most that still lets every environment of the batch be resident at once,
// rl/physics_staged_step.cuh). Throws config_error outside [-1, 1023].
inline void request_staged_shared_reals(int reals, std::string_view what = "--staged-shared-reals") {
  if (reals < -1 || reals > max_staged_shared_reals)
    throw gmi::config_error(gmi::got_need(std::string(what), reals, "-1 (auto) or 0 to 1023"));
  detail::requested_staged_shared_reals() = reals;
}
[[nodiscard]] inline int requested_staged_shared_reals() { return detail::requested_staged_shared_reals(); }

// The slice a thread gets for `reals` asked (-1: auto) when n environments run in blocks of `block` on `sms`
// multiprocessors of `smem_per_sm` bytes of shared memory each (reserving `reserved_per_block` bytes a block), a
// block at most `smem_per_block` bytes: with auto, the largest slice that keeps all n environments resident in one
// wave (the blocks an SM must hold: ceil(ceil(n / block) / sms)); never more than a block may have.
[[nodiscard]] constexpr int staged_slice_reals(int reals, std::size_t n, int block, int sms, std::size_t smem_per_sm,
                                               std::size_t smem_per_block, std::size_t reserved_per_block) {
  if (reals == 0 || n == 0 || block <= 0 || sms <= 0) return 0;
  const std::size_t per_block_max = smem_per_block / (static_cast<std::size_t>(block) * sizeof(float));
  std::size_t r = reals > 0 ? static_cast<std::size_t>(reals) : per_block_max;
  if (reals < 0) {
    const std::size_t blocks = (n + static_cast<std::size_t>(block) - 1) / static_cast<std::size_t>(block);
    const std::size_t per_sm = (blocks + static_cast<std::size_t>(sms) - 1) / static_cast<std::size_t>(sms);
    const std::size_t room = smem_per_sm / per_sm;
    const std::size_t fit = room > reserved_per_block
                                ? (room - reserved_per_block) / (static_cast<std::size_t>(block) * sizeof(float))
                                : 0;
    const std::size_t most = static_cast<std::size_t>(max_staged_shared_reals);
    r = fit < most ? fit : most;
  }
  return static_cast<int>(r < per_block_max ? r : per_block_max);
}

}  // namespace gmi::physics

#pragma once
// The replay algorithms as per-element functions that host loops and CUDA kernels both run, so the host
// backend (CI, the CPU-staged baseline) and the device backend draw and gather the same items bit for bit.

#include <cstdint>
#include <cstring>

#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>

namespace gmi::replay::detail {

// Where one column's words live: slots below split in dev, the rest in host (mapped pinned memory on devices).
struct column_ref {
  std::uint32_t* dev = nullptr;
  std::uint32_t* host = nullptr;
  std::uint32_t width = 0;
};

struct table_ref {
  column_ref cols[16];
  int num_cols = 0;
  std::int64_t split = 0;     // slots [0, split) in dev
  std::int32_t capacity = 0;
  std::int64_t* traj = nullptr;   // trajectory id per slot, -1 when empty
  std::int32_t* step = nullptr;   // step of the trajectory
  std::int32_t* next = nullptr;   // slot of the trajectory's next step, -1 if none (yet)
  std::uint64_t* seq = nullptr;   // insertion order, 1-based; 0 when empty
  double* prio_tree = nullptr;    // sum-tree of p^exponent, leaves at [leaves, leaves + capacity)
  double* size_tree = nullptr;    // sum-tree of 1 per present item (uniform draws)
  std::int64_t leaves = 0;        // power of two >= capacity
  int done_col = -1;

  GMI_HD std::uint32_t* row(int c, std::int64_t slot) const {
    const column_ref& r = cols[c];
    return slot < split ? r.dev + slot * r.width : r.host + (slot - split) * r.width;
  }
};

GMI_HD inline std::int64_t tree_leaves_for(std::int64_t capacity) {
  std::int64_t p = 1;
  while (p < capacity) p <<= 1;
  return p;
}

// A double in [0, 1) from 53 random bits of draw b's own Philox stream.
GMI_HD inline double unit_draw(std::uint64_t seed, std::uint64_t b) {
  gmi::rng r(seed, b);
  const std::uint32_t hi = r.next_u32() >> 5, lo = r.next_u32() >> 6;
  return (static_cast<double>(hi) * 67108864.0 + static_cast<double>(lo)) * 0x1p-53;
}

// Descends the sum-tree to the leaf whose prefix range holds u * total; never returns a zero-weight leaf while
// the total is positive (rounding at a boundary goes to the side with weight). Returns the slot, -1 if empty.
GMI_HD inline std::int32_t tree_draw(const double* tree, std::int64_t leaves, double u) {
  const double total = tree[1];
  if (!(total > 0.0)) return -1;
  double target = u * total;
  std::int64_t node = 1;
  while (node < leaves) {
    const double left = tree[2 * node], right = tree[2 * node + 1];
    if ((target < left && left > 0.0) || !(right > 0.0)) {
      node = 2 * node;
    } else {
      target -= left;
      node = 2 * node + 1;
    }
  }
  return static_cast<std::int32_t>(node - leaves);
}

// Ordered samplers rank every slot by a key, highest first; 0 marks an empty slot.
GMI_HD inline std::uint32_t orderable(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// kind: 2 fifo, 3 lifo, 4 top_k (sampler_kind values); score_col used by top_k.
GMI_HD inline std::uint64_t order_key(const table_ref& t, int kind, int score_col, std::int32_t slot) {
  const std::uint64_t s = t.seq[slot];
  if (s == 0) return 0;
  if (kind == 2) return ~s;  // oldest first
  if (kind == 3) return s;   // newest first
  float score;
  std::memcpy(&score, t.row(score_col, slot), 4);
  // Ties in score go to the newer item (the low 32 bits hold the insertion order's low bits).
  return (static_cast<std::uint64_t>(orderable(score)) << 32) | (s & 0xFFFFFFFFu) | 1u;
}

// Step i of the window that starts at slot start: the slot holding step step[start] + i of the same
// trajectory, found by following next links; -1 past the trajectory's end (padding) or where it was evicted.
// Steps of a trajectory written by one insert sit in consecutive slots, so start + i is tried first.
GMI_HD inline std::int32_t window_slot_contiguous(const table_ref& t, std::int32_t start, std::int32_t i) {
  std::int64_t s = static_cast<std::int64_t>(start) + i;
  if (s >= t.capacity) s -= t.capacity;
  const auto slot = static_cast<std::int32_t>(s);
  return (t.traj[slot] == t.traj[start] && t.step[slot] == t.step[start] + i) ? slot : -1;
}

// Follows next links from the window's step `from` (a valid slot) and fills out[from + 1 .. length).
GMI_HD inline void window_follow(const table_ref& t, std::int32_t start, std::int32_t from, std::int32_t from_slot,
                                 std::int32_t length, std::int32_t* out) {
  const std::int64_t traj = t.traj[start];
  const std::int32_t step0 = t.step[start];
  std::int32_t slot = from_slot;
  for (std::int32_t i = from + 1; i < length; ++i) {
    const std::int32_t nx = slot < 0 ? -1 : t.next[slot];
    slot = (nx >= 0 && t.traj[nx] == traj && t.step[nx] == step0 + i) ? nx : -1;
    out[i] = slot;
  }
}

// Trajectory bookkeeping of one env over one insert (steps [0, horizon) of env e, slot of step t = slot_of(t)).
// state: the env's open trajectory id and next step number; link_from: the slot of the env's previous step if
// it still holds it, else -1. Writes traj/step/next/seq for the new slots.
template <class SlotOf, class DoneOf>
GMI_HD void insert_env_meta(const table_ref& t, std::int64_t& traj_state, std::int32_t& step_state,
                            std::int64_t& episodes, std::int64_t traj_base, std::int64_t envs, std::int64_t e,
                            std::int32_t link_from, std::int32_t horizon, std::uint64_t seq_base, SlotOf slot_of,
                            DoneOf done_of) {
  std::int32_t prev = link_from;
  for (std::int32_t k = 0; k < horizon; ++k) {
    const std::int32_t slot = slot_of(k);
    if (step_state == 0) {  // a new trajectory: the env's episode count makes its id unique within the writer
      traj_state = traj_base + episodes * envs + e;
      ++episodes;
      prev = -1;
    }
    t.traj[slot] = traj_state;
    t.step[slot] = step_state;
    t.next[slot] = -1;
    t.seq[slot] = seq_base + static_cast<std::uint64_t>(e * horizon + k) + 1;
    if (prev >= 0) t.next[prev] = slot;
    prev = slot;
    ++step_state;
    if (done_of(k)) step_state = 0;
  }
}

}  // namespace gmi::replay::detail

namespace gmi::replay::detail {

// Recomputes node from its children; a batch of leaf changes is settled by refreshing every changed leaf's
// ancestors level by level (or leaf by leaf on the host): each node ends as left + right, in any order.
GMI_HD inline void tree_refresh(double* tree, std::int64_t node) { tree[node] = tree[2 * node] + tree[2 * node + 1]; }

// The prioritized draw's probability of slot: its leaf over the total.
GMI_HD inline double tree_probability(const double* tree, std::int64_t leaves, std::int32_t slot) {
  return slot < 0 ? 0.0 : tree[leaves + slot] / tree[1];
}

}  // namespace gmi::replay::detail

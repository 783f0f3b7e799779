#pragma once
// The stages of step.hpp spread over a tile of lanes (8, 16 or 32 consecutive lanes of a warp step one
// environment; batch_warp.cuh's kernels and rl/physics_env_step.cuh run them). Tree stages a depth of the tree at
// a time (frames, velocities and bias forces down, subtree inertias and forces up), body inertias, dof motions,
// mass-matrix rows, dof, joint and actuator forces, limit rows (lane per item), geom frames and collision (lane per
// geom pair, two passes and a scan keep the serial contact order), contact rows (lane per contact), the
// factorizations (a lane per ancestor of each dof) and solves, the rows' responses M^-1 J' and block couplings
// (lane per row), the warm start, and inside every Gauss-Seidel block the row gradients (8 lanes a row, as many
// rows at once as the tile holds), the four-variable QP (the 15 active sets over the lanes) and the update of
// J M^-1 f (lane per dof). Items past the tile's width wrap round (lane, lane + width, ...); each item's arithmetic
// is the serial one in the serial order, so every width gives the thread-per-env step (step.hpp) up to the
// compiler's contractions. Shuffles and barriers name only the tile's lanes, so the tiles of one warp may diverge
// (one environment's solver sweeps longer than its neighbour's). Needs nvcc.

#include <gmi/physics/builtin_task.hpp>
#include <gmi/physics/constraints.hpp>
#include <gmi/physics/detail/small_qp.hpp>
#include <gmi/physics/step.hpp>

namespace gmi::physics::detail {
constexpr unsigned full_warp = 0xffffffffu;

// The lanes that step one environment: `width` consecutive lanes of a warp (8, 16 or 32), this thread's index among
// them, and their mask within the warp.
struct tile {
  int lane = 0;
  int width = 32;
  unsigned mask = full_warp;
  __device__ void sync() const { __syncwarp(mask); }
  template <class V>
  __device__ V shfl(V v, int src) const { return __shfl_sync(mask, v, src, width); }
  template <class V>
  __device__ V shfl_xor(V v, int o) const { return __shfl_xor_sync(mask, v, o, width); }
  template <class V>
  __device__ V shfl_up(V v, int o) const { return __shfl_up_sync(mask, v, o, width); }
  __device__ bool any(bool p) const { return __any_sync(mask, p) != 0; }
};

// The tile of `width` lanes this thread belongs to (width divides 32; threads of a block in whole warps).
__device__ inline tile this_tile(int width) {
  const int l = static_cast<int>(threadIdx.x & 31u);
  tile t;
  t.width = width;
  t.lane = l % width;
  t.mask = width == 32 ? full_warp : ((1u << width) - 1u) << (l - t.lane);
  return t;
}

// Inclusive prefix sum over the tile's lanes.
__device__ inline int tile_inclusive_sum(int x, const tile& t) {
  for (int o = 1; o < t.width; o <<= 1) {
    const int y = t.shfl_up(x, o);
    if (t.lane >= o) x += y;
  }
  return x;
}

__device__ inline int tile_sum(int x, const tile& t) {
  for (int o = t.width / 2; o > 0; o >>= 1) x += t.shfl_xor(x, o);
  return x;
}

__device__ inline int tile_max(int x, const tile& t) {
  for (int o = t.width / 2; o > 0; o >>= 1) {
    const int y = t.shfl_xor(x, o);
    x = y > x ? y : x;
  }
  return x;
}

// Geom frames and contacts: lane per geom, then lane per pair. Pass one counts each pair's contacts, a scan gives
// each pair its first slot, pass two writes; contacts past the capacity are dropped as the serial collide drops.
template <collider_set C>
__device__ inline void tile_collide(const model_view<float>& m, const data<float>& d, const tile& t) {
  for (int g = t.lane; g < m.size.ngeom; g += t.width) geom_frames(m, d, g);
  t.sync();
  const int cap = m.size.ncon_max;
  int base = 0;
  for (int p0 = 0; p0 < m.size.npair; p0 += t.width) {
    const int p = p0 + t.lane;
    int count = 0;
    if (p < m.size.npair) {
      slot_sink<float> counter{nullptr, cap, p, 0};
      collide_pair<C>(m, d, p, counter);
      count = counter.added;
    }
    const int incl = tile_inclusive_sum(count, t);
    const int first = base + incl - count;
    if (count > 0 && first < cap) {
      slot_sink<float> writer{&d, cap, p, first};
      collide_pair<C>(m, d, p, writer);
    }
    base += t.shfl(incl, t.width - 1);
  }
  if (t.lane == 0) d.ncon[0] = float(base < cap ? base : cap);
  t.sync();
}

// Contact rows after the limit rows: lane per contact, row offsets by a scan; a contact whose rows pass nefc_max
// and every later one are dropped (the serial loop stops there).
__device__ inline void tile_contact_rows(const model_view<float>& m, const data<float>& d, const tile& t) {
  const int ncon = static_cast<int>(d.ncon[0]);
  int base = static_cast<int>(d.nefc[0]), kept = 0;
  for (int c0 = 0; c0 < ncon; c0 += t.width) {
    const int c = c0 + t.lane;
    const int p = c < ncon ? static_cast<int>(d.con_pair[c]) : 0;
    const int rows = c < ncon ? (m.pair_condim[p] == 1 ? 1 : 4) : 0;
    const int incl = tile_inclusive_sum(rows, t);
    const int r0 = base + incl - rows;
    const bool fits = c < ncon && r0 + rows <= m.size.nefc_max;
    if (fits) {
      int nth = 0;  // index among the pair's contacts (consecutive)
      while (c - nth - 1 >= 0 && static_cast<int>(d.con_pair[c - nth - 1]) == p) ++nth;
      contact_rows(m, d, c, r0, nth);
    }
    kept += tile_sum(fits ? rows : 0, t);
    base += t.shfl(incl, t.width - 1);
  }
  t.sync();
  if (t.lane == 0) d.nefc[0] = d.nefc[0] + float(kept);
  t.sync();
}

// The block QP of constraints.hpp's sweep: the 15 active sets (masks 1..15) over the lanes (a lane takes masks
// lane + 1, lane + 1 + width, ...), each lane's best by the serial preference, then the tile's best; every lane
// returns x.
__device__ inline void tile_block_qp(const float* h, const float* c, float* x, const tile& t) {
  int best_idx[4] = {0, 0, 0, 0}, best_k = 0;
  float best_y[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  // The serial loop keeps the first mask of least objective below 0 (that of x = 0).
  float best = 0.0f;
  int who = 0;
  for (int mask = t.lane + 1; mask < 16; mask += t.width) {
    int idx[4], k = 0;
    float y[4], objective = 0.0f;
    const bool ok = qp_candidate(4, h, c, mask, idx, k, y, objective);
    if (ok && objective < 0.0f && qp_prefer(objective, mask, best, who)) {
      best = objective;
      who = mask;
      best_k = k;
      for (int r = 0; r < 4; ++r) {
        best_idx[r] = idx[r];
        best_y[r] = y[r];
      }
    }
  }
  const int mine_who = who;
  for (int o = t.width / 2; o > 0; o >>= 1) {
    const float ob = t.shfl_xor(best, o);
    const int ow = t.shfl_xor(who, o);
    if (qp_prefer(ob, ow, best, who)) {
      best = ob;
      who = ow;
    }
  }
  float mine[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (who != 0 && mine_who == who) {
    for (int r = 0; r < best_k; ++r) mine[best_idx[r]] = best_y[r];
  }
  const int src = who == 0 ? 0 : (who - 1) % t.width;
  for (int i = 0; i < 4; ++i) {
    const float v = t.shfl(mine[i], src);
    x[i] = who == 0 ? 0.0f : v;
  }
}

// The gradients g[0..size) of the block of rows r.. (size 1 or 4): 8 lanes a row, width / 8 rows at once, each
// row's J . efc_col summed as row_times_col sums it.
__device__ inline void tile_block_gradient(const model_view<float>& m, const data<float>& d, int r, int size,
                                           float* g, const tile& t) {
  const int per = t.width / row_dot_lanes;  // rows at once
  const int mine = t.lane / row_dot_lanes;
  for (int b = 0; b < 4; ++b) g[b] = 0.0f;
  for (int b0 = 0; b0 < size; b0 += per) {
    const int row = b0 + mine;
    float part = row < size ? row_partial(m, d, r + row, t.lane % row_dot_lanes) : 0.0f;
    for (int o = row_dot_lanes / 2; o > 0; o >>= 1) part += t.shfl_xor(part, o);
    const float gb =
        row < size ? (d.efc_R[r + row] * d.efc_force[r + row] - d.efc_aref[r + row]) + part : 0.0f;
    for (int b = 0; b < per; ++b) {
      const float v = t.shfl(gb, row_dot_lanes * b);
      if (b0 + b < 4) g[b0 + b] = v;
    }
  }
}

// constraints.hpp's solve_constraints over the tile: the same rows, forces and sweeps.
__device__ inline void tile_solve_constraints(const model_view<float>& m, const data<float>& d,
                                              strided<float> qacc_smooth, const tile& t) {
  const int nv = m.size.nv, lane = t.lane, w = t.width;
  const int nefc = static_cast<int>(d.nefc[0]);
  for (int r = lane; r < nefc; r += w) row_response(m, d, r);
  t.sync();
  const int np = static_cast<int>(d.prev_nefc[0]);
  for (int r = lane; r < nefc; r += w) {
    if (d.efc_block[r] == 4.0f) block_couplings(m, d, r);
    d.efc_force[r] = warm_force(d, r, np);
  }
  t.sync();
  for (int i = lane; i < nv; i += w) {
    float col = qacc_smooth[i];
    for (int r = 0; r < nefc; ++r) {
      const float f = d.efc_force[r];
      if (f != 0.0f) col += f * d.efc_W[r * nv + i];
    }
    d.efc_col[i] = col;
  }
  t.sync();
  int sweeps = 0;
  for (int it = 0; it < m.iterations && nefc > 0; ++it) {
    ++sweeps;
    float change = 0.0f, scale = 0.0f;
    for (int r = 0; r < nefc;) {
      const int size = d.efc_block[r] == 4.0f ? 4 : 1;
      float g[4], f[4], x[4];
      tile_block_gradient(m, d, r, size, g, t);
      for (int b = 0; b < 4; ++b) f[b] = b < size ? d.efc_force[r + b] : 0.0f;
      if (size == 1) {
        x[0] = f[0] - g[0] / d.efc_AR[r];
        x[0] = x[0] > 0.0f ? x[0] : 0.0f;
      } else {
        float h[16], c[4];
        for (int i = 0; i < 4; ++i) {
          c[i] = g[i];
          for (int j = 0; j < 4; ++j) h[4 * i + j] = d.efc_A4[4 * r + 4 * i + j] + (i == j ? d.efc_R[r + i] : 0.0f);
        }
        for (int i = 0; i < 4; ++i) {
          for (int j = 0; j < 4; ++j) c[i] -= h[4 * i + j] * f[j];
        }
        tile_block_qp(h, c, x, t);
      }
      t.sync();  // every lane has read the forces and J M^-1 f before they change
      for (int b = 0; b < size; ++b) {
        const float delta = x[b] - f[b];
        if (delta != 0.0f) {
          for (int i = lane; i < nv; i += w) d.efc_col[i] += delta * d.efc_W[(r + b) * nv + i];
          if (lane == 0) d.efc_force[r + b] = x[b];
        }
        change = fabsf(delta) > change ? fabsf(delta) : change;
        scale = x[b] > scale ? x[b] : scale;
      }
      t.sync();
      r += size;
    }
    if (change <= m.tolerance * (1.0f + scale)) break;
  }
  for (int r = lane; r < nefc; r += w) {
    d.prev_key[r] = d.efc_key[r];
    d.prev_force[r] = d.efc_force[r];
  }
  for (int i = lane; i < nv; i += w) {
    float q = 0.0f;
    for (int r = 0; r < nefc; ++r) q += d.efc_J[r * nv + i] * d.efc_force[r];
    d.qfrc_constraint[i] = q;
  }
  t.sync();
  if (lane == 0) {
    d.solver_sweeps[0] = float(sweeps);
    d.prev_nefc[0] = float(nefc);
  }
  t.sync();
}

// Each lane's bodies' depths (bodies 1 + lane and 1 + width + lane; deeper indices are walked when asked) and the
// deepest, so tree passes run a depth at a time with a lane per body.
struct tree_levels {
  int levels = 0, depth0 = 0, depth1 = 0;
};

__device__ inline tree_levels tile_tree_levels(const model_view<float>& m, const tile& t) {
  tree_levels lv;
  int deepest = 0;
  for (int b = 1 + t.lane; b < m.size.nbody; b += t.width) {
    const int depth = body_depth(m, b);
    if (b == 1 + t.lane) lv.depth0 = depth;
    if (b == 1 + t.width + t.lane) lv.depth1 = depth;
    deepest = depth > deepest ? depth : deepest;
  }
  lv.levels = tile_max(deepest, t);
  return lv;
}

__device__ inline int lane_body_depth(const model_view<float>& m, const tree_levels& lv, int b, const tile& t) {
  return b == 1 + t.lane ? lv.depth0 : b == 1 + t.width + t.lane ? lv.depth1 : body_depth(m, b);
}

// f(b) for the bodies of each depth, from the world's children down (parents before children).
template <class F>
__device__ inline void tile_tree_down(const model_view<float>& m, const tree_levels& lv, const tile& t, F f) {
  for (int level = 1; level <= lv.levels; ++level) {
    for (int b = 1 + t.lane; b < m.size.nbody; b += t.width) {
      if (lane_body_depth(m, lv, b, t) == level) f(b);
    }
    t.sync();
  }
}

// f(b) for the bodies of each depth that can have children, deepest first (children before parents).
template <class F>
__device__ inline void tile_tree_up(const model_view<float>& m, const tree_levels& lv, const tile& t, F f) {
  for (int level = lv.levels - 1; level >= 1; --level) {
    for (int b = 1 + t.lane; b < m.size.nbody; b += t.width) {
      if (lane_body_depth(m, lv, b, t) == level) f(b);
    }
    t.sync();
  }
}

// add_limit_rows over the lanes: lane per joint, row offsets by a scan; limits past nefc_max drop as serially.
__device__ inline void tile_limit_rows(const model_view<float>& m, const data<float>& d, const tile& t) {
  int base = static_cast<int>(d.nefc[0]);
  for (int j0 = 0; j0 < m.size.njnt; j0 += t.width) {
    const int j = j0 + t.lane;
    float r = 0.0f;
    const int side = j < m.size.njnt ? limit_side(m, d, j, r) : 0;
    const int count = side != 0 ? 1 : 0;
    const int incl = tile_inclusive_sum(count, t);
    const int row = base + incl - count;
    if (count && row < m.size.nefc_max) limit_row(m, d, j, side, r, row);
    base += t.shfl(incl, t.width - 1);
  }
  t.sync();
  if (t.lane == 0) d.nefc[0] = float(base < m.size.nefc_max ? base : m.size.nefc_max);
  t.sync();
}

// factor.hpp's factor over the lanes: for each dof k (last first) a lane per ancestor of k eliminates into its
// own row (rows are disjoint, each row's arithmetic is the serial one), then the multipliers are stored. Ancestors
// past the tile's width come in later chunks: an elimination reads row k only at its ancestor and that ancestor's
// ancestors, all in its own chunk or later ones, so earlier chunks' stored multipliers are never read.
__device__ inline void tile_factor(const model_view<float>& m, strided<float> qM, strided<float> qLD,
                                   const float* add, float add_scale, const tile& t) {
  const int lane = t.lane, w = t.width;
  for (int k = lane; k < m.size.nM; k += w) qLD[k] = qM[k];
  t.sync();
  if (add) {
    for (int i = lane; i < m.size.nv; i += w) qLD[m.dof_Madr[i]] += add_scale * add[i];
    t.sync();
  }
  for (int k = m.size.nv - 1; k >= 0; --k) {
    // Ancestors lane, lane + width, ... of k (0: its parent); their entries in row k follow its diagonal.
    int i = m.dof_parent[k];
    for (int s = 0; s < lane && i >= 0; ++s) i = m.dof_parent[i];
    for (int t0 = 0; t.any(i >= 0); t0 += w) {
      const int pk = m.dof_Madr[k] + 1 + t0 + lane;
      const float a = i >= 0 ? eliminate_into(m, qLD, k, i, pk) : 0.0f;
      t.sync();  // every elimination of this chunk has read row k's entries
      if (i >= 0) qLD[pk] = a;
      for (int s = 0; s < w && i >= 0; ++s) i = m.dof_parent[i];
    }
    t.sync();
  }
}

// factor.hpp's solve over the lanes: the first sweep a lane per ancestor of each dof (disjoint entries of x),
// the division a lane per dof, the last sweep a lane per dof for the dofs of one row length at a time (a dof's
// ancestors have shorter rows, so they are final); each entry's terms in the serial order.
__device__ inline void tile_solve(const model_view<float>& m, strided<float> qLD, strided<float> x, const tile& t) {
  const int nv = m.size.nv, lane = t.lane, w = t.width;
  for (int k = nv - 1; k >= 0; --k) {
    int i = m.dof_parent[k];
    for (int s = 0; s < lane && i >= 0; ++s) i = m.dof_parent[i];
    for (int t0 = 0; t.any(i >= 0); t0 += w) {
      if (i >= 0) x[i] -= qLD[m.dof_Madr[k] + 1 + t0 + lane] * x[k];
      for (int s = 0; s < w && i >= 0; ++s) i = m.dof_parent[i];
    }
    t.sync();
  }
  int longest = 0;
  for (int k = lane; k < nv; k += w) {
    x[k] /= qLD[m.dof_Madr[k]];
    const int len = dof_row_length(m, k);
    longest = len > longest ? len : longest;
  }
  longest = tile_max(longest, t);
  t.sync();
  for (int len = 2; len <= longest; ++len) {
    for (int k = lane; k < nv; k += w) {
      if (dof_row_length(m, k) != len) continue;
      int pk = m.dof_Madr[k] + 1;
      for (int i = m.dof_parent[k]; i >= 0; i = m.dof_parent[i]) x[k] -= qLD[pk++] * x[i];
    }
    t.sync();
  }
}

// step.hpp's step over one tile (d in memory every lane of the tile sees). Tree stages run a depth at a time
// (frames, velocities and the bodies' own bias forces down the tree; subtree inertias and forces up it), dof, joint
// and actuator stages a lane each; every value is computed by the serial arithmetic in the serial order. C: the
// colliders compiled (a built-in model's builtin_sim::colliders).
template <collider_set C = all_colliders>
__device__ inline void tile_step(const model_view<float>& m, const data<float>& d, const tile& t) {
  const int nv = m.size.nv, nb = m.size.nbody, lane = t.lane, w = t.width;
  const tree_levels lv = tile_tree_levels(m, t);
  if (lane == 0) {
    world_frame(d);
    for (int k = 0; k < 10; ++k) d.cinert[k] = 0;
    for (int k = 0; k < 6; ++k) d.cvel[k] = 0;
    world_acceleration(m, d);
  }
  t.sync();
  tile_tree_down(m, lv, t, [&](int b) { body_frame(m, d, b); });
  for (int b = 1 + lane; b < nb; b += w) body_inertia(m, d, b);
  for (int j = lane; j < m.size.njnt; j += w) dof_motions(m, d, j);
  t.sync();
  tile_collide<C>(m, d, t);
  for (int k = lane; k < 10 * nb; k += w) d.crb[k] = d.cinert[k];
  t.sync();
  tile_tree_up(m, lv, t, [&](int b) { add_children(m, d.crb, 10, b); });
  tile_tree_down(m, lv, t, [&](int b) {
    body_velocity(m, d, b);
    body_bias_force(m, d, b);
  });
  tile_tree_up(m, lv, t, [&](int b) { add_children(m, d.cfrc, 6, b); });
  for (int i = lane; i < nv; i += w) {
    d.qfrc_bias[i] = dot(load6(d.cdof, i), load6(d.cfrc, m.dof_bodyid[i]));
    d.qfrc_passive[i] = -m.dof_damping[i] * d.qvel[i];
    d.qfrc_actuator[i] = 0;
    mass_matrix_row(m, d, i);
  }
  for (int u = lane; u < m.size.nu; u += w) actuator_force_of(m, d, u);
  t.sync();
  for (int j = lane; j < m.size.njnt; j += w) joint_spring(m, d, j);
  if (lane == 0) {
    for (int u = 0; u < m.size.nu; ++u) {
      d.qfrc_actuator[m.jnt_dofadr[m.actuator_joint[u]]] += m.actuator_gear[u] * d.actuator_force[u];
    }
    d.nefc[0] = 0;
  }
  t.sync();
  for (int i = lane; i < nv; i += w) {
    d.qacc[i] = d.qfrc_passive[i] - d.qfrc_bias[i] + d.qfrc_applied[i] + d.qfrc_actuator[i];
  }
  tile_limit_rows(m, d, t);
  const int first_contact_row = static_cast<int>(d.nefc[0]);
  tile_contact_rows(m, d, t);
  if (d.nefc[0] > 0.0f) {
    tile_factor(m, d.qM, d.qLDc, static_cast<const float*>(nullptr), 0.0f, t);
    for (int i = lane; i < nv; i += w) d.qfrc_constraint[i] = d.qacc[i];
    t.sync();
    tile_solve(m, d.qLDc, d.qfrc_constraint, t);
    tile_solve_constraints(m, d, d.qfrc_constraint, t);
  } else {
    for (int i = lane; i < nv; i += w) d.qfrc_constraint[i] = 0;
    if (lane == 0) {
      d.prev_nefc[0] = 0;
      d.solver_sweeps[0] = 0;
    }
  }
  t.sync();
  if (lane == 0) contact_forces(m, d, first_contact_row);
  for (int i = lane; i < nv; i += w) d.qacc[i] += d.qfrc_constraint[i];
  t.sync();
  tile_factor(m, d.qM, d.qLD, m.dof_damping, m.timestep, t);
  tile_solve(m, d.qLD, d.qacc, t);
  const float h = m.timestep;
  if (lane == 0) d.time[0] += h;
  for (int i = lane; i < nv; i += w) d.qvel[i] += h * d.qacc[i];
  t.sync();
  for (int j = lane; j < m.size.njnt; j += w) integrate_joint(m, d.qpos, d.qvel, h, j);
  t.sync();
}

// The whole warp as one tile (the step before tiles narrower than a warp).
__device__ inline void warp_step(const model_view<float>& m, const data<float>& d, int lane) {
  tile t;
  t.lane = lane;
  tile_step(m, d, t);
}

}  // namespace gmi::physics::detail

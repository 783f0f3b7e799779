#pragma once
// A warp per environment for built-in models (sizes known at compile time): the model's words and each
// environment's pipeline arrays live in shared memory, qpos, qvel and ctrl in global memory (element-major, as in
// batch_local.cuh). Every stage spreads over the lanes: tree stages a depth of the tree at a time (frames,
// velocities and bias forces down, subtree inertias and forces up), body inertias, dof motions, mass-matrix rows,
// dof, joint and actuator forces, limit rows (lane per item), geom frames and collision (lane per geom pair, two
// passes and a scan keep the serial contact order), contact rows (lane per contact), the factorizations (a lane
// per ancestor of each dof) and solves, the rows' responses M^-1 J' and block couplings (lane per row), the warm
// start, and inside every Gauss-Seidel block the row gradients (8 lanes a row), the four-variable QP (lane per
// active set) and the update of J M^-1 f (lane per dof). Each item's arithmetic is the serial one in the serial
// order, so the result follows the thread-per-env step (step.hpp) up to the compiler's contractions. Also removes
// thread-per-env's divergence: a warp no longer waits for the slowest of 32 environments' solver sweeps. Needs nvcc.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include <gmi/core/cuda_try.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/physics/builtin_task.hpp>
#include <gmi/physics/constraints.hpp>
#include <gmi/physics/detail/small_qp.hpp>
#include <gmi/physics/step.hpp>

namespace gmi::physics {

namespace detail {
constexpr unsigned full_warp = 0xffffffffu;

// Inclusive prefix sum over the warp's lanes.
__device__ inline int warp_inclusive_sum(int x, int lane) {
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(full_warp, x, o);
    if (lane >= o) x += y;
  }
  return x;
}

__device__ inline int warp_sum(int x) {
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(full_warp, x, o);
  return x;
}

// Geom frames and contacts: lane per geom, then lane per pair. Pass one counts each pair's contacts, a scan gives
// each pair its first slot, pass two writes; contacts past the capacity are dropped as the serial collide drops.
__device__ inline void warp_collide(const model_view<float>& m, const data<float>& d, int lane) {
  for (int g = lane; g < m.size.ngeom; g += 32) geom_frames(m, d, g);
  __syncwarp();
  const int cap = m.size.ncon_max;
  int base = 0;
  for (int p0 = 0; p0 < m.size.npair; p0 += 32) {
    const int p = p0 + lane;
    int count = 0;
    if (p < m.size.npair) {
      slot_sink<float> counter{nullptr, cap, p, 0};
      collide_pair(m, d, p, counter);
      count = counter.added;
    }
    const int incl = warp_inclusive_sum(count, lane);
    const int first = base + incl - count;
    if (count > 0 && first < cap) {
      slot_sink<float> writer{&d, cap, p, first};
      collide_pair(m, d, p, writer);
    }
    base += __shfl_sync(full_warp, incl, 31);
  }
  if (lane == 0) d.ncon[0] = float(base < cap ? base : cap);
  __syncwarp();
}

// Contact rows after the limit rows: lane per contact, row offsets by a scan; a contact whose rows pass nefc_max
// and every later one are dropped (the serial loop stops there).
__device__ inline void warp_contact_rows(const model_view<float>& m, const data<float>& d, int lane) {
  const int ncon = static_cast<int>(d.ncon[0]);
  int base = static_cast<int>(d.nefc[0]), kept = 0;
  for (int c0 = 0; c0 < ncon; c0 += 32) {
    const int c = c0 + lane;
    const int p = c < ncon ? static_cast<int>(d.con_pair[c]) : 0;
    const int rows = c < ncon ? (m.pair_condim[p] == 1 ? 1 : 4) : 0;
    const int incl = warp_inclusive_sum(rows, lane);
    const int r0 = base + incl - rows;
    const bool fits = c < ncon && r0 + rows <= m.size.nefc_max;
    if (fits) {
      int nth = 0;  // index among the pair's contacts (consecutive)
      while (c - nth - 1 >= 0 && static_cast<int>(d.con_pair[c - nth - 1]) == p) ++nth;
      contact_rows(m, d, c, r0, nth);
    }
    kept += warp_sum(fits ? rows : 0);
    base += __shfl_sync(full_warp, incl, 31);
  }
  __syncwarp();
  if (lane == 0) d.nefc[0] = d.nefc[0] + float(kept);
  __syncwarp();
}

// The block QP of constraints.hpp's sweep with one active set per lane (masks 1..15); every lane returns x.
__device__ inline void warp_block_qp(const float* h, const float* c, float* x, int lane) {
  int idx[4], k = 0;
  float y[4], objective = 0.0f;
  const int mask = lane + 1;
  bool ok = mask < 16 && qp_candidate(4, h, c, mask, idx, k, y, objective);
  // The serial loop keeps the first mask of least objective below 0 (that of x = 0).
  float best = ok && objective < 0.0f ? objective : 0.0f;
  int who = ok && objective < 0.0f ? mask : 0;
  for (int o = 16; o > 0; o >>= 1) {
    const float ob = __shfl_xor_sync(full_warp, best, o);
    const int ow = __shfl_xor_sync(full_warp, who, o);
    if (qp_prefer(ob, ow, best, who)) {
      best = ob;
      who = ow;
    }
  }
  float mine[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (mask == who) {
    for (int r = 0; r < k; ++r) mine[idx[r]] = y[r];
  }
  for (int i = 0; i < 4; ++i) x[i] = who == 0 ? 0.0f : __shfl_sync(full_warp, mine[i], who - 1);
}

// constraints.hpp's solve_constraints over the warp: the same rows, forces and sweeps.
__device__ inline void warp_solve_constraints(const model_view<float>& m, const data<float>& d,
                                              strided<float> qacc_smooth, int lane) {
  const int nv = m.size.nv;
  const int nefc = static_cast<int>(d.nefc[0]);
  for (int r = lane; r < nefc; r += 32) row_response(m, d, r);
  __syncwarp();
  const int np = static_cast<int>(d.prev_nefc[0]);
  for (int r = lane; r < nefc; r += 32) {
    if (d.efc_block[r] == 4.0f) block_couplings(m, d, r);
    d.efc_force[r] = warm_force(d, r, np);
  }
  __syncwarp();
  for (int i = lane; i < nv; i += 32) {
    float col = qacc_smooth[i];
    for (int r = 0; r < nefc; ++r) {
      const float f = d.efc_force[r];
      if (f != 0.0f) col += f * d.efc_W[r * nv + i];
    }
    d.efc_col[i] = col;
  }
  __syncwarp();
  int sweeps = 0;
  for (int it = 0; it < m.iterations && nefc > 0; ++it) {
    ++sweeps;
    float change = 0.0f, scale = 0.0f;
    for (int r = 0; r < nefc;) {
      const int size = d.efc_block[r] == 4.0f ? 4 : 1;
      // Lanes 8 b .. 8 b + 7: row r + b's gradient, its J . efc_col summed as row_times_col sums it.
      const int mine = lane >> 3;
      float part = mine < size ? row_partial(m, d, r + mine, lane & 7) : 0.0f;
      for (int o = row_dot_lanes / 2; o > 0; o >>= 1) part += __shfl_xor_sync(full_warp, part, o);
      const float gb =
          mine < size ? (d.efc_R[r + mine] * d.efc_force[r + mine] - d.efc_aref[r + mine]) + part : 0.0f;
      float g[4], f[4], x[4];
      for (int b = 0; b < 4; ++b) {
        g[b] = __shfl_sync(full_warp, gb, row_dot_lanes * b);
        f[b] = b < size ? d.efc_force[r + b] : 0.0f;
      }
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
        warp_block_qp(h, c, x, lane);
      }
      __syncwarp();  // every lane has read the forces and J M^-1 f before they change
      for (int b = 0; b < size; ++b) {
        const float delta = x[b] - f[b];
        if (delta != 0.0f) {
          for (int i = lane; i < nv; i += 32) d.efc_col[i] += delta * d.efc_W[(r + b) * nv + i];
          if (lane == 0) d.efc_force[r + b] = x[b];
        }
        change = fabsf(delta) > change ? fabsf(delta) : change;
        scale = x[b] > scale ? x[b] : scale;
      }
      __syncwarp();
      r += size;
    }
    if (change <= m.tolerance * (1.0f + scale)) break;
  }
  for (int r = lane; r < nefc; r += 32) {
    d.prev_key[r] = d.efc_key[r];
    d.prev_force[r] = d.efc_force[r];
  }
  for (int i = lane; i < nv; i += 32) {
    float q = 0.0f;
    for (int r = 0; r < nefc; ++r) q += d.efc_J[r * nv + i] * d.efc_force[r];
    d.qfrc_constraint[i] = q;
  }
  __syncwarp();
  if (lane == 0) {
    d.solver_sweeps[0] = float(sweeps);
    d.prev_nefc[0] = float(nefc);
  }
  __syncwarp();
}

// Each lane's bodies' depths (bodies 1 + lane and 33 + lane; deeper indices are walked when asked) and the
// deepest, so tree passes run a depth at a time with a lane per body.
struct tree_levels {
  int levels = 0, depth0 = 0, depth1 = 0;
};

__device__ inline tree_levels warp_tree_levels(const model_view<float>& m, int lane) {
  tree_levels t;
  int deepest = 0;
  for (int b = 1 + lane; b < m.size.nbody; b += 32) {
    const int depth = body_depth(m, b);
    if (b == 1 + lane) t.depth0 = depth;
    if (b == 33 + lane) t.depth1 = depth;
    deepest = depth > deepest ? depth : deepest;
  }
  for (int o = 16; o > 0; o >>= 1) {
    const int y = __shfl_xor_sync(full_warp, deepest, o);
    deepest = y > deepest ? y : deepest;
  }
  t.levels = deepest;
  return t;
}

__device__ inline int lane_body_depth(const model_view<float>& m, const tree_levels& t, int b, int lane) {
  return b == 1 + lane ? t.depth0 : b == 33 + lane ? t.depth1 : body_depth(m, b);
}

// f(b) for the bodies of each depth, from the world's children down (parents before children).
template <class F>
__device__ inline void warp_tree_down(const model_view<float>& m, const tree_levels& t, int lane, F f) {
  for (int level = 1; level <= t.levels; ++level) {
    for (int b = 1 + lane; b < m.size.nbody; b += 32) {
      if (lane_body_depth(m, t, b, lane) == level) f(b);
    }
    __syncwarp();
  }
}

// f(b) for the bodies of each depth that can have children, deepest first (children before parents).
template <class F>
__device__ inline void warp_tree_up(const model_view<float>& m, const tree_levels& t, int lane, F f) {
  for (int level = t.levels - 1; level >= 1; --level) {
    for (int b = 1 + lane; b < m.size.nbody; b += 32) {
      if (lane_body_depth(m, t, b, lane) == level) f(b);
    }
    __syncwarp();
  }
}

// add_limit_rows over the lanes: lane per joint, row offsets by a scan; limits past nefc_max drop as serially.
__device__ inline void warp_limit_rows(const model_view<float>& m, const data<float>& d, int lane) {
  int base = static_cast<int>(d.nefc[0]);
  for (int j0 = 0; j0 < m.size.njnt; j0 += 32) {
    const int j = j0 + lane;
    float r = 0.0f;
    const int side = j < m.size.njnt ? limit_side(m, d, j, r) : 0;
    const int count = side != 0 ? 1 : 0;
    const int incl = warp_inclusive_sum(count, lane);
    const int row = base + incl - count;
    if (count && row < m.size.nefc_max) limit_row(m, d, j, side, r, row);
    base += __shfl_sync(full_warp, incl, 31);
  }
  __syncwarp();
  if (lane == 0) d.nefc[0] = float(base < m.size.nefc_max ? base : m.size.nefc_max);
  __syncwarp();
}

// factor.hpp's factor over the lanes: for each dof k (last first) a lane per ancestor of k eliminates into its
// own row (rows are disjoint, each row's arithmetic is the serial one), then the multipliers are stored.
__device__ inline void warp_factor(const model_view<float>& m, strided<float> qM, strided<float> qLD,
                                   const float* add, float add_scale, int lane) {
  for (int k = lane; k < m.size.nM; k += 32) qLD[k] = qM[k];
  __syncwarp();
  if (add) {
    for (int i = lane; i < m.size.nv; i += 32) qLD[m.dof_Madr[i]] += add_scale * add[i];
    __syncwarp();
  }
  for (int k = m.size.nv - 1; k >= 0; --k) {
    // Ancestors lane, lane + 32, ... of k (0: its parent); their entries in row k follow its diagonal.
    int i = m.dof_parent[k];
    for (int t = 0; t < lane && i >= 0; ++t) i = m.dof_parent[i];
    for (int t0 = 0; __any_sync(full_warp, i >= 0); t0 += 32) {
      const int pk = m.dof_Madr[k] + 1 + t0 + lane;
      const float a = i >= 0 ? eliminate_into(m, qLD, k, i, pk) : 0.0f;
      __syncwarp();  // every elimination of this chunk has read row k's entries
      if (i >= 0) qLD[pk] = a;
      for (int t = 0; t < 32 && i >= 0; ++t) i = m.dof_parent[i];
    }
    __syncwarp();
  }
}

// factor.hpp's solve over the lanes: the first sweep a lane per ancestor of each dof (disjoint entries of x),
// the division a lane per dof, the last sweep a lane per dof for the dofs of one row length at a time (a dof's
// ancestors have shorter rows, so they are final); each entry's terms in the serial order.
__device__ inline void warp_solve(const model_view<float>& m, strided<float> qLD, strided<float> x, int lane) {
  const int nv = m.size.nv;
  for (int k = nv - 1; k >= 0; --k) {
    int i = m.dof_parent[k];
    for (int t = 0; t < lane && i >= 0; ++t) i = m.dof_parent[i];
    for (int t0 = 0; __any_sync(full_warp, i >= 0); t0 += 32) {
      if (i >= 0) x[i] -= qLD[m.dof_Madr[k] + 1 + t0 + lane] * x[k];
      for (int t = 0; t < 32 && i >= 0; ++t) i = m.dof_parent[i];
    }
    __syncwarp();
  }
  int longest = 0;
  for (int k = lane; k < nv; k += 32) {
    x[k] /= qLD[m.dof_Madr[k]];
    const int len = dof_row_length(m, k);
    longest = len > longest ? len : longest;
  }
  for (int o = 16; o > 0; o >>= 1) {
    const int y = __shfl_xor_sync(full_warp, longest, o);
    longest = y > longest ? y : longest;
  }
  __syncwarp();
  for (int len = 2; len <= longest; ++len) {
    for (int k = lane; k < nv; k += 32) {
      if (dof_row_length(m, k) != len) continue;
      int pk = m.dof_Madr[k] + 1;
      for (int i = m.dof_parent[k]; i >= 0; i = m.dof_parent[i]) x[k] -= qLD[pk++] * x[i];
    }
    __syncwarp();
  }
}

// step.hpp's step over one warp (d in memory every lane sees). Tree stages run a depth at a time (frames,
// velocities and the bodies' own bias forces down the tree; subtree inertias and forces up it), dof, joint and
// actuator stages a lane each; every value is computed by the serial arithmetic in the serial order.
__device__ inline void warp_step(const model_view<float>& m, const data<float>& d, int lane) {
  const int nv = m.size.nv, nb = m.size.nbody;
  const tree_levels t = warp_tree_levels(m, lane);
  if (lane == 0) {
    world_frame(d);
    for (int k = 0; k < 10; ++k) d.cinert[k] = 0;
    for (int k = 0; k < 6; ++k) d.cvel[k] = 0;
    world_acceleration(m, d);
  }
  __syncwarp();
  warp_tree_down(m, t, lane, [&](int b) { body_frame(m, d, b); });
  for (int b = 1 + lane; b < nb; b += 32) body_inertia(m, d, b);
  for (int j = lane; j < m.size.njnt; j += 32) dof_motions(m, d, j);
  __syncwarp();
  warp_collide(m, d, lane);
  for (int k = lane; k < 10 * nb; k += 32) d.crb[k] = d.cinert[k];
  __syncwarp();
  warp_tree_up(m, t, lane, [&](int b) { add_children(m, d.crb, 10, b); });
  warp_tree_down(m, t, lane, [&](int b) {
    body_velocity(m, d, b);
    body_bias_force(m, d, b);
  });
  warp_tree_up(m, t, lane, [&](int b) { add_children(m, d.cfrc, 6, b); });
  for (int i = lane; i < nv; i += 32) {
    d.qfrc_bias[i] = dot(load6(d.cdof, i), load6(d.cfrc, m.dof_bodyid[i]));
    d.qfrc_passive[i] = -m.dof_damping[i] * d.qvel[i];
    d.qfrc_actuator[i] = 0;
    mass_matrix_row(m, d, i);
  }
  for (int u = lane; u < m.size.nu; u += 32) actuator_force_of(m, d, u);
  __syncwarp();
  for (int j = lane; j < m.size.njnt; j += 32) joint_spring(m, d, j);
  if (lane == 0) {
    for (int u = 0; u < m.size.nu; ++u) {
      d.qfrc_actuator[m.jnt_dofadr[m.actuator_joint[u]]] += m.actuator_gear[u] * d.actuator_force[u];
    }
    d.nefc[0] = 0;
  }
  __syncwarp();
  for (int i = lane; i < nv; i += 32) {
    d.qacc[i] = d.qfrc_passive[i] - d.qfrc_bias[i] + d.qfrc_applied[i] + d.qfrc_actuator[i];
  }
  warp_limit_rows(m, d, lane);
  const int first_contact_row = static_cast<int>(d.nefc[0]);
  warp_contact_rows(m, d, lane);
  if (d.nefc[0] > 0.0f) {
    warp_factor(m, d.qM, d.qLDc, static_cast<const float*>(nullptr), 0.0f, lane);
    for (int i = lane; i < nv; i += 32) d.qfrc_constraint[i] = d.qacc[i];
    __syncwarp();
    warp_solve(m, d.qLDc, d.qfrc_constraint, lane);
    warp_solve_constraints(m, d, d.qfrc_constraint, lane);
  } else {
    for (int i = lane; i < nv; i += 32) d.qfrc_constraint[i] = 0;
    if (lane == 0) {
      d.prev_nefc[0] = 0;
      d.solver_sweeps[0] = 0;
    }
  }
  __syncwarp();
  if (lane == 0) contact_forces(m, d, first_contact_row);
  for (int i = lane; i < nv; i += 32) d.qacc[i] += d.qfrc_constraint[i];
  __syncwarp();
  warp_factor(m, d.qM, d.qLD, m.dof_damping, m.timestep, lane);
  warp_solve(m, d.qLD, d.qacc, lane);
  const float h = m.timestep;
  if (lane == 0) d.time[0] += h;
  for (int i = lane; i < nv; i += 32) d.qvel[i] += h * d.qacc[i];
  __syncwarp();
  for (int j = lane; j < m.size.njnt; j += 32) integrate_joint(m, d.qpos, d.qvel, h, j);
  __syncwarp();
}

// Words of the model table and reals of one environment's arrays, each rounded up to 16 bytes.
template <class M>
constexpr std::size_t warp_table_words = (sizeof(M::words) / 4 + 3) / 4 * 4;
template <class M>
constexpr std::size_t warp_scratch_reals = (builtin_sim<M>::scratch_reals + 3) / 4 * 4;

template <class M>
__global__ void warp_step_envs(model_options opts, const float* table, float* qpos, float* qvel, const float* ctrl,
                               int n, int substeps) {
  using sim = builtin_sim<M>;
  extern __shared__ float4 shared_words[];
  float* words = reinterpret_cast<float*>(shared_words);
  constexpr int table_words = static_cast<int>(sizeof(M::words) / 4);
  // As 32-bit integers: the table mixes int and float words, and a copy must keep every bit.
  const unsigned* from = reinterpret_cast<const unsigned*>(table);
  unsigned* to = reinterpret_cast<unsigned*>(words);
  for (int k = threadIdx.x; k < table_words; k += blockDim.x) to[k] = from[k];
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int e = blockIdx.x * (blockDim.x >> 5) + warp;
  if (e >= n) return;  // the whole warp
  const model_view<float> m = view_of_words(M::sizes(), opts, words);
  float* scratch = words + warp_table_words<M> + static_cast<std::size_t>(warp) * warp_scratch_reals<M>;
  const data<float> d = data_of(make_layout(M::sizes()), scratch, 1, 0);
  const std::size_t i = static_cast<std::size_t>(e);
  for (int k = lane; k < sim::nq; k += 32) d.qpos[k] = qpos[k * static_cast<std::size_t>(n) + i];
  for (int k = lane; k < sim::nv; k += 32) {
    d.qvel[k] = qvel[k * static_cast<std::size_t>(n) + i];
    d.qfrc_applied[k] = 0.0f;
  }
  for (int k = lane; k < sim::nu; k += 32) d.ctrl[k] = ctrl[k * static_cast<std::size_t>(n) + i];
  if (lane == 0) {
    d.time[0] = 0.0f;
    d.prev_nefc[0] = 0.0f;
  }
  __syncwarp();
  for (int s = 0; s < substeps; ++s) warp_step(m, d, lane);
  for (int k = lane; k < sim::nq; k += 32) qpos[k * static_cast<std::size_t>(n) + i] = d.qpos[k];
  for (int k = lane; k < sim::nv; k += 32) qvel[k * static_cast<std::size_t>(n) + i] = d.qvel[k];
}
}  // namespace detail

// num_envs environments of the built-in model M, a warp each, in the layout of local_batch (batch_local.cuh):
// element-major qpos (nq x n), qvel and ctrl; every environment starts at qpos0, at rest, controls zero.
// warps_per_block 0 picks the most that fit the device's shared memory (at most 8).
template <class M>
class warp_batch {
 public:
  using sim = builtin_sim<M>;
  warp_batch(int num_envs, cudaStream_t s, int warps_per_block = 0) : n_(num_envs) {
    gmi::require(num_envs >= 1, "physics warp_batch num_envs", num_envs, ">= 1");
    int dev = 0, optin = 0;
    GMI_CUDA_TRY(cudaGetDevice(&dev));
    GMI_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    gmi::require(static_cast<std::size_t>(optin) >= table_bytes() + scratch_bytes_per_env(),
                 "physics warp_batch shared memory per block", optin,
                 ">= " + std::to_string(table_bytes() + scratch_bytes_per_env()) + " bytes (one environment)");
    const std::size_t fit = (static_cast<std::size_t>(optin) - table_bytes()) / scratch_bytes_per_env();
    if (warps_per_block == 0) warps_per_block = static_cast<int>(fit < 8 ? fit : 8);
    gmi::require(warps_per_block >= 1 && static_cast<std::size_t>(warps_per_block) <= fit,
                 "physics warp_batch warps_per_block", warps_per_block,
                 "1.." + std::to_string(fit) + " (shared memory)");
    warps_ = warps_per_block;
    const std::vector<float> t = sim::table();
    table_ = gmi::cuda::device_buffer<float>(t.size());
    GMI_CUDA_TRY(cudaMemcpyAsync(table_.data(), t.data(), t.size() * sizeof(float), cudaMemcpyHostToDevice, s));
    const model_view<float> host = sim::view(t.data());  // the same words on the host, for qpos0
    const std::size_t n = static_cast<std::size_t>(num_envs);
    std::vector<float> q(static_cast<std::size_t>(sim::nq) * n);
    for (int k = 0; k < sim::nq; ++k)
      for (std::size_t e = 0; e < n; ++e) q[k * n + e] = host.qpos0[k];
    qpos_ = gmi::cuda::device_buffer<float>(q.size());
    qvel_ = gmi::cuda::device_buffer<float>(static_cast<std::size_t>(sim::nv) * n);
    ctrl_ = gmi::cuda::device_buffer<float>(static_cast<std::size_t>(sim::nu > 0 ? sim::nu : 1) * n);
    GMI_CUDA_TRY(cudaMemcpyAsync(qpos_.data(), q.data(), q.size() * sizeof(float), cudaMemcpyHostToDevice, s));
    GMI_CUDA_TRY(cudaMemsetAsync(qvel_.data(), 0, qvel_.size() * sizeof(float), s));
    GMI_CUDA_TRY(cudaMemsetAsync(ctrl_.data(), 0, ctrl_.size() * sizeof(float), s));
    GMI_CUDA_TRY(cudaStreamSynchronize(s));  // the host vectors go out of scope here
  }

  // substeps physics steps of every environment.
  void step(cudaStream_t s, int substeps = 1) {
    // Per launch: batches of one model with other block sizes share the kernel and its attribute.
    GMI_CUDA_TRY(cudaFuncSetAttribute(detail::warp_step_envs<M>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(shared_bytes())));
    const int blocks = (n_ + warps_ - 1) / warps_;
    detail::warp_step_envs<M><<<blocks, 32 * warps_, shared_bytes(), s>>>(M::options(), table_.data(), qpos_.data(),
                                                                         qvel_.data(), ctrl_.data(), n_, substeps);
    GMI_CUDA_TRY(cudaGetLastError());
  }
  [[nodiscard]] int num_envs() const { return n_; }
  [[nodiscard]] int warps_per_block() const { return warps_; }
  [[nodiscard]] float* qpos() { return qpos_.data(); }
  [[nodiscard]] float* qvel() { return qvel_.data(); }
  [[nodiscard]] float* ctrl() { return ctrl_.data(); }
  // Global memory per environment (state and controls; the pipeline is in shared memory while a warp runs).
  [[nodiscard]] std::size_t bytes_per_env() const { return (sim::nq + sim::nv + sim::nu) * sizeof(float); }
  [[nodiscard]] static constexpr std::size_t table_bytes() { return detail::warp_table_words<M> * sizeof(float); }
  [[nodiscard]] static constexpr std::size_t scratch_bytes_per_env() {
    return detail::warp_scratch_reals<M> * sizeof(float);
  }
  [[nodiscard]] std::size_t shared_bytes() const { return table_bytes() + warps_ * scratch_bytes_per_env(); }

 private:
  int n_;
  int warps_ = 1;
  gmi::cuda::device_buffer<float> table_;
  gmi::cuda::device_buffer<float> qpos_, qvel_, ctrl_;
};

}  // namespace gmi::physics

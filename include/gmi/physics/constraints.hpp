#pragma once
// The constraint stage: rows for active joint limits (limits.hpp) and contacts (collision.hpp), and their
// forces as MuJoCo's soft-constraint model defines them. Every row i has a Jacobian J_i, a reference
// acceleration aref_i and a regularizer R_i, and the forces f >= 0 minimise
//   1/2 f'(A + R) f + f'(J a0 - aref),  A = J M^-1 J',  a0 the unconstrained acceleration,
// a strictly convex problem (R > 0) whose unique minimiser MuJoCo's Newton solver also finds. We solve it by
// block Gauss-Seidel on f (a pyramid's four edges solved exactly together, other rows one at a time, each
// projected on f >= 0), warm-started from the previous step's forces of the same rows, sweeping until no force
// moves by more than tolerance * (1 + max f) or m.iterations sweeps have run.
// Contacts with sliding friction (condim 3) are MuJoCo's pyramidal cones: four rows J_n +- mu J_t1, J_n +- mu J_t2
// per contact, each edge's regularizer 2 mu^2 (1 - imp) / imp * (1 + mu^2) * (invweight0 of both bodies).

#include <gmi/core/hd.hpp>
#include <gmi/physics/collision.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/detail/small_qp.hpp>
#include <gmi/physics/factor.hpp>
#include <gmi/physics/kinematics.hpp>
#include <gmi/physics/limits.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics {

// row += scale * dir . (velocity of the point p fixed to body b, per unit speed of each dof).
template <class T>
GMI_HD void add_point_jacobian(const model_view<T>& m, const data<T>& d, int b, vec3<T> p, vec3<T> dir, T scale,
                               strided<T> row) {
  const int weld = m.body_weldid[b];
  if (weld == 0) return;
  const vec3<T> offset = p - reference_point(m, d, b);
  for (int i = m.body_dofadr[weld] + m.body_dofnum[weld] - 1; i >= 0; i = m.dof_parent[i]) {
    const spatial<T> s = load6(d.cdof, i);
    row[i] += scale * dot(dir, s.v + cross(s.w, offset));
  }
}

// The rows (1, or 4 for a pyramid) of contact c, the nth of its pair's contacts, from row r0 on.
template <class T>
GMI_HD void contact_rows(const model_view<T>& m, const data<T>& d, int c, int r0, int nth) {
  const int nv = m.size.nv;
  const int p = static_cast<int>(d.con_pair[c]);
  const int condim = m.pair_condim[p];
  const int rows = condim == 1 ? 1 : 4;
  const int b1 = m.geom_bodyid[m.pair_geom1[p]], b2 = m.geom_bodyid[m.pair_geom2[p]];
  const vec3<T> pos = load3(d.con_pos, c);
  const vec3<T> n{d.con_frame[9 * c], d.con_frame[9 * c + 1], d.con_frame[9 * c + 2]};
  const vec3<T> t1{d.con_frame[9 * c + 3], d.con_frame[9 * c + 4], d.con_frame[9 * c + 5]};
  const vec3<T> t2{d.con_frame[9 * c + 6], d.con_frame[9 * c + 7], d.con_frame[9 * c + 8]};
  // Normal, then (condim 3) the two tangents in the next rows: relative velocity of body 2 against body 1.
  const vec3<T> dirs[3] = {n, t1, t2};
  for (int k = 0; k < (condim == 1 ? 1 : 3); ++k) {
    const strided<T> row{&d.efc_J[(r0 + k) * nv], d.efc_J.s};
    for (int i = 0; i < nv; ++i) row[i] = 0;
    add_point_jacobian(m, d, b2, pos, dirs[k], T(1), row);
    add_point_jacobian(m, d, b1, pos, dirs[k], T(-1), row);
  }
  const T dist = d.con_dist[c];
  const T* solimp = m.pair_solimp + 5 * p;
  T k, b;
  reference_gains(m, m.pair_solref + 2 * p, solimp, k, b);
  const T imp = impedance(solimp, dist);
  const T tran = m.body_invweight0[2 * b1] + m.body_invweight0[2 * b2];
  T reg;
  if (condim == 1) {
    reg = (T(1) - imp) / imp * tran;
  } else {
    const T mu = m.pair_friction[p];
    for (int i = 0; i < nv; ++i) {
      const T jn = d.efc_J[r0 * nv + i], ja = d.efc_J[(r0 + 1) * nv + i], jb = d.efc_J[(r0 + 2) * nv + i];
      d.efc_J[r0 * nv + i] = jn + mu * ja;
      d.efc_J[(r0 + 1) * nv + i] = jn - mu * ja;
      d.efc_J[(r0 + 2) * nv + i] = jn + mu * jb;
      d.efc_J[(r0 + 3) * nv + i] = jn - mu * jb;
    }
    reg = T(2) * mu * mu * ((T(1) - imp) / imp * tran * (T(1) + mu * mu));
  }
  for (int r = r0; r < r0 + rows; ++r) {
    T vel = 0;
    for (int i = 0; i < nv; ++i) {
      const T jr = d.efc_J[r * nv + i];
      if (jr != T(0)) vel += jr * d.qvel[i];  // zero off the bodies' chains: skip those reads
    }
    d.efc_aref[r] = -b * vel - k * imp * dist;
    d.efc_R[r] = reg > T(1e-15) ? reg : T(1e-15);
    d.efc_key[r] = T(m.size.njnt + (p * 9 + nth) * 4 + (r - r0));  // up to 9 contacts a pair (box-box)
    d.efc_block[r] = T(r == r0 ? rows : 0);
  }
}

// Appends the rows of every contact found by collide().
template <class T>
GMI_HD void add_contact_rows(const model_view<T>& m, const data<T>& d) {
  const int ncon = static_cast<int>(d.ncon[0]);
  int nth = 0;  // index of this contact among its pair's (a pair's contacts are consecutive)
  for (int c = 0; c < ncon; ++c) {
    const int p = static_cast<int>(d.con_pair[c]);
    nth = c > 0 && static_cast<int>(d.con_pair[c - 1]) == p ? nth + 1 : 0;
    const int rows = m.pair_condim[p] == 1 ? 1 : 4;
    const int r0 = static_cast<int>(d.nefc[0]);
    if (r0 + rows > m.size.nefc_max) break;
    contact_rows(m, d, c, r0, nth);
    d.nefc[0] = T(r0 + rows);
  }
}

// Row r's M^-1 J_r' into efc_W and its diagonal (J M^-1 J')_rr + R_r into efc_AR; qLDc holds the factor of M.
template <class T>
GMI_HD void row_response(const model_view<T>& m, const data<T>& d, int r) {
  const int nv = m.size.nv;
  const strided<T> w{&d.efc_W[r * nv], d.efc_W.s};
  T a = 0;
  for (int i = 0; i < nv; ++i) w[i] = d.efc_J[r * nv + i];
  solve(m, d.qLDc, w);
  for (int i = 0; i < nv; ++i) a += d.efc_J[r * nv + i] * w[i];
  d.efc_AR[r] = a + d.efc_R[r];
}

// Couplings inside the block of four starting at row r (a pyramid's edges), row-major.
template <class T>
GMI_HD void block_couplings(const model_view<T>& m, const data<T>& d, int r) {
  const int nv = m.size.nv;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      T a = 0;
      for (int k = 0; k < nv; ++k) a += d.efc_J[(r + i) * nv + k] * d.efc_W[(r + j) * nv + k];
      d.efc_A4[4 * r + 4 * i + j] = a;
    }
  }
}

// Row r's starting force: the previous step's force of the row with the same key, else 0 (keys increase).
template <class T>
GMI_HD T warm_force(const data<T>& d, int r, int np) {
  int lo = 0, hi = np;  // first previous key >= this key
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (d.prev_key[mid] < d.efc_key[r]) lo = mid + 1; else hi = mid;
  }
  return lo < np && d.prev_key[lo] == d.efc_key[r] ? d.prev_force[lo] : T(0);
}

// J_r . efc_col summed as the warp path sums it: row_dot_lanes strided partial sums (dofs s, s + 8, ...), then
// halves folded onto halves (4, 2, 1 apart), the order of a warp's butterfly reduction over 8 lanes.
constexpr int row_dot_lanes = 8;

template <class T>
GMI_HD inline T row_partial(const model_view<T>& m, const data<T>& d, int r, int s) {
  const int nv = m.size.nv;
  T p = 0;
  for (int i = s; i < nv; i += row_dot_lanes) p += d.efc_J[r * nv + i] * d.efc_col[i];
  return p;
}

// One pass over the row: partial s gathers dofs s, s + 8, ... in increasing order, as row_partial does, so the
// sum is bit for bit the warp's; eight accumulators and one load stream keep the thread path's registers low.
template <class T>
GMI_HD inline T row_times_col(const model_view<T>& m, const data<T>& d, int r) {
  const int nv = m.size.nv;
  const int row = r * nv;
  T p[row_dot_lanes] = {};
  for (int i0 = 0; i0 < nv; i0 += row_dot_lanes) {
#if defined(__CUDACC__)
#pragma unroll
#endif
    for (int s = 0; s < row_dot_lanes; ++s) {
      if (i0 + s < nv) p[s] += d.efc_J[row + i0 + s] * d.efc_col[i0 + s];
    }
  }
#if defined(__CUDACC__)
#pragma unroll
#endif
  for (int o = row_dot_lanes / 2; o > 0; o /= 2) {
#if defined(__CUDACC__)
#pragma unroll
#endif
    for (int s = 0; s < o; ++s) p[s] = p[s] + p[s + o];
  }
  return p[0];
}

// Whether the serial solve sweeps in row space: A = J M^-1 J' (nefc x nefc) fits efc_W's slot and a sweep over it
// reads fewer reals (a row of A and the forces: 2 nefc a row) than one over the dofs (J_r, M^-1 J_r' and the
// constrained acceleration twice: 4 nv a row); building A costs nefc^2 nv / 2 products once, so only up to nv rows.
template <class T>
GMI_HD inline bool row_space_solve(const model_view<T>& m, int nefc) {
  return nefc <= m.size.nv && nefc * nefc <= m.size.nefc_max * m.size.nv;
}

// A = J M^-1 J' into efc_W's slot (row-major, nefc x nefc; each M^-1 J_j' in efc_col in turn), efc_AR from its
// diagonal, then J_r a0 in efc_col (a0: qacc_smooth). qLDc must hold the factor of M alone.
template <class T>
GMI_HD void build_row_space(const model_view<T>& m, const data<T>& d, strided<T> qacc_smooth, int nefc) {
  const int nv = m.size.nv;
  for (int j = 0; j < nefc; ++j) {
    for (int i = 0; i < nv; ++i) d.efc_col[i] = d.efc_J[j * nv + i];
    solve(m, d.qLDc, d.efc_col);
    for (int r = j; r < nefc; ++r) {
      T a = 0;
      for (int i = 0; i < nv; ++i) {
        const T jr = d.efc_J[r * nv + i];
        if (jr != T(0)) a += jr * d.efc_col[i];  // a row is zero off its bodies' chains: skip those reads
      }
      d.efc_W[r * nefc + j] = a;
      d.efc_W[j * nefc + r] = a;
    }
    d.efc_AR[j] = d.efc_W[j * nefc + j] + d.efc_R[j];
  }
  for (int r = 0; r < nefc; ++r) {
    T a = 0;
    for (int i = 0; i < nv; ++i) {
      const T jr = d.efc_J[r * nv + i];
      if (jr != T(0)) a += jr * qacc_smooth[i];
    }
    d.efc_col[r] = a;
  }
}

// qfrc_constraint from the rows. qacc_smooth holds M^-1 times the smooth forces; qLDc must hold the factor of M
// alone. Rows that existed in the previous step (same key) start from their previous force: the minimiser is
// unique, so this changes only how many sweeps reach it. Up to nv rows (row_space_solve) the sweeps run on
// A = J M^-1 J' and the forces; above, on the constrained acceleration a0 + M^-1 J' f, as the warp path does
// (batch_warp_stages.cuh): the same iterates up to rounding.
template <class T>
GMI_HD void solve_constraints(const model_view<T>& m, const data<T>& d, strided<T> qacc_smooth) {
  const int nv = m.size.nv;
  const int nefc = static_cast<int>(d.nefc[0]);
  const bool rows = row_space_solve(m, nefc);
  const int np = static_cast<int>(d.prev_nefc[0]);
  if (rows) {
    build_row_space(m, d, qacc_smooth, nefc);
    for (int r = 0; r < nefc; ++r) d.efc_force[r] = warm_force(d, r, np);
  } else {
    for (int r = 0; r < nefc; ++r) row_response(m, d, r);
    for (int r = 0; r < nefc; ++r) {
      if (d.efc_block[r] == T(4)) block_couplings(m, d, r);
    }
    for (int i = 0; i < nv; ++i) d.efc_col[i] = qacc_smooth[i];
    for (int r = 0; r < nefc; ++r) {
      const T f = warm_force(d, r, np);
      d.efc_force[r] = f;
      if (f != T(0)) {
        for (int i = 0; i < nv; ++i) d.efc_col[i] += f * d.efc_W[r * nv + i];
      }
    }
  }
  int sweeps = 0;
  for (int it = 0; it < m.iterations && nefc > 0; ++it) {
    ++sweeps;
    T change = 0, scale = 0;
    for (int r = 0; r < nefc;) {
      const int size = d.efc_block[r] == T(4) ? 4 : 1;
      // Gradient of the dual objective for the block's rows, at the current forces.
      T g[4], f[4], x[4];
      for (int b = 0; b < size; ++b) {
        T jac;
        if (rows) {
          jac = d.efc_col[r + b];
          for (int j = 0; j < nefc; ++j) jac += d.efc_W[(r + b) * nefc + j] * d.efc_force[j];
        } else {
          jac = row_times_col(m, d, r + b);
        }
        g[b] = (d.efc_R[r + b] * d.efc_force[r + b] - d.efc_aref[r + b]) + jac;
        f[b] = d.efc_force[r + b];
      }
      if (size == 1) {
        x[0] = f[0] - g[0] / d.efc_AR[r];
        x[0] = x[0] > T(0) ? x[0] : T(0);
      } else {
        // The block's exact minimiser with the other rows held: H = A_bb + R, c = g - H f.
        T h[16], c[4];
        for (int i = 0; i < 4; ++i) {
          c[i] = g[i];
          for (int j = 0; j < 4; ++j) {
            const T a = rows ? d.efc_W[(r + i) * nefc + r + j] : d.efc_A4[4 * r + 4 * i + j];
            h[4 * i + j] = a + (i == j ? d.efc_R[r + i] : T(0));
          }
        }
        for (int i = 0; i < 4; ++i) {
          for (int j = 0; j < 4; ++j) c[i] -= h[4 * i + j] * f[j];
        }
        detail::nonnegative_qp(4, h, c, x);
      }
      for (int b = 0; b < size; ++b) {
        const T delta = x[b] - f[b];
        if (delta != T(0)) {
          if (!rows) {
            for (int i = 0; i < nv; ++i) d.efc_col[i] += delta * d.efc_W[(r + b) * nv + i];
          }
          d.efc_force[r + b] = x[b];
        }
        change = fabs(delta) > change ? fabs(delta) : change;
        scale = x[b] > scale ? x[b] : scale;
      }
      r += size;
    }
    if (change <= m.tolerance * (T(1) + scale)) break;
  }
  d.solver_sweeps[0] = T(sweeps);
  d.prev_nefc[0] = T(nefc);
  for (int r = 0; r < nefc; ++r) {
    d.prev_key[r] = d.efc_key[r];
    d.prev_force[r] = d.efc_force[r];
  }
  // J' f, each dof's sum in row order held in a register (one store per dof, not one per row).
  for (int i = 0; i < nv; ++i) {
    T sum = 0;
    for (int r = 0; r < nefc; ++r) {
      const T jr = d.efc_J[r * nv + i];
      if (jr != T(0)) sum += jr * d.efc_force[r];
    }
    d.qfrc_constraint[i] = sum;
  }
}

// Contact forces in each contact's frame (normal, two frictions) from the row forces: a pyramid's normal force
// is the sum of its edge forces, friction along t_k is mu (f_k+ - f_k-).
template <class T>
GMI_HD void contact_forces(const model_view<T>& m, const data<T>& d, int first_contact_row) {
  int r = first_contact_row;
  const int ncon = static_cast<int>(d.ncon[0]);
  const int nefc = static_cast<int>(d.nefc[0]);
  for (int c = 0; c < ncon; ++c) {
    const int p = static_cast<int>(d.con_pair[c]);
    const int rows = m.pair_condim[p] == 1 ? 1 : 4;
    T f[3] = {0, 0, 0};
    if (r + rows <= nefc) {
      if (rows == 1) {
        f[0] = d.efc_force[r];
      } else {
        const T mu = m.pair_friction[p];
        f[0] = d.efc_force[r] + d.efc_force[r + 1] + d.efc_force[r + 2] + d.efc_force[r + 3];
        f[1] = mu * (d.efc_force[r] - d.efc_force[r + 1]);
        f[2] = mu * (d.efc_force[r + 2] - d.efc_force[r + 3]);
      }
    }
    for (int k = 0; k < 3; ++k) d.con_force[3 * c + k] = f[k];
    r += rows;
  }
}

}  // namespace gmi::physics

#pragma once
// Joint limits as MuJoCo's soft constraints, solved exactly (to a tolerance) by projected Gauss-Seidel on the
// dual. A hinge or slide joint with limited = true whose distance to a range end r is negative gets one
// constraint row J = +1 (lower end) or -1 (upper end) on its dof, with
//   reference acceleration  aref = -b (J qvel) - k imp(r) r,  b = 2 / (dmax tc), k = 1 / (dmax^2 tc^2 dr^2),
//   regularizer             R = (1 - imp) / imp * invweight0,  tc = max(solref[0], 2 timestep), dr = solref[1],
// imp(r) the solimp impedance curve, and the force f >= 0 minimising 1/2 f'(A + R) f + f'(J a0 - aref),
// A = J M^-1 J', a0 the unconstrained acceleration. MuJoCo's Newton solver minimises the same convex problem.

#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/factor.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics {

// solimp = (dmin, dmax, width, midpoint, power): impedance at violation depth |r|, kept inside (0, 1).
template <class T>
GMI_HD inline T impedance(const T* solimp, T r) {
  const T dmin = solimp[0], dmax = solimp[1], width = solimp[2], mid = solimp[3], power = solimp[4];
  T imp = dmax;
  const T x = fabs(r) / width;
  if (width > T(1e-15) && x < T(1)) {
    T y;
    if (power == T(1)) {
      y = x;
    } else if (x <= mid) {
      y = pow(x, power) / pow(mid, power - T(1));
    } else {
      y = T(1) - pow(T(1) - x, power) / pow(T(1) - mid, power - T(1));
    }
    imp = dmin + y * (dmax - dmin);
  }
  imp = imp < T(1e-4) ? T(1e-4) : imp;
  return imp > T(0.9999) ? T(0.9999) : imp;
}

// Signed row of joint j's active limit (+1 lower, -1 upper) and its distance r < 0; 0 when inactive.
template <class T>
GMI_HD inline int limit_side(const model_view<T>& m, const data<T>& d, int j, T& r) {
  if (!m.jnt_limited[j]) return 0;
  const int type = m.jnt_type[j];
  if (type != joint_hinge && type != joint_slide) return 0;
  const T q = d.qpos[m.jnt_qposadr[j]];
  const T lower = q - m.jnt_range[2 * j], upper = m.jnt_range[2 * j + 1] - q;
  if (lower < T(0) && lower <= upper) {
    r = lower;
    return 1;
  }
  if (upper < T(0)) {
    r = upper;
    return -1;
  }
  return 0;
}

// qfrc_constraint from the active limits. qacc_smooth holds M^-1 times the smooth forces (it may be
// qfrc_constraint itself: it is read before that is written); needs qLDc.
template <class T>
GMI_HD void limit_forces(const model_view<T>& m, const data<T>& d, strided<T> qacc_smooth, int iterations) {
  const int nj = m.size.njnt;
  int active = 0;
  for (int j = 0; j < nj; ++j) {
    T r = 0;
    const int side = limit_side(m, d, j, r);
    if (!side) {
      d.efc_force[j] = 0;
      continue;
    }
    ++active;
    const int v = m.jnt_dofadr[j];
    const T* solref = m.jnt_solref + 2 * j;
    const T* solimp = m.jnt_solimp + 5 * j;
    const T dmax = solimp[1];
    const T tc = solref[0] > 2 * m.timestep ? solref[0] : 2 * m.timestep;
    const T b = T(2) / (dmax * tc);
    const T k = T(1) / (dmax * dmax * tc * tc * solref[1] * solref[1]);
    const T imp = impedance(solimp, r);
    const T aref = -b * (side * d.qvel[v]) - k * imp * r;
    d.efc_rhs[j] = side * qacc_smooth[v] - aref;
    const T reg = (T(1) - imp) / imp * m.dof_invweight0[v];
    d.efc_R[j] = reg > T(1e-15) ? reg : T(1e-15);
  }
  // A between active slots: column of M^-1 for each active dof.
  for (int j = 0; j < nj; ++j) {
    T r = 0;
    const int sj = limit_side(m, d, j, r);
    if (!sj) continue;
    for (int i = 0; i < m.size.nv; ++i) d.efc_col[i] = 0;
    d.efc_col[m.jnt_dofadr[j]] = T(sj);
    solve(m, d.qLDc, d.efc_col);
    for (int i = 0; i < nj; ++i) {
      const int si = limit_side(m, d, i, r);
      d.efc_A[nj * i + j] = si ? si * d.efc_col[m.jnt_dofadr[i]] : T(0);
    }
  }
  const T tol = sizeof(T) == 8 ? T(1e-14) : T(1e-7);
  for (int it = 0; active && it < iterations; ++it) {
    T change = 0, scale = 0;
    for (int j = 0; j < nj; ++j) {
      T r = 0;
      if (!limit_side(m, d, j, r)) continue;
      T residual = d.efc_rhs[j] + d.efc_R[j] * d.efc_force[j];
      for (int i = 0; i < nj; ++i) residual += d.efc_A[nj * j + i] * d.efc_force[i];
      T f = d.efc_force[j] - residual / (d.efc_A[nj * j + j] + d.efc_R[j]);
      f = f > T(0) ? f : T(0);
      const T delta = fabs(f - d.efc_force[j]);
      change = delta > change ? delta : change;
      scale = f > scale ? f : scale;
      d.efc_force[j] = f;
    }
    if (change <= tol * (T(1) + scale)) break;
  }
  for (int i = 0; i < m.size.nv; ++i) d.qfrc_constraint[i] = 0;
  for (int j = 0; j < nj; ++j) {
    T r = 0;
    const int side = limit_side(m, d, j, r);
    if (side) d.qfrc_constraint[m.jnt_dofadr[j]] += side * d.efc_force[j];
  }
}

}  // namespace gmi::physics

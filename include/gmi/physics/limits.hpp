#pragma once
// Joint limits as MuJoCo's soft constraints. A hinge or slide joint with limited = true whose distance to a
// range end r is negative gets one constraint row J = +1 (lower end) or -1 (upper end) on its dof, with
//   reference acceleration  aref = -b (J qvel) - k imp(r) r,  b = 2 / (dmax tc), k = 1 / (dmax^2 tc^2 dr^2),
//   regularizer             R = (1 - imp) / imp * invweight0,  tc = max(solref[0], 2 timestep), dr = solref[1],
// imp(r) the solimp impedance curve; constraints.hpp solves all rows together.

#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>
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

// MuJoCo's reference-acceleration gains for solref = (timeconst, dampratio) and impedance width dmax:
// aref = -b v - k imp r with b = 2 / (dmax tc), k = 1 / (dmax^2 tc^2 dr^2), tc at least two time steps.
template <class T>
GMI_HD inline void reference_gains(const model_view<T>& m, const T* solref, const T* solimp, T& k, T& b) {
  const T dmax = solimp[1];
  const T tc = solref[0] > 2 * m.timestep ? solref[0] : 2 * m.timestep;
  b = T(2) / (dmax * tc);
  k = T(1) / (dmax * dmax * tc * tc * solref[1] * solref[1]);
}

// Row `row` for joint j's active limit (side and distance r from limit_side).
template <class T>
GMI_HD void limit_row(const model_view<T>& m, const data<T>& d, int j, int side, T r, int row) {
  const int nv = m.size.nv;
  const int v = m.jnt_dofadr[j];
  for (int i = 0; i < nv; ++i) d.efc_J[row * nv + i] = 0;
  d.efc_J[row * nv + v] = T(side);
  const T* solimp = m.jnt_solimp + 5 * j;
  T k, b;
  reference_gains(m, m.jnt_solref + 2 * j, solimp, k, b);
  const T imp = impedance(solimp, r);
  d.efc_aref[row] = -b * (side * d.qvel[v]) - k * imp * r;
  const T reg = (T(1) - imp) / imp * m.dof_invweight0[v];
  d.efc_R[row] = reg > T(1e-15) ? reg : T(1e-15);
  d.efc_key[row] = T(j);
  d.efc_block[row] = 1;
}

// Appends one row per active limit to the constraint rows (constraints.hpp): J = +-1 on the joint's dof.
template <class T>
GMI_HD void add_limit_rows(const model_view<T>& m, const data<T>& d) {
  for (int j = 0; j < m.size.njnt; ++j) {
    T r = 0;
    const int side = limit_side(m, d, j, r);
    const int row = static_cast<int>(d.nefc[0]);
    if (!side || row >= m.size.nefc_max) continue;
    limit_row(m, d, j, side, r, row);
    d.nefc[0] = T(row + 1);
  }
}

}  // namespace gmi::physics

#pragma once
// The mass matrix's L'DL factorization along the kinematic tree (Featherstone's LTDL: no fill-in beyond the
// ancestor rows) and solves with it. In the factor, row i's first entry holds D_i and the others L's entries.

#include <gmi/core/hd.hpp>
#include <gmi/physics/math.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics {

// One elimination of the factorization: row i (an ancestor of dof k, whose entry in row k sits at pk) loses
// a = qLD[pk] / D_k times row k's entries for its own columns; returns a, which the caller stores at pk once no
// other ancestor's elimination reads row k any more. Rows of different ancestors are disjoint, so the
// eliminations of one k can run side by side.
template <class T>
GMI_HD inline T eliminate_into(const model_view<T>& m, strided<T> qLD, int k, int i, int pk) {
  const T a = qLD[pk] / qLD[m.dof_Madr[k]];
  int pi = m.dof_Madr[i], pkj = pk;
  for (int j = i; j >= 0; j = m.dof_parent[j]) qLD[pi++] -= a * qLD[pkj++];
  return a;
}

// qLD = factor of qM + diag(add) (add may be null): H = L' D L with L unit lower triangular.
template <class T>
GMI_HD void factor(const model_view<T>& m, strided<T> qM, strided<T> qLD, const T* add, T add_scale) {
  for (int k = 0; k < m.size.nM; ++k) qLD[k] = qM[k];
  if (add) {
    for (int i = 0; i < m.size.nv; ++i) qLD[m.dof_Madr[i]] += add_scale * add[i];
  }
  for (int k = m.size.nv - 1; k >= 0; --k) {
    // eliminate_into's steps with D_k read once for all of k's ancestors (the same arithmetic).
    const T dk = qLD[m.dof_Madr[k]];
    int pk = m.dof_Madr[k] + 1;
    for (int i = m.dof_parent[k]; i >= 0; i = m.dof_parent[i], ++pk) {
      const T a = qLD[pk] / dk;
      int pi = m.dof_Madr[i], pkj = pk;
      for (int j = i; j >= 0; j = m.dof_parent[j]) qLD[pi++] -= a * qLD[pkj++];
      qLD[pk] = a;
    }
  }
}

// Entries of row k of the mass matrix: dof k and its ancestors, so a dof's ancestors all have shorter rows.
template <class T>
GMI_HD inline int dof_row_length(const model_view<T>& m, int k) {
  return (k + 1 < m.size.nv ? m.dof_Madr[k + 1] : m.size.nM) - m.dof_Madr[k];
}

// x = H^-1 x in place, H factored by factor().
template <class T>
GMI_HD void solve(const model_view<T>& m, strided<T> qLD, strided<T> x) {
  for (int k = m.size.nv - 1; k >= 0; --k) {
    // A zero entry changes no ancestor (up to the sign of a zero): a constraint row's Jacobian is zero off the
    // chains of its bodies, so this pass touches only those chains.
    const T xk = x[k];
    if (xk == T(0)) continue;
    int pk = m.dof_Madr[k] + 1;
    for (int i = m.dof_parent[k]; i >= 0; i = m.dof_parent[i]) x[i] -= qLD[pk++] * xk;
  }
  // D^-1, then L^-1 (ancestors come first, so each x[i] read is final): x[k] held in a register, stored once.
  for (int k = 0; k < m.size.nv; ++k) {
    T xk = x[k] / qLD[m.dof_Madr[k]];
    int pk = m.dof_Madr[k] + 1;
    for (int i = m.dof_parent[k]; i >= 0; i = m.dof_parent[i]) xk -= qLD[pk++] * x[i];
    x[k] = xk;
  }
}

}  // namespace gmi::physics

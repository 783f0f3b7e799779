#pragma once
// Composite-rigid-body algorithm: subtree inertias and from them the joint-space mass matrix, armature on its
// diagonal. The matrix is stored as MuJoCo does: row i holds dof i and then each ancestor dof, nearest first,
// starting at dof_Madr[i]; entries between dofs of different branches are zero and not stored.

#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/kinematics.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics {

// Subtree inertias (crb) from the body inertias.
template <class T>
GMI_HD void composite_inertias(const model_view<T>& m, const data<T>& d) {
  for (int k = 0; k < 10 * m.size.nbody; ++k) d.crb[k] = d.cinert[k];
  // Children come after their parents, so one backward sweep accumulates whole subtrees. Trees stop at the
  // world: its composite inertia is never used (each tree has its own reference point).
  for (int b = m.size.nbody - 1; b > 0; --b) {
    const int p = m.body_parent[b];
    if (p == 0) continue;
    for (int k = 0; k < 10; ++k) d.crb[10 * p + k] += d.crb[10 * b + k];
  }
}

// Row i of the mass matrix (dof i and its ancestors) from the subtree inertias.
template <class T>
GMI_HD void mass_matrix_row(const model_view<T>& m, const data<T>& d, int i) {
  const spatial<T> f = inertia_mul(d.crb, m.dof_bodyid[i], load6(d.cdof, i));
  int at = m.dof_Madr[i];
  for (int j = i; j >= 0; j = m.dof_parent[j]) d.qM[at++] = dot(load6(d.cdof, j), f);
  d.qM[m.dof_Madr[i]] += m.dof_armature[i];
}

template <class T>
GMI_HD void mass_matrix(const model_view<T>& m, const data<T>& d) {
  composite_inertias(m, d);
  for (int i = 0; i < m.size.nv; ++i) mass_matrix_row(m, d, i);
}

}  // namespace gmi::physics

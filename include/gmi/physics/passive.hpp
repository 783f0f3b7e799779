#pragma once
// Passive forces: joint damping (-b qvel; the Euler step also treats it implicitly, see step.hpp) and hinge and
// slide springs (-k (q - springref)). Armature is not a force: it sits on the mass matrix's diagonal (crb.hpp).

#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics {

// Joint j's spring (hinge and slide) on its dof, after the damping term.
template <class T>
GMI_HD inline void joint_spring(const model_view<T>& m, const data<T>& d, int j) {
  const int type = m.jnt_type[j];
  if ((type == joint_hinge || type == joint_slide) && m.jnt_stiffness[j] != T(0)) {
    const int a = m.jnt_qposadr[j];
    d.qfrc_passive[m.jnt_dofadr[j]] -= m.jnt_stiffness[j] * (d.qpos[a] - m.qpos_spring[a]);
  }
}

template <class T>
GMI_HD void passive_forces(const model_view<T>& m, const data<T>& d) {
  for (int i = 0; i < m.size.nv; ++i) d.qfrc_passive[i] = -m.dof_damping[i] * d.qvel[i];
  for (int j = 0; j < m.size.njnt; ++j) joint_spring(m, d, j);
}

}  // namespace gmi::physics

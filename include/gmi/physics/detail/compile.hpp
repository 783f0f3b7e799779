#pragma once
// The loader's second pass, as MuJoCo's model compiler: sizes, qpos/dof addresses, each tree's root, the dof
// tree (parent dof, sparse mass-matrix rows), reference and spring positions, and the diagonal of M^-1 at qpos0
// that scales constraint regularizers.

#include <vector>

#include <gmi/physics/crb.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/factor.hpp>
#include <gmi/physics/kinematics.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics::detail {

inline void compile(model<double>& m, const std::vector<double>& ref, const std::vector<double>& springref) {
  model_sizes& s = m.size;
  s.nbody = static_cast<int>(m.body_parent.size());
  s.njnt = static_cast<int>(m.jnt_type.size());
  s.ngeom = static_cast<int>(m.geom_type.size());
  s.nsite = static_cast<int>(m.site_bodyid.size());
  s.nu = static_cast<int>(m.actuator_joint.size());
  m.body_root.assign(s.nbody, 0);
  for (int b = 1; b < s.nbody; ++b) m.body_root[b] = m.body_parent[b] == 0 ? b : m.body_root[m.body_parent[b]];
  m.body_dofadr.assign(s.nbody, 0);
  m.body_dofnum.assign(s.nbody, 0);
  s.nq = s.nv = 0;
  m.jnt_qposadr.clear();
  m.jnt_dofadr.clear();
  m.dof_bodyid.clear();
  m.dof_jntid.clear();
  for (int b = 0; b < s.nbody; ++b) {
    m.body_dofadr[b] = s.nv;
    for (int j = m.body_jntadr[b]; j < m.body_jntadr[b] + m.body_jntnum[b]; ++j) {
      const int type = m.jnt_type[j];
      m.jnt_qposadr.push_back(s.nq);
      m.jnt_dofadr.push_back(s.nv);
      const int nq = type == joint_free ? 7 : type == joint_ball ? 4 : 1;
      const int nv = type == joint_free ? 6 : type == joint_ball ? 3 : 1;
      for (int i = 0; i < nv; ++i) m.dof_bodyid.push_back(b), m.dof_jntid.push_back(j);
      s.nq += nq;
      s.nv += nv;
    }
    m.body_dofnum[b] = s.nv - m.body_dofadr[b];
  }
  // A body's first dof hangs from the last dof of its nearest ancestor that has dofs.
  m.dof_parent.assign(s.nv, -1);
  for (int b = 1; b < s.nbody; ++b) {
    for (int k = 0; k < m.body_dofnum[b]; ++k) {
      const int i = m.body_dofadr[b] + k;
      if (k > 0) {
        m.dof_parent[i] = i - 1;
        continue;
      }
      for (int a = m.body_parent[b]; a > 0; a = m.body_parent[a]) {
        if (m.body_dofnum[a] > 0) {
          m.dof_parent[i] = m.body_dofadr[a] + m.body_dofnum[a] - 1;
          break;
        }
      }
    }
  }
  m.dof_Madr.assign(s.nv, 0);
  s.nM = 0;
  for (int i = 0; i < s.nv; ++i) {
    m.dof_Madr[i] = s.nM;
    for (int j = i; j >= 0; j = m.dof_parent[j]) ++s.nM;
  }
  m.qpos0.assign(s.nq, 0);
  m.qpos_spring.assign(s.nq, 0);
  for (int j = 0; j < s.njnt; ++j) {
    const int a = m.jnt_qposadr[j];
    const int b = m.jnt_bodyid[j];
    if (m.jnt_type[j] == joint_free) {
      for (int i = 0; i < 3; ++i) m.qpos0[a + i] = m.body_pos[3 * b + i];
      for (int i = 0; i < 4; ++i) m.qpos0[a + 3 + i] = m.body_quat[4 * b + i];
      for (int i = 0; i < 7; ++i) m.qpos_spring[a + i] = m.qpos0[a + i];
    } else if (m.jnt_type[j] == joint_ball) {
      m.qpos0[a] = m.qpos_spring[a] = 1;
    } else {
      m.qpos0[a] = ref[j];
      m.qpos_spring[a] = springref[j];
    }
  }
  // M at qpos0: its inverse's diagonal, averaged over each ball and each free joint's translations and rotations
  // as MuJoCo does.
  m.dof_invweight0.assign(s.nv, 0);
  const model_view<double> v = m.view();
  const data_layout layout = make_layout(s);
  std::vector<double> buffer(layout.reals_per_env, 0.0);
  const data<double> d = data_of(layout, buffer.data(), 1, 0);
  for (int i = 0; i < s.nq; ++i) d.qpos[i] = m.qpos0[i];
  kinematics(v, d);
  com_frames(v, d);
  mass_matrix(v, d);
  factor(v, d.qM, d.qLD, static_cast<const double*>(nullptr), 0.0);
  std::vector<double> diag(s.nv);
  for (int i = 0; i < s.nv; ++i) {
    for (int k = 0; k < s.nv; ++k) d.efc_col[k] = k == i ? 1.0 : 0.0;
    solve(v, d.qLD, d.efc_col);
    diag[i] = d.efc_col[i];
  }
  for (int j = 0; j < s.njnt; ++j) {
    const int a = m.jnt_dofadr[j];
    const int type = m.jnt_type[j];
    auto average = [&](int from, int count) {
      double sum = 0;
      for (int i = from; i < from + count; ++i) sum += diag[i];
      for (int i = from; i < from + count; ++i) m.dof_invweight0[i] = sum / count;
    };
    if (type == joint_free) {
      average(a, 3);
      average(a + 3, 3);
    } else if (type == joint_ball) {
      average(a, 3);
    } else {
      m.dof_invweight0[a] = diag[a];
    }
  }
}

}  // namespace gmi::physics::detail

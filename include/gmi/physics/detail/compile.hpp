#pragma once
// The loader's second pass, as MuJoCo's model compiler: sizes, qpos/dof addresses, each tree's root and weld
// body, the dof tree (parent dof, sparse mass-matrix rows), reference and spring positions, the geom pairs that
// may collide (and so the contact capacity), and the inverse weights at qpos0 that scale constraint regularizers.

#include <algorithm>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>

#include <gmi/physics/crb.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/factor.hpp>
#include <gmi/physics/kinematics.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics::detail {

// Most contacts a pair of geom types makes at once (0: no collider; refused if the pair may collide).
inline int contacts_per_pair(int t1, int t2) {
  if (t1 == geom_plane) return t2 == geom_sphere ? 1 : t2 == geom_capsule ? 2 : t2 == geom_box ? 4 : 0;
  if (t1 == geom_sphere) return t2 == geom_sphere || t2 == geom_capsule || t2 == geom_box ? 1 : 0;
  if (t1 == geom_capsule) return t2 == geom_capsule || t2 == geom_box ? 2 : 0;
  if (t1 == geom_box) return t2 == geom_box ? 9 : 0;  // 8 vertices of two faces' overlap, and the deepest corner
  return 0;
}

inline const char* geom_type_name(int t) {
  return t == geom_plane     ? "plane"
         : t == geom_sphere  ? "sphere"
         : t == geom_capsule ? "capsule"
         : t == geom_box     ? "box"
                             : "cylinder";
}

// The pairs MuJoCo's filters let collide: compatible contype/conaffinity, different weld bodies, not a weld body
// and its parent's (the world excepted). geom_where names each geom's file:line for refusals.
inline void collision_pairs(model<double>& m, const std::vector<std::string>& geom_where, int nconmax) {
  m.pair_geom1.clear();
  m.pair_geom2.clear();
  m.pair_condim.clear();
  m.pair_friction.clear();
  m.pair_solref.clear();
  m.pair_solimp.clear();
  int ncon = 0, nefc = 0;
  for (int a = 0; a < m.size.ngeom; ++a) {
    for (int b = a + 1; b < m.size.ngeom; ++b) {
      if (!(m.geom_contype[a] & m.geom_conaffinity[b]) && !(m.geom_contype[b] & m.geom_conaffinity[a])) continue;
      const int wa = m.body_weldid[m.geom_bodyid[a]], wb = m.body_weldid[m.geom_bodyid[b]];
      if (wa == wb) continue;
      if (wa && wb && (wa == m.body_weldid[m.body_parent[wb]] || wb == m.body_weldid[m.body_parent[wa]])) continue;
      int g1 = a, g2 = b;
      if (m.geom_type[g1] > m.geom_type[g2]) std::swap(g1, g2);
      const int most = contacts_per_pair(m.geom_type[g1], m.geom_type[g2]);
      if (most == 0) {
        throw gmi::config_error(geom_where[g2] + ": <geom> collision " + geom_type_name(m.geom_type[g1]) + "-" +
                                geom_type_name(m.geom_type[g2]) + " with the geom at " + geom_where[g1] +
                                ": got a pair gmi cannot collide, need plane-sphere/capsule/box, sphere-sphere/capsule/box, "
                                "capsule-capsule/box or box-box (or contype/conaffinity that exclude the pair)");
      }
      const int condim = std::max(m.geom_condim[g1], m.geom_condim[g2]);
      m.pair_geom1.push_back(g1);
      m.pair_geom2.push_back(g2);
      m.pair_condim.push_back(condim);
      m.pair_friction.push_back(std::max(1e-5, std::max(m.geom_friction[3 * g1], m.geom_friction[3 * g2])));
      m.pair_solref.insert(m.pair_solref.end(), {0.02, 1.0});
      m.pair_solimp.insert(m.pair_solimp.end(), {0.9, 0.95, 0.001, 0.5, 2.0});
      ncon += most;
      nefc += most * (condim == 1 ? 1 : 4);
    }
  }
  m.size.npair = static_cast<int>(m.pair_geom1.size());
  if (nconmax > 0 && nconmax < ncon) {
    // A cap below the worst case: rows for that many contacts of the largest dimension.
    ncon = nconmax;
    nefc = 4 * nconmax;
  }
  m.size.ncon_max = ncon;
  int limited = 0;
  for (int j = 0; j < m.size.njnt; ++j) limited += m.jnt_limited[j] ? 1 : 0;
  m.size.nefc_max = nefc + limited;
}

inline void compile(model<double>& m, const std::vector<double>& ref, const std::vector<double>& springref,
                    const std::vector<std::string>& geom_where, int nconmax) {
  model_sizes& s = m.size;
  s.nbody = static_cast<int>(m.body_parent.size());
  s.njnt = static_cast<int>(m.jnt_type.size());
  s.ngeom = static_cast<int>(m.geom_type.size());
  s.nsite = static_cast<int>(m.site_bodyid.size());
  s.nu = static_cast<int>(m.actuator_joint.size());
  m.body_root.assign(s.nbody, 0);
  m.body_weldid.assign(s.nbody, 0);
  for (int b = 1; b < s.nbody; ++b) m.body_weldid[b] = m.body_jntnum[b] > 0 ? b : m.body_weldid[m.body_parent[b]];
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
  collision_pairs(m, geom_where, nconmax);
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
  // Per body: J M^-1 J' for the centre of mass's translation and the body's rotation, diagonals averaged.
  m.body_invweight0.assign(2 * s.nbody, 0.0);
  std::vector<double> jac(6 * static_cast<std::size_t>(s.nv)), col(s.nv);
  for (int b = 1; b < s.nbody; ++b) {
    const int weld = m.body_weldid[b];
    if (weld == 0 || s.nv == 0) continue;
    std::fill(jac.begin(), jac.end(), 0.0);
    const vec3<double> offset = load3(d.xipos, b) - reference_point(v, d, b);
    for (int i = m.body_dofadr[weld] + m.body_dofnum[weld] - 1; i >= 0; i = m.dof_parent[i]) {
      const spatial<double> sp = load6(d.cdof, i);
      const vec3<double> lin = sp.v + cross(sp.w, offset);
      const double rows[6] = {lin.x, lin.y, lin.z, sp.w.x, sp.w.y, sp.w.z};
      for (int r = 0; r < 6; ++r) jac[r * s.nv + i] = rows[r];
    }
    double diag6[6];
    for (int r = 0; r < 6; ++r) {
      for (int i = 0; i < s.nv; ++i) d.efc_col[i] = jac[r * s.nv + i];
      solve(v, d.qLD, d.efc_col);
      diag6[r] = 0;
      for (int i = 0; i < s.nv; ++i) diag6[r] += jac[r * s.nv + i] * d.efc_col[i];
    }
    m.body_invweight0[2 * b] = (diag6[0] + diag6[1] + diag6[2]) / 3;
    m.body_invweight0[2 * b + 1] = (diag6[3] + diag6[4] + diag6[5]) / 3;
  }
}

}  // namespace gmi::physics::detail

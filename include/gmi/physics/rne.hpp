#pragma once
// Velocity stage and bias forces: body spatial velocities and dof-motion derivatives, then recursive
// Newton-Euler with zero joint acceleration and gravity entered as an upward acceleration of the world, which
// gives qfrc_bias = C(q, v) v + g(q).

#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/kinematics.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics {

// Body b's cvel and its dofs' cdof_dot from its parent's cvel. A dof's axis moves with the frame it is fixed in,
// so its derivative uses the velocity accumulated before the dof's own joint (a ball's three axes all use the
// velocity before the ball; its own rotation adds nothing since w x w = 0), as MuJoCo's velocity stage does.
template <class T>
GMI_HD void body_velocity(const model_view<T>& m, const data<T>& d, int b) {
  spatial<T> v = load6(d.cvel, m.body_parent[b]);
  for (int j = m.body_jntadr[b]; j < m.body_jntadr[b] + m.body_jntnum[b]; ++j) {
    const int a = m.jnt_dofadr[j];
    const int type = m.jnt_type[j];
    int first = a, count = 1;
    if (type == joint_free) {
      const spatial<T> zero{{0, 0, 0}, {0, 0, 0}};
      for (int i = 0; i < 3; ++i) {
        store6(d.cdof_dot, a + i, zero);
        v = v + d.qvel[a + i] * load6(d.cdof, a + i);
      }
      first = a + 3;
      count = 3;
    } else if (type == joint_ball) {
      count = 3;
    }
    for (int i = first; i < first + count; ++i) store6(d.cdof_dot, i, cross_motion(v, load6(d.cdof, i)));
    for (int i = first; i < first + count; ++i) v = v + d.qvel[i] * load6(d.cdof, i);
  }
  store6(d.cvel, b, v);
}

// cvel and cdof_dot of every body, parents first.
template <class T>
GMI_HD void velocities(const model_view<T>& m, const data<T>& d) {
  for (int k = 0; k < 6; ++k) d.cvel[k] = 0;
  for (int b = 1; b < m.size.nbody; ++b) body_velocity(m, d, b);
}

// Body b's acceleration (from its parent's; zero joint accelerations) and its own force I a + v x* I v, before
// its children's forces are added.
template <class T>
GMI_HD void body_bias_force(const model_view<T>& m, const data<T>& d, int b) {
  spatial<T> a = load6(d.cacc, m.body_parent[b]);
  for (int i = m.body_dofadr[b]; i < m.body_dofadr[b] + m.body_dofnum[b]; ++i) {
    a = a + d.qvel[i] * load6(d.cdof_dot, i);
  }
  store6(d.cacc, b, a);
  const spatial<T> v = load6(d.cvel, b);
  store6(d.cfrc, b, inertia_mul(d.cinert, b, a) + cross_force(v, inertia_mul(d.cinert, b, v)));
}

// The world's acceleration: gravity entered as an upward acceleration.
template <class T>
GMI_HD void world_acceleration(const model_view<T>& m, const data<T>& d) {
  store6(d.cacc, 0, spatial<T>{{0, 0, 0}, {-m.gravity[0], -m.gravity[1], -m.gravity[2]}});
}

// qfrc_bias from cvel and cdof_dot.
template <class T>
GMI_HD void bias_forces(const model_view<T>& m, const data<T>& d) {
  world_acceleration(m, d);
  for (int b = 1; b < m.size.nbody; ++b) body_bias_force(m, d, b);
  for (int b = m.size.nbody - 1; b > 0; --b) {
    const int p = m.body_parent[b];
    if (p == 0) continue;
    store6(d.cfrc, p, load6(d.cfrc, p) + load6(d.cfrc, b));
  }
  for (int i = 0; i < m.size.nv; ++i) d.qfrc_bias[i] = dot(load6(d.cdof, i), load6(d.cfrc, m.dof_bodyid[i]));
}

}  // namespace gmi::physics

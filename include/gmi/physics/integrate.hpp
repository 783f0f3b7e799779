#pragma once
// Integration, as MuJoCo's Euler integrator does it: velocities first (qvel += h qacc), then positions with the
// new velocities. Hinge and slide positions add h qdot; free translations add h v (world frame); ball and free
// orientations turn by the rotation vector h w about the body's own axes (q <- normalize(q) * exp(h w / 2)).

#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/math.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics {

// q <- normalize(q) * rotation by |w| h about w / |w|.
template <class T>
GMI_HD inline quat<T> integrate_quat(quat<T> q, vec3<T> w, T h) {
  const T n = norm(w);
  quat<T> turn{1, 0, 0, 0};
  if (n > T(0)) turn = axis_angle(T(1) / n * w, h * n);
  return normalized(q) * turn;
}

// Joint j's positions from its velocities.
template <class T>
GMI_HD void integrate_joint(const model_view<T>& m, strided<T> qpos, strided<T> qvel, T h, int j) {
  int a = m.jnt_qposadr[j];
  int v = m.jnt_dofadr[j];
  const int type = m.jnt_type[j];
  if (type == joint_hinge || type == joint_slide) {
    qpos[a] += h * qvel[v];
    return;
  }
  if (type == joint_free) {
    for (int i = 0; i < 3; ++i) qpos[a + i] += h * qvel[v + i];
    a += 3;
    v += 3;
  }
  const quat<T> q = integrate_quat(quat<T>{qpos[a], qpos[a + 1], qpos[a + 2], qpos[a + 3]},
                                   vec3<T>{qvel[v], qvel[v + 1], qvel[v + 2]}, h);
  qpos[a] = q.w;
  qpos[a + 1] = q.x;
  qpos[a + 2] = q.y;
  qpos[a + 3] = q.z;
}

template <class T>
GMI_HD void integrate_positions(const model_view<T>& m, strided<T> qpos, strided<T> qvel, T h) {
  for (int j = 0; j < m.size.njnt; ++j) integrate_joint(m, qpos, qvel, h, j);
}

}  // namespace gmi::physics

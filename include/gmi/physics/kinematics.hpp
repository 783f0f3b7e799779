#pragma once
// Position stages: forward kinematics (body frames, centres of mass, joint anchors and axes from qpos) and the
// quantities about each tree's reference point that the dynamics needs (body spatial inertias, dof motions).
// Conventions are MuJoCo's: hinge and slide positions count from qpos0; ball and free orientations are
// quaternions relative to the body frame; free translations are world coordinates; ball and free rotational
// dofs turn about the body's own axes.

#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/math.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics {

// Body b's frame, centre of mass and its joints' anchors and axes from its parent's frame (world coordinates).
template <class T>
GMI_HD void body_frame(const model_view<T>& m, const data<T>& d, int b) {
  const int p = m.body_parent[b];
  mat3<T> rp;
  for (int k = 0; k < 9; ++k) rp.m[k] = d.xmat[9 * p + k];
  vec3<T> pos = load3(d.xpos, p) + rp * get3(m.body_pos, b);
  quat<T> q = load4(d.xquat, p) * get4(m.body_quat, b);
  for (int j = m.body_jntadr[b]; j < m.body_jntadr[b] + m.body_jntnum[b]; ++j) {
    const int a = m.jnt_qposadr[j];
    const int type = m.jnt_type[j];
    if (type == joint_free) {
      pos = vec3<T>{d.qpos[a], d.qpos[a + 1], d.qpos[a + 2]};
      q = normalized(quat<T>{d.qpos[a + 3], d.qpos[a + 4], d.qpos[a + 5], d.qpos[a + 6]});
      store3(d.xanchor, j, pos);
      store3(d.xaxis, j, vec3<T>{0, 0, 1});
      continue;
    }
    const mat3<T> r = to_mat(q);
    const vec3<T> local_anchor = get3(m.jnt_pos, j);
    const vec3<T> anchor = pos + r * local_anchor;
    const vec3<T> axis = r * get3(m.jnt_axis, j);
    store3(d.xanchor, j, anchor);
    store3(d.xaxis, j, axis);
    if (type == joint_slide) {
      pos = pos + (d.qpos[a] - m.qpos0[a]) * axis;
      continue;
    }
    if (type == joint_hinge) {
      q = q * axis_angle(get3(m.jnt_axis, j), d.qpos[a] - m.qpos0[a]);
    } else {  // ball
      q = q * normalized(quat<T>{d.qpos[a], d.qpos[a + 1], d.qpos[a + 2], d.qpos[a + 3]});
    }
    // Rotation about the anchor, not the frame origin.
    pos = anchor - to_mat(q) * local_anchor;
  }
  q = normalized(q);
  const mat3<T> r = to_mat(q);
  store3(d.xpos, b, pos);
  store4(d.xquat, b, q);
  for (int k = 0; k < 9; ++k) d.xmat[9 * b + k] = r.m[k];
  store3(d.xipos, b, pos + r * get3(m.body_ipos, b));
}

// The world body's frame (identity at the origin).
template <class T>
GMI_HD void world_frame(const data<T>& d) {
  store3(d.xpos, 0, vec3<T>{0, 0, 0});
  store4(d.xquat, 0, quat<T>{1, 0, 0, 0});
  store3(d.xipos, 0, vec3<T>{0, 0, 0});
  const mat3<T> eye = to_mat(quat<T>{1, 0, 0, 0});
  for (int k = 0; k < 9; ++k) d.xmat[k] = eye.m[k];
}

// Body frames, centres of mass, joint anchors and axes, all in world coordinates.
template <class T>
GMI_HD void kinematics(const model_view<T>& m, const data<T>& d) {
  world_frame(d);
  for (int b = 1; b < m.size.nbody; ++b) body_frame(m, d, b);
}

// Bodies between b and the world (a child of the world has depth 1): bodies of one depth depend only on
// shallower ones, so tree passes can run a depth at a time.
template <class T>
GMI_HD inline int body_depth(const model_view<T>& m, int b) {
  int depth = 0;
  for (; b > 0; b = m.body_parent[b]) ++depth;
  return depth;
}

// x[p] += x[c] (width reals each) for every child c of body p, highest index first: the order in which a
// backward sweep over the bodies (b = nbody - 1 .. 1, x[parent(b)] += x[b]) adds them, so a depth-at-a-time
// pass, deepest parents first, gives the same sums.
template <class T>
GMI_HD inline void add_children(const model_view<T>& m, strided<T> x, int width, int p) {
  for (int c = m.size.nbody - 1; c > p; --c) {
    if (m.body_parent[c] != p) continue;
    for (int k = 0; k < width; ++k) x[width * p + k] += x[width * c + k];
  }
}

// Each tree (the subtree of a child of the world) is described about one point, its root body's frame origin,
// so spatial quantities stay small wherever the tree wanders.
template <class T>
GMI_HD inline vec3<T> reference_point(const model_view<T>& m, const data<T>& d, int body) {
  return load3(d.xpos, m.body_root[body]);
}

// Body b's spatial inertia about its tree's reference point (cinert: I xx yy zz xy xz yz, m c, m).
template <class T>
GMI_HD void body_inertia(const model_view<T>& m, const data<T>& d, int b) {
  mat3<T> r;
  for (int k = 0; k < 9; ++k) r.m[k] = d.xmat[9 * b + k];
  const T* ib = m.body_inertia + 6 * b;  // body axes
  // I_world = R I_body R^T
  T full[9] = {ib[0], ib[3], ib[4], ib[3], ib[1], ib[5], ib[4], ib[5], ib[2]};
  T ri[9], iw[9];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      ri[3 * i + j] = r.m[3 * i] * full[j] + r.m[3 * i + 1] * full[3 + j] + r.m[3 * i + 2] * full[6 + j];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      iw[3 * i + j] = ri[3 * i] * r.m[3 * j] + ri[3 * i + 1] * r.m[3 * j + 1] + ri[3 * i + 2] * r.m[3 * j + 2];
  const T mass = m.body_mass[b];
  const vec3<T> c = load3(d.xipos, b) - reference_point(m, d, b);
  const T cc = dot(c, c);
  // Parallel axis: I_ref = I_com + m (|c|^2 1 - c c^T)
  d.cinert[10 * b + 0] = iw[0] + mass * (cc - c.x * c.x);
  d.cinert[10 * b + 1] = iw[4] + mass * (cc - c.y * c.y);
  d.cinert[10 * b + 2] = iw[8] + mass * (cc - c.z * c.z);
  d.cinert[10 * b + 3] = iw[1] - mass * c.x * c.y;
  d.cinert[10 * b + 4] = iw[2] - mass * c.x * c.z;
  d.cinert[10 * b + 5] = iw[5] - mass * c.y * c.z;
  d.cinert[10 * b + 6] = mass * c.x;
  d.cinert[10 * b + 7] = mass * c.y;
  d.cinert[10 * b + 8] = mass * c.z;
  d.cinert[10 * b + 9] = mass;
}

// The motion of joint j's dofs at unit speed (cdof).
template <class T>
GMI_HD void dof_motions(const model_view<T>& m, const data<T>& d, int j) {
  const int b = m.jnt_bodyid[j];
  const int v = m.jnt_dofadr[j];
  const vec3<T> ref = reference_point(m, d, b);
  const vec3<T> anchor = load3(d.xanchor, j);
  const vec3<T> zero{0, 0, 0};
  const int type = m.jnt_type[j];
  if (type == joint_slide) {
    store6(d.cdof, v, spatial<T>{zero, load3(d.xaxis, j)});
  } else if (type == joint_hinge) {
    const vec3<T> axis = load3(d.xaxis, j);
    store6(d.cdof, v, spatial<T>{axis, cross(axis, ref - anchor)});
  } else {
    int rot = v;
    if (type == joint_free) {
      for (int i = 0; i < 3; ++i) {
        const vec3<T> e{T(i == 0), T(i == 1), T(i == 2)};
        store6(d.cdof, v + i, spatial<T>{zero, e});
      }
      rot = v + 3;
    }
    // Rotations about the body's final axes (MuJoCo assumes no later rotation within the body).
    for (int i = 0; i < 3; ++i) {
      const vec3<T> axis{d.xmat[9 * b + i], d.xmat[9 * b + 3 + i], d.xmat[9 * b + 6 + i]};
      store6(d.cdof, rot + i, spatial<T>{axis, cross(axis, ref - anchor)});
    }
  }
}

// Body spatial inertias about their tree's reference point and the motion of every dof at unit speed.
template <class T>
GMI_HD void com_frames(const model_view<T>& m, const data<T>& d) {
  for (int k = 0; k < 10; ++k) d.cinert[k] = 0;
  for (int b = 1; b < m.size.nbody; ++b) body_inertia(m, d, b);
  for (int j = 0; j < m.size.njnt; ++j) dof_motions(m, d, j);
}

// f = I v for a spatial inertia stored as in cinert.
template <class T>
GMI_HD inline spatial<T> inertia_mul(strided<T> in, int b, spatial<T> v) {
  const T s[6] = {in[10 * b], in[10 * b + 1], in[10 * b + 2], in[10 * b + 3], in[10 * b + 4], in[10 * b + 5]};
  const vec3<T> mc{in[10 * b + 6], in[10 * b + 7], in[10 * b + 8]};
  const T mass = in[10 * b + 9];
  return {sym_mul(s, v.w) + cross(mc, v.v), mass * v.v - cross(mc, v.w)};
}

}  // namespace gmi::physics

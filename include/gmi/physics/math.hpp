#pragma once
// Small fixed-size algebra for the physics stages, templated on the scalar (double for the MuJoCo checks, float
// on the device): 3-vectors, quaternions (w, x, y, z as MuJoCo stores them), row-major 3x3 matrices, spatial
// motion/force vectors in MuJoCo's (angular; linear) order, and strided views over one environment's arrays.

#include <cmath>

#include <gmi/core/hd.hpp>

namespace gmi::physics {

// Unqualified calls find the float overloads on the host too (nvcc provides them in device code).
using std::cos;
using std::fabs;
using std::pow;
using std::sin;
using std::sqrt;

// One environment's array inside a batch laid out for coalesced access: element k of environment e lives at
// base[k * stride + e], so consecutive environments (threads) read consecutive addresses. stride 1: plain array.
#ifdef GMI_PHYSICS_ACCESS_HOOK
// Host builds that count the pipeline's array accesses (bench/physics/scratch_traffic.cpp) define this macro and
// the hook, gmi::physics::gmi_physics_access.
void gmi_physics_access(const void* address);
#endif

template <class T>
struct strided {
  T* p = nullptr;
  int s = 1;
  GMI_HD T& operator[](int i) const {
#ifdef GMI_PHYSICS_ACCESS_HOOK
    gmi_physics_access(p + static_cast<long long>(i) * s);
#endif
    return p[static_cast<long long>(i) * s];
  }
};

template <class T>
struct vec3 {
  T x, y, z;
};
template <class T>
GMI_HD inline vec3<T> operator+(vec3<T> a, vec3<T> b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
template <class T>
GMI_HD inline vec3<T> operator-(vec3<T> a, vec3<T> b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
template <class T>
GMI_HD inline vec3<T> operator-(vec3<T> a) { return {-a.x, -a.y, -a.z}; }
template <class T>
GMI_HD inline vec3<T> operator*(T k, vec3<T> a) { return {k * a.x, k * a.y, k * a.z}; }
template <class T>
GMI_HD inline T dot(vec3<T> a, vec3<T> b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
template <class T>
GMI_HD inline vec3<T> cross(vec3<T> a, vec3<T> b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
template <class T>
GMI_HD inline T norm(vec3<T> a) { return sqrt(dot(a, a)); }

template <class T>
struct quat {
  T w, x, y, z;
};
template <class T>
GMI_HD inline quat<T> operator*(quat<T> a, quat<T> b) {
  return {a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z, a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
          a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x, a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w};
}
// Unit quaternion; the identity when q is zero (as MuJoCo's normalisation does).
template <class T>
GMI_HD inline quat<T> normalized(quat<T> q) {
  const T n = sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
  if (n < T(1e-15)) return {T(1), T(0), T(0), T(0)};
  const T inv = T(1) / n;
  return {q.w * inv, q.x * inv, q.y * inv, q.z * inv};
}
// Rotation by angle about a unit axis.
template <class T>
GMI_HD inline quat<T> axis_angle(vec3<T> axis, T angle) {
  const T s = sin(angle / 2);
  return {cos(angle / 2), s * axis.x, s * axis.y, s * axis.z};
}

// Row-major 3x3.
template <class T>
struct mat3 {
  T m[9];
};
template <class T>
GMI_HD inline mat3<T> to_mat(quat<T> q) {
  const T ww = q.w * q.w, xx = q.x * q.x, yy = q.y * q.y, zz = q.z * q.z;
  const T wx = q.w * q.x, wy = q.w * q.y, wz = q.w * q.z, xy = q.x * q.y, xz = q.x * q.z, yz = q.y * q.z;
  return {{ww + xx - yy - zz, 2 * (xy - wz), 2 * (xz + wy), 2 * (xy + wz), ww - xx + yy - zz, 2 * (yz - wx),
           2 * (xz - wy), 2 * (yz + wx), ww - xx - yy + zz}};
}
template <class T>
GMI_HD inline vec3<T> operator*(const mat3<T>& a, vec3<T> v) {
  return {a.m[0] * v.x + a.m[1] * v.y + a.m[2] * v.z, a.m[3] * v.x + a.m[4] * v.y + a.m[5] * v.z,
          a.m[6] * v.x + a.m[7] * v.y + a.m[8] * v.z};
}
template <class T>
GMI_HD inline vec3<T> column(const mat3<T>& a, int j) {
  return {a.m[j], a.m[3 + j], a.m[6 + j]};
}

// Symmetric 3x3 stored as xx, yy, zz, xy, xz, yz (MuJoCo's order for cinert).
template <class T>
GMI_HD inline vec3<T> sym_mul(const T* s, vec3<T> v) {
  return {s[0] * v.x + s[3] * v.y + s[4] * v.z, s[3] * v.x + s[1] * v.y + s[5] * v.z,
          s[4] * v.x + s[5] * v.y + s[2] * v.z};
}

// Spatial motion (angular velocity w; linear velocity v of the reference point) or force (torque w about the
// reference point; force v), world axes.
template <class T>
struct spatial {
  vec3<T> w, v;
};
template <class T>
GMI_HD inline spatial<T> operator+(spatial<T> a, spatial<T> b) { return {a.w + b.w, a.v + b.v}; }
template <class T>
GMI_HD inline spatial<T> operator*(T k, spatial<T> a) { return {k * a.w, k * a.v}; }
template <class T>
GMI_HD inline T dot(spatial<T> a, spatial<T> b) { return dot(a.w, b.w) + dot(a.v, b.v); }
// Motion cross motion: the rate of change of m carried along by velocity a.
template <class T>
GMI_HD inline spatial<T> cross_motion(spatial<T> a, spatial<T> m) {
  return {cross(a.w, m.w), cross(a.w, m.v) + cross(a.v, m.w)};
}
// Motion cross force.
template <class T>
GMI_HD inline spatial<T> cross_force(spatial<T> a, spatial<T> f) {
  return {cross(a.w, f.w) + cross(a.v, f.v), cross(a.w, f.v)};
}

// Loads and stores of fixed-size pieces of strided arrays (piece i of width n starts at element n * i).
template <class T>
GMI_HD inline vec3<T> load3(strided<T> a, int i) { return {a[3 * i], a[3 * i + 1], a[3 * i + 2]}; }
template <class T>
GMI_HD inline void store3(strided<T> a, int i, vec3<T> v) { a[3 * i] = v.x; a[3 * i + 1] = v.y; a[3 * i + 2] = v.z; }
template <class T>
GMI_HD inline quat<T> load4(strided<T> a, int i) { return {a[4 * i], a[4 * i + 1], a[4 * i + 2], a[4 * i + 3]}; }
template <class T>
GMI_HD inline void store4(strided<T> a, int i, quat<T> q) {
  a[4 * i] = q.w; a[4 * i + 1] = q.x; a[4 * i + 2] = q.y; a[4 * i + 3] = q.z;
}
template <class T>
GMI_HD inline spatial<T> load6(strided<T> a, int i) {
  return {{a[6 * i], a[6 * i + 1], a[6 * i + 2]}, {a[6 * i + 3], a[6 * i + 4], a[6 * i + 5]}};
}
template <class T>
GMI_HD inline void store6(strided<T> a, int i, spatial<T> s) {
  a[6 * i] = s.w.x; a[6 * i + 1] = s.w.y; a[6 * i + 2] = s.w.z;
  a[6 * i + 3] = s.v.x; a[6 * i + 4] = s.v.y; a[6 * i + 5] = s.v.z;
}
// Plain (unstrided) model arrays.
template <class T>
GMI_HD inline vec3<T> get3(const T* a, int i) { return {a[3 * i], a[3 * i + 1], a[3 * i + 2]}; }
template <class T>
GMI_HD inline quat<T> get4(const T* a, int i) { return {a[4 * i], a[4 * i + 1], a[4 * i + 2], a[4 * i + 3]}; }

}  // namespace gmi::physics

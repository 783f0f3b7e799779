#pragma once
// Box against box by the separating-axis test over the 15 candidate axes (3 face normals of each box, 9 edge
// cross products). The axis of least penetration decides the contacts: a face axis clips the other box's most
// opposed face against the side planes of the reference face (up to 8 points, each kept where it penetrates);
// an edge axis gives one contact between the two closest edges. Face axes win ties against edge axes by 5%,
// so resting faces give face contacts. This is not MuJoCo's box-box routine: contact sets may differ point by
// point, while settled states and total forces agree (tests/physics/mujoco_test.cpp).

#include <gmi/core/hd.hpp>
#include <gmi/physics/math.hpp>

namespace gmi::physics::detail {

template <class T>
struct box {
  vec3<T> c;     // centre
  vec3<T> u[3];  // unit axes
  T h[3];        // half sizes
};

// Half-extent of box b along the unit axis l.
template <class T>
GMI_HD inline T box_radius(const box<T>& b, vec3<T> l) {
  return b.h[0] * fabs(dot(b.u[0], l)) + b.h[1] * fabs(dot(b.u[1], l)) + b.h[2] * fabs(dot(b.u[2], l));
}

// Calls add(pos, normal, dist) for each contact; the normal points from box a to box b.
template <class T, class Add>
GMI_HD void box_box(const box<T>& a, const box<T>& b, Add&& add) {
  const vec3<T> d = b.c - a.c;
  T best = T(-1e30);
  int best_axis = -1;
  vec3<T> best_l{0, 0, 0};
  for (int k = 0; k < 15; ++k) {
    vec3<T> l;
    if (k < 3) {
      l = a.u[k];
    } else if (k < 6) {
      l = b.u[k - 3];
    } else {
      l = cross(a.u[(k - 6) / 3], b.u[(k - 6) % 3]);
      const T n = norm(l);
      if (n < T(1e-6)) continue;  // parallel edges: a face axis covers them
      l = (T(1) / n) * l;
    }
    const T sep = fabs(dot(d, l)) - box_radius(a, l) - box_radius(b, l);
    if (sep > T(0)) return;  // a separating axis: no contact
    const T score = k < 6 ? sep : sep * T(1.05) - T(1e-9);
    if (score > best) {
      best = score;
      best_axis = k;
      best_l = dot(d, l) < T(0) ? -l : l;
    }
  }
  if (best_axis < 0) return;
  const vec3<T> n = best_l;  // from a to b
  if (best_axis >= 6) {
    // Edge against edge: the supporting edge of each box along n, closest points of the two segments.
    const int ia = (best_axis - 6) / 3, ib = (best_axis - 6) % 3;
    vec3<T> pa = a.c, pb = b.c;
    for (int j = 0; j < 3; ++j) {
      if (j != ia) pa = pa + ((dot(a.u[j], n) > T(0) ? T(1) : T(-1)) * a.h[j]) * a.u[j];
      if (j != ib) pb = pb - ((dot(b.u[j], n) > T(0) ? T(1) : T(-1)) * b.h[j]) * b.u[j];
    }
    const vec3<T> ea = a.u[ia], eb = b.u[ib], r = pa - pb;
    const T e = dot(ea, eb), den = T(1) - e * e;
    T s = den > T(1e-12) ? (e * dot(eb, r) - dot(ea, r)) / den : T(0);
    s = s > a.h[ia] ? a.h[ia] : (s < -a.h[ia] ? -a.h[ia] : s);
    T t = dot(eb, r) + e * s;
    t = t > b.h[ib] ? b.h[ib] : (t < -b.h[ib] ? -b.h[ib] : t);
    const vec3<T> qa = pa + s * ea, qb = pb + t * eb;
    const T dist = dot(qb - qa, n);
    add(T(0.5) * (qa + qb), n, dist);
    return;
  }
  // Face: the reference box owns the axis; its face normal nr points at the other (incident) box.
  const bool ref_a = best_axis < 3;
  const box<T>& rb = ref_a ? a : b;
  const box<T>& ib = ref_a ? b : a;
  const int rf = ref_a ? best_axis : best_axis - 3;
  const vec3<T> nr = ref_a ? n : -n;
  const vec3<T> face_c = rb.c + rb.h[rf] * nr;
  // The incident face: the incident box's face most opposed to nr.
  int fi = 0;
  T most = T(0);
  for (int j = 0; j < 3; ++j) {
    const T v = fabs(dot(ib.u[j], nr));
    if (v > most) {
      most = v;
      fi = j;
    }
  }
  const vec3<T> in = (dot(ib.u[fi], nr) > T(0) ? T(-1) : T(1)) * ib.u[fi];
  const int j1 = (fi + 1) % 3, j2 = (fi + 2) % 3;
  const vec3<T> ic = ib.c + ib.h[fi] * in;
  vec3<T> poly[8], next[8];
  int count = 4;
  const T sx[4] = {1, -1, -1, 1}, sy[4] = {1, 1, -1, -1};
  for (int k = 0; k < 4; ++k) poly[k] = ic + (sx[k] * ib.h[j1]) * ib.u[j1] + (sy[k] * ib.h[j2]) * ib.u[j2];
  // Clip against the reference face's four side planes: |dot(p - face_c, u_j)| <= h_j.
  const int r1 = (rf + 1) % 3, r2 = (rf + 2) % 3;
  for (int side = 0; side < 4 && count > 0; ++side) {
    const int j = side < 2 ? r1 : r2;
    const T sgn = side % 2 ? T(-1) : T(1);
    const vec3<T> axis = sgn * rb.u[j];
    const T lim = rb.h[j];
    int out = 0;
    for (int k = 0; k < count; ++k) {
      const vec3<T> p = poly[k], q = poly[(k + 1) % count];
      const T dp = dot(p - face_c, axis) - lim, dq = dot(q - face_c, axis) - lim;
      if (dp <= T(0) && out < 8) next[out++] = p;
      if ((dp < T(0) && dq > T(0)) || (dp > T(0) && dq < T(0))) {
        if (out < 8) next[out++] = p + (dp / (dp - dq)) * (q - p);
      }
    }
    count = out;
    for (int k = 0; k < count; ++k) poly[k] = next[k];
  }
  for (int k = 0; k < count; ++k) {
    const T depth = dot(poly[k] - face_c, nr);  // < 0: below the reference face
    if (depth < T(0)) add(poly[k] - (depth / T(2)) * nr, n, depth);
  }
}

}  // namespace gmi::physics::detail

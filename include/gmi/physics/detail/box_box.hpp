#pragma once
// Box against box, MuJoCo's algorithm (engine_collision_box.c): a separating-axis test over the 3 + 3 face axes
// (box a's first, then b's, for each index) and the 9 edge cross products, keeping the least overlap (an edge axis
// only where it is smaller by a relative 1e-12); then the contacts of that axis in a frame whose z is a face normal
// of the reference box (MuJoCo's face frames, so contacts come in MuJoCo's order):
// - face axis: the other box's deepest corner and its edges lying within 60 degrees of the face (|cos| < 0.5: a
//   corner, an edge or a face); their crossings of the face's four side lines, the face's corners inside that
//   incident face, the incident corners inside the face (the deepest corner always), each kept below the face,
//   midway between the point and the face, at the point's depth;
// - edge axis: box a's face beside its contact edge (the one less aligned with b's edge) and b's face holding b's
//   contact edge, projected on a's face along the normal: crossings of the projected edges with a's face's sides,
//   a's face corners within it and b's corners within a's face, each with its distance along the normal or to the
//   nearest point of the other face.
// Depths are the full penetrations: MuJoCo 2.2.2 reports half the depth on a face axis, which MuJoCo fixed after
// 3.3.7 (commit 8838368, "Fix box-box distance computation"); tests/physics/colliders_mujoco_test.cpp checks both
// paths against 2.2.2 with that factor. A point whose position comes again later is dropped (MuJoCo's collision
// driver does so for box-box). At most 9 contacts (the 8 vertices where two faces overlap, and the deepest corner
// outside them: gmi's capacity for the pair); beyond, in degenerate poses, contacts are dropped (MuJoCo keeps 50).
// Returns 0 (apart), 1 (face axis) or 2 (edge axis).

#include <gmi/core/hd.hpp>
#include <gmi/physics/math.hpp>

namespace gmi::physics::detail {

template <class T>
struct box {
  vec3<T> c;     // centre
  vec3<T> u[3];  // unit axes
  T h[3];        // half sizes
};

// A face frame of box b: face f (0..2: +axis f, 3..5: -axis f-3) has its outward normal as z; x and y are MuJoCo's
// choice of the other two axes for that face.
template <class T>
struct face_frame {
  vec3<T> x, y, z, o;  // axes and the face centre in the world
  T lx, ly;            // the face's half sizes along x and y
  T hz;                // the box's half size along z
  GMI_HD vec3<T> local(vec3<T> w) const { return {dot(w, x), dot(w, y), dot(w, z)}; }  // a direction
  GMI_HD vec3<T> world(vec3<T> l) const { return o + l.x * x + l.y * y + l.z * z; }     // a point from the face
};

template <class T>
GMI_HD inline face_frame<T> face_of(const box<T>& b, int f) {
  // (axis, sign) of x, y, z for each face.
  constexpr signed char table[6][6] = {{2, -1, 1, 1, 0, 1},  {0, 1, 2, -1, 1, 1}, {0, 1, 1, 1, 2, 1},
                                       {2, 1, 1, 1, 0, -1},  {0, 1, 2, 1, 1, -1}, {0, -1, 1, 1, 2, -1}};
  const signed char* t = table[f];
  face_frame<T> r;
  r.x = T(t[1]) * b.u[t[0]];
  r.y = T(t[3]) * b.u[t[2]];
  r.z = T(t[5]) * b.u[t[4]];
  r.lx = b.h[t[0]];
  r.ly = b.h[t[2]];
  r.hz = b.h[t[4]];
  r.o = b.c + r.hz * r.z;
  return r;
}

// Face axis: reference box rb's face f; ib the incident box; flip: the reference box is b (normals point from a).
// Calls visit(frame, normal, point in the frame, depth) for each point MuJoCo keeps (at or below the face).
template <class T, class Visit>
GMI_HD void box_face_points(const box<T>& rb, const box<T>& ib, int f, bool flip, Visit&& visit) {
  const face_frame<T> F = face_of(rb, f);
  const vec3<T> normal = flip ? -F.z : F.z;
  const vec3<T> p = F.local(ib.c - F.o);  // incident centre from the face
  vec3<T> w[3];                           // incident axes in the face frame
  for (int i = 0; i < 3; ++i) w[i] = F.local(ib.u[i]);
  vec3<T> corner = p;  // the deepest incident corner
  for (int i = 0; i < 3; ++i) corner = corner + ((w[i].z < T(0) ? T(1) : T(-1)) * ib.h[i]) * w[i];
  vec3<T> e[2];  // its edges within 60 degrees of the face, as vectors from it (two at most: squares sum to 1)
  int ne = 0;
  for (int i = 0; i < 3; ++i)
    if (fabs(w[i].z) < T(0.5) && ne < 2) e[ne++] = ((w[i].z < T(0) ? T(-2) : T(2)) * ib.h[i]) * w[i];
  auto emit = [&](vec3<T> q) {  // q: a point in the face frame, at or below the face; the contact midway
    if (q.z <= T(0)) visit(F, normal, vec3<T>{q.x, q.y, q.z / 2}, q.z);
  };
  // Crossings of the incident edges with the side lines x = +-lx, y = +-ly.
  vec3<T> start[4], dir[4];
  int nl = 0;
  if (ne >= 1) start[nl] = corner, dir[nl++] = e[0];
  if (ne >= 2) {
    start[nl] = corner, dir[nl++] = e[1];
    start[nl] = corner + e[0], dir[nl++] = e[1];
    start[nl] = corner + e[1], dir[nl++] = e[0];
  }
  const T half[2] = {F.lx, F.ly};
  for (int l = 0; l < nl; ++l) {
    const T s[2] = {start[l].x, start[l].y}, dv[2] = {dir[l].x, dir[l].y};
    for (int q = 0; q < 2; ++q) {
      if (!(fabs(dv[q]) > T(1e-15))) continue;
      for (int side = -1; side <= 1; side += 2) {
        const T t = (T(side) * half[q] - s[q]) / dv[q];
        if (!(t >= T(0) && t <= T(1))) continue;
        if (fabs(s[1 - q] + dv[1 - q] * t) > half[1 - q]) continue;
        emit(start[l] + t * dir[l]);
      }
    }
  }
  if (ne == 2) {
    // The face's corners strictly inside the incident face (parallelogram corner + u e0 + v e1), at its height.
    const T det = e[0].x * e[1].y - e[1].x * e[0].y;
    for (int k = 0; k < 4; ++k) {
      const T cx = k / 2 ? F.lx : -F.lx, cy = k % 2 ? F.ly : -F.ly;
      const T x = cx - corner.x, y = cy - corner.y;
      const T u = (x * e[1].y - y * e[1].x) / det, v = (y * e[0].x - x * e[0].y) / det;
      if (!(u > T(0) && v > T(0) && u < T(1) && v < T(1))) continue;
      emit(vec3<T>{cx, cy, corner.z + u * e[0].z + v * e[1].z});
    }
  }
  // The incident corners strictly inside the face's outline; the deepest always.
  emit(corner);
  const int others = ne == 0 ? 0 : ne == 1 ? 1 : 3;
  for (int k = 0; k < others; ++k) {
    const vec3<T> q = k == 0 ? corner + e[0] : k == 1 ? corner + e[1] : corner + e[0] + e[1];
    if ((q.x > -F.lx) && (q.x < F.lx) && (q.y > -F.ly) && (q.y < F.ly)) emit(q);
  }
}

// Edge axis: a's edge along axis i, b's along axis j; n the unit axis a.u[i] x b.u[j] (unoriented); toward_minus:
// b lies on the -n side of a; side_a, side_b: the bits of the supporting corners' signs (MuJoCo's). Calls visit as
// box_face_points does, for each point MuJoCo keeps.
template <class T, class Visit>
GMI_HD void box_edge_points(const box<T>& a, const box<T>& b, int i, int j, vec3<T> n, bool toward_minus,
                            int side_a, int side_b, const T (&rabs)[3][3], Visit&& visit) {
  int ax1 = j == 0 ? 1 : 0, ax2 = j == 2 ? 0 : 2;  // b's other axes, the one more aligned with a's edge first
  if (j == 2) ax1 = 1;
  if (rabs[i][ax1] < rabs[i][ax2]) {
    const int t = ax1;
    ax1 = ax2;
    ax2 = t;
  }
  int pax1 = i == 0 ? 1 : 0, pax2 = i == 2 ? 0 : 2;  // a's other axes, the one more aligned with b's edge first
  if (i == 2) pax1 = 1;
  if (rabs[pax1][j] < rabs[pax2][j]) {
    const int t = pax1;
    pax1 = pax2;
    pax2 = t;
  }
  const face_frame<T> F = face_of(a, (side_a & (1 << pax2)) ? pax2 : pax2 + 3);
  const vec3<T> rn = F.local(n);
  if (!(fabs(rn.z) > T(1e-15))) return;
  const T innorm = (toward_minus ? T(-1) : T(1)) / rn.z;
  const vec3<T> normal = toward_minus ? -n : n;
  const vec3<T> p = F.local(b.c - F.o);
  const vec3<T> w1 = F.local(b.u[ax1]), w2 = F.local(b.u[ax2]), wj = F.local(b.u[j]);
  const T s1 = (side_b & (1 << ax1)) ? T(1) : T(-1), s2 = (side_b & (1 << ax2)) ? T(1) : T(-1);
  // b's face holding its contact edge (corners 0-1), with the opposite edge (2-3); and along n onto a's face.
  const vec3<T> m0 = p + (s1 * b.h[ax1]) * w1 + (s2 * b.h[ax2]) * w2;
  const vec3<T> m2 = p - (s1 * b.h[ax1]) * w1 + (s2 * b.h[ax2]) * w2;
  const vec3<T> P[4] = {m0 + b.h[j] * wj, m0 - b.h[j] * wj, m2 + b.h[j] * wj, m2 - b.h[j] * wj};
  vec3<T> Q[4];
  for (int k = 0; k < 4; ++k) Q[k] = P[k] + (-P[k].z / rn.z) * rn;
  const vec3<T> q1 = Q[1] - Q[0], q2 = Q[2] - Q[0], u1 = P[1] - P[0], u2 = P[2] - P[0];
  auto emit = [&](vec3<T> q, T depth) { visit(F, normal, q, depth); };
  // Crossings of the projected face's edges with a's face's sides (line starts and directions, projected and not).
  const vec3<T> qs[4] = {Q[0], Q[0], Q[0] + q1, Q[0] + q2}, qd[4] = {q1, q2, q2, q1};
  const vec3<T> us[4] = {P[0], P[0], P[0] + u1, P[0] + u2}, ud[4] = {u1, u2, u2, u1};
  const T half[2] = {F.lx, F.ly};
  int crossings = 0;
  for (int l = 0; l < 4; ++l) {
    const T s[2] = {qs[l].x, qs[l].y}, dv[2] = {qd[l].x, qd[l].y};
    for (int q = 0; q < 2; ++q) {
      if (!(fabs(dv[q]) > T(1e-15))) continue;
      for (int side = -1; side <= 1; side += 2) {
        const T at = T(side) * half[q];
        const T t = (at - s[q]) / dv[q];
        if (!(t >= T(0) && t <= T(1))) continue;
        const T other = s[1 - q] + dv[1 - q] * t;
        if (fabs(other) > half[1 - q]) continue;
        const vec3<T> up = us[l] + t * ud[l];  // the point on b's face
        if (up.z * innorm > T(0)) continue;
        ++crossings;
        const T c[2] = {q == 0 ? at : other, q == 0 ? other : at};
        emit(vec3<T>{(up.x + c[0]) / 2, (up.y + c[1]) / 2, up.z / 2}, up.z * innorm);
      }
    }
  }
  // a's face corners over the projected face (clamped onto it where only one parameter is outside and no edge
  // crossed), with the distance to that point of b's face. As in MuJoCo 2.2.2, a corner that gets that far leaves
  // its squared distance as the divisor of the next corners' parameters (its determinant's variable is reused).
  T det = q1.x * q2.y - q2.x * q1.y;
  int corners = 0;
  for (int k = 0; k < 4; ++k) {
    const T cx = k / 2 ? F.lx : -F.lx, cy = k % 2 ? F.ly : -F.ly;
    const T x = cx - Q[0].x, y = cy - Q[0].y;
    T u = (x * q2.y - y * q2.x) / det, v = (y * q1.x - x * q1.y) / det;
    const bool in_u = u >= T(0) && u <= T(1), in_v = v >= T(0) && v <= T(1);
    if (crossings == 0 ? !in_u && !in_v : !(in_u && in_v)) continue;
    u = u < T(0) ? T(0) : (u > T(1) ? T(1) : u);
    v = v < T(0) ? T(0) : (v > T(1) ? T(1) : v);
    const vec3<T> on_b = P[0] + u * u1 + v * u2;
    const vec3<T> gap = vec3<T>{cx, cy, T(0)} - on_b;
    const T g2 = dot(gap, gap);
    det = g2;
    if (on_b.z > T(0) && g2 > T(0)) continue;
    ++corners;
    emit(T(0.5) * (vec3<T>{cx, cy, T(0)} + on_b), (on_b.z < T(0) ? T(-1) : T(1)) * sqrt(g2));
  }
  // b's face corners over a's face (their projections; near it where no crossing or corner came first), with the
  // distance to a's face.
  for (int k = 0; k < 4; ++k) {
    const T x = Q[k].x, y = Q[k].y;
    const bool out_x = x < -F.lx || x > F.lx, out_y = y < -F.ly || y > F.ly;
    if (crossings > 0 ? out_x || out_y : corners > 0 && out_x && out_y) continue;
    const T cx = x < -F.lx ? -F.lx : (x > F.lx ? F.lx : x), cy = y < -F.ly ? -F.ly : (y > F.ly ? F.ly : y);
    const T along = P[k].z * innorm;
    const T g2 = (x - cx) * (x - cx) + (y - cy) * (y - cy) + along * along;
    if (P[k].z > T(0) && g2 > T(0)) continue;
    emit(vec3<T>{(cx + P[k].x) / 2, (cy + P[k].y) / 2, P[k].z / 2}, (P[k].z < T(0) ? T(-1) : T(1)) * sqrt(g2));
  }
}

// Calls add(pos, normal, dist) for each contact; the normal points from box a to box b. Returns 0, 1 or 2 (above).
template <class T, class Add>
GMI_HD int box_box(const box<T>& a, const box<T>& b, Add&& add) {
  T rot[3][3], rabs[3][3];  // rot[i][j] = a.u[i] . b.u[j]
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      rot[i][j] = dot(a.u[i], b.u[j]);
      rabs[i][j] = fabs(rot[i][j]);
    }
  const vec3<T> d = b.c - a.c;
  T pab[3], pba[3];  // b's centre in a's axes, a's in b's
  for (int i = 0; i < 3; ++i) {
    pab[i] = dot(a.u[i], d);
    pba[i] = -dot(b.u[i], d);
  }
  T least = T(0);
  for (int i = 0; i < 3; ++i) least += T(3) * (a.h[i] + b.h[i]);
  int code = -1;  // 0..5: a's face, 6..11: b's face, 12 + 3 i + j: edges a_i x b_j
  for (int i = 0; i < 3; ++i) {
    T ext_b = 0, ext_a = 0;  // b's extent along a_i, a's along b_i
    for (int k = 0; k < 3; ++k) {
      ext_b += rabs[i][k] * b.h[k];
      ext_a += rabs[k][i] * a.h[k];
    }
    const T c1 = a.h[i] + ext_b - fabs(pab[i]), c2 = b.h[i] + ext_a - fabs(pba[i]);
    if (c1 < T(0) || c2 < T(0)) return 0;
    if (c1 < least) least = c1, code = i + (pab[i] < T(0) ? 3 : 0);
    if (c2 < least) least = c2, code = 6 + i + (pba[i] < T(0) ? 3 : 0);
  }
  const T tiny = sizeof(T) >= 8 ? T(1e-15) : T(1e-6);  // a cross product this short: parallel edges
  vec3<T> edge_n{0, 0, 0};
  bool toward_minus = false;
  int side_a = 0, side_b = 0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      const vec3<T> c = cross(a.u[i], b.u[j]);
      const T len = norm(c);
      if (len < tiny) continue;
      const vec3<T> n = (T(1) / len) * c;
      T nl[3];  // n in a's axes
      for (int k = 0; k < 3; ++k) nl[k] = dot(a.u[k], n);
      const T along = dot(d, n);
      T overlap = -fabs(along);
      for (int k = 0; k < 3; ++k) {
        if (k != i) overlap += a.h[k] * fabs(nl[k]);
        if (k != j) overlap += b.h[k] * rabs[i][3 - k - j] / len;
      }
      if (overlap < T(0)) return 0;
      if (overlap < least * (T(1) - T(1e-12))) {
        least = overlap;
        code = 12 + 3 * i + j;
        edge_n = n;
        toward_minus = along < T(0);
        side_a = side_b = 0;
        for (int k = 0; k < 3; ++k) {
          if (k != i && ((nl[k] > T(0)) != toward_minus)) side_a |= 1 << k;
          // b_k . n = +-rot[i][m] (m the third index; + where k follows j cyclically)
          if (k != j && ((rot[i][3 - k - j] > T(0)) != toward_minus) != ((k - j + 3) % 3 == 1)) side_b |= 1 << k;
        }
      }
    }
  }
  if (code < 0) return 0;
  auto points = [&](auto&& visit) {
    if (code < 6) {
      box_face_points(a, b, code, false, visit);
    } else if (code < 12) {
      box_face_points(b, a, code - 6, true, visit);
    } else {
      box_edge_points(a, b, (code - 12) / 3, (code - 12) % 3, edge_n, toward_minus, side_a, side_b, rabs, visit);
    }
  };
  // As MuJoCo's collision driver does for box-box: a point repeated later (the same position exactly, as where an
  // incident edge lies on a side line) is dropped. The points are generated again for each one instead of stored.
  int index = 0, kept = 0;
  points([&](const face_frame<T>& F, vec3<T> normal, vec3<T> q, T depth) {
    const int me = index++;
    int later = 0;
    bool repeated = false;
    points([&](const face_frame<T>&, vec3<T>, vec3<T> o, T) {
      repeated = repeated || (later > me && o.x == q.x && o.y == q.y && o.z == q.z);
      ++later;
    });
    if (repeated || kept >= 9 || !(depth < T(0))) return;
    ++kept;
    add(F.world(q), normal, depth);
  });
  return code < 12 ? 1 : 2;
}

}  // namespace gmi::physics::detail

#pragma once
// Collision detection for the geom pairs the model lists: plane against sphere, capsule and box, sphere against
// sphere, capsule and box, capsule against capsule and box, box against box (detail/box_box.hpp). The geometry
// follows MuJoCo's colliders (contact point midway between the surfaces, normal from the first geom to the second,
// a capsule's plane contacts at its two end spheres with the capsule axis as first tangent, a box's first four
// corners below the plane in corner order, parallel capsules touching at up to two points, box-box by MuJoCo's
// algorithm with full face depths), so contact sets compare one to one; capsule-box is gmi's own (its contact sets
// may differ from MuJoCo's where settled states agree). Contacts with distance >= 0 are not kept (MuJoCo's
// default margin and gap of 0).

#include <cstdint>

#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/detail/box_box.hpp>
#include <gmi/physics/math.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics {

// The colliders a step compiles: a bit per geom type pair (first type, second type; types below 8). A built-in
// model passes the pairs it has (builtin_sim::colliders), so colliders it never calls (box-box in the humanoid_v4)
// add neither local memory nor registers to its kernels; a pair outside the set makes no contacts.
using collider_set = std::uint64_t;
[[nodiscard]] GMI_HD constexpr collider_set collider_bit(int t1, int t2) {
  return collider_set{1} << (8 * t1 + t2);
}
inline constexpr collider_set all_colliders = ~collider_set{0};
[[nodiscard]] GMI_HD constexpr bool collider_in(collider_set c, int t1, int t2) {
  return (c & collider_bit(t1, t2)) != 0;
}

namespace detail {
// MuJoCo's frame completion: the tangent defaults to world y (z when n is near y), made orthogonal to n; writes
// contact c's point, frame, distance and pair.
template <class T>
GMI_HD inline void store_contact(const data<T>& d, int c, int pair, vec3<T> pos, vec3<T> n, vec3<T> t, T dist) {
  if (norm(t) < T(0.5)) t = (n.y < T(0.5) && n.y > T(-0.5)) ? vec3<T>{0, 1, 0} : vec3<T>{0, 0, 1};
  t = t - dot(n, t) * n;
  const T tn = norm(t);
  t = tn < T(1e-15) ? vec3<T>{1, 0, 0} : (T(1) / tn) * t;
  const vec3<T> b = cross(n, t);
  store3(d.con_pos, c, pos);
  const T f[9] = {n.x, n.y, n.z, t.x, t.y, t.z, b.x, b.y, b.z};
  for (int k = 0; k < 9; ++k) d.con_frame[9 * c + k] = f[k];
  d.con_dist[c] = dist;
  d.con_pair[c] = T(pair);
}

// Appends a pair's contacts at d.ncon while there is room (the serial pipeline).
template <class T>
struct contact_sink {
  const data<T>& d;
  int capacity;
  int pair;
  int added = 0;  // penetrating contacts offered (kept or dropped for room)
  GMI_HD void add(vec3<T> pos, vec3<T> n, vec3<T> t, T dist) {
    if (!(dist < T(0))) return;
    ++added;
    const int c = static_cast<int>(d.ncon[0]);
    if (c >= capacity) return;
    store_contact(d, c, pair, pos, n, t, dist);
    d.ncon[0] = T(c + 1);
  }
};

// Counts a pair's contacts, or writes them from slot `first` on (below capacity): a warp's lanes collide their
// pairs twice, counting, then writing at offsets of a scan over pairs, giving the serial order.
template <class T>
struct slot_sink {
  const data<T>* d;  // null: count only
  int capacity;
  int pair;
  int first;
  int added = 0;
  GMI_HD void add(vec3<T> pos, vec3<T> n, vec3<T> t, T dist) {
    if (!(dist < T(0))) return;
    const int c = first + added++;
    if (d && c < capacity) store_contact(*d, c, pair, pos, n, t, dist);
  }
};

template <class T>
GMI_HD inline mat3<T> geom_mat(const data<T>& d, int g) {
  mat3<T> r;
  for (int k = 0; k < 9; ++k) r.m[k] = d.geom_xmat[9 * g + k];
  return r;
}

// Sphere (centre a, radius ra) against sphere (b, rb); the normal points from a to b.
template <class T, class S>
GMI_HD inline void sphere_sphere(S& out, vec3<T> a, T ra, vec3<T> b, T rb, vec3<T> za, vec3<T> zb) {
  vec3<T> n = b - a;
  const T len = norm(n);
  const T dist = len - ra - rb;
  if (len < T(1e-15)) {
    n = cross(za, zb);  // coincident centres: MuJoCo's fallback
    const T l2 = norm(n);
    n = l2 < T(1e-15) ? vec3<T>{1, 0, 0} : (T(1) / l2) * n;
  } else {
    n = (T(1) / len) * n;
  }
  out.add(a + (ra + dist / 2) * n, n, vec3<T>{0, 0, 0}, dist);
}

template <class T, class S>
GMI_HD inline void plane_sphere(S& out, vec3<T> p, vec3<T> n, vec3<T> c, T r, vec3<T> tangent) {
  const T dist = dot(c - p, n) - r;
  out.add(c - (r + dist / 2) * n, n, tangent, dist);
}

template <class T>
GMI_HD inline T clamp1(T x) { return x > T(1) ? T(1) : (x < T(-1) ? T(-1) : x); }

// Sphere (centre c, radius r) against a box (centre b, rotation rb, half sizes h); the normal points from the
// sphere into the box. Outside the box the nearest box point decides; with the centre inside or on the surface,
// the face nearest to it (the least push out).
template <class T, class S>
GMI_HD inline void sphere_box(S& out, vec3<T> c, T r, vec3<T> b, const mat3<T>& rb, const T* h) {
  const vec3<T> ax[3] = {column(rb, 0), column(rb, 1), column(rb, 2)};
  const vec3<T> rel = c - b;
  T local[3] = {dot(ax[0], rel), dot(ax[1], rel), dot(ax[2], rel)};
  T near[3];
  bool inside = true;
  for (int k = 0; k < 3; ++k) {
    near[k] = local[k] > h[k] ? h[k] : (local[k] < -h[k] ? -h[k] : local[k]);
    inside = inside && near[k] == local[k];
  }
  const vec3<T> nearest = b + near[0] * ax[0] + near[1] * ax[1] + near[2] * ax[2];
  const vec3<T> gap = nearest - c;  // sphere centre to the box's nearest point
  const T len = norm(gap);
  if (!inside && len >= T(1e-15)) {
    const T dist = len - r;
    if (!(dist < T(0))) return;
    const vec3<T> n = (T(1) / len) * gap;
    out.add(c + ((r + len) / 2) * n, n, vec3<T>{0, 0, 0}, dist);
    return;
  }
  // Inside, or on the surface (MuJoCo's test: no gap, to 1e-15): the nearest face.
  int face = 0;
  T least = h[0] - fabs(local[0]);
  for (int k = 1; k < 3; ++k) {
    const T room = h[k] - fabs(local[k]);
    if (room < least) {
      least = room;
      face = k;
    }
  }
  const T side = local[face] < T(0) ? T(-1) : T(1);
  const vec3<T> n = (-side) * ax[face];  // from the sphere into the box: against the nearest face's outward axis
  const T dist = -least - r;
  // Midway between the face point beyond the centre and the sphere's deepest point.
  const vec3<T> on_face = c + (side * least) * ax[face];
  out.add(on_face - (dist / 2) * n, n, vec3<T>{0, 0, 0}, dist);
}
// Capsule (centre c, scaled axis a = half length x unit axis, radius r) against a box, MuJoCo's algorithm: in the
// box's frame, the closest feature pair of the axis segment and the box (an end point over a face, else the
// closest points of the segment and each of the 12 edges), then a second axis point where the capsule lies along
// the box: along the edge or over the face it touches, up to where the box ends under it (the face: up to where
// the other end leaves the face's outline). A sphere of the capsule's radius at each point meets the box
// (sphere_box). One or two contacts.
template <class T, class S>
GMI_HD inline void capsule_box(S& out, vec3<T> c, vec3<T> a, T r, vec3<T> b, const mat3<T>& rb, const T* h) {
  const vec3<T> ax3[3] = {column(rb, 0), column(rb, 1), column(rb, 2)};
  const vec3<T> rel = c - b;
  const T p[3] = {dot(ax3[0], rel), dot(ax3[1], rel), dot(ax3[2], rel)};  // centre in the box's frame
  const T ha[3] = {dot(ax3[0], a), dot(ax3[1], a), dot(ax3[2], a)};       // half axis in the box's frame
  const T hl2 = dot(a, a);
  const int axisdir = (ha[0] > T(0) ? 1 : 0) + (ha[1] > T(0) ? 2 : 0) + (ha[2] > T(0) ? 4 : 0);
  T best = T(2) * (r + sqrt(hl2) + h[0] + h[1] + h[2]);
  T seg = 0, boxpos = 0;  // the axis parameter of the closest point (-1..1); the edge's (-1..1)
  int type = -4;          // -3 / -1: the end at -1 / +1 over a face; 0..8: an edge, 3 x edge clamp + axis clamp
  int face = -1, corner = 0, edge = 0;
  for (int e = -1; e <= 1; e += 2) {
    int clamped = 0, last = -1;
    T d2 = 0;
    for (int k = 0; k < 3; ++k) {
      const T q = p[k] + T(e) * ha[k];
      const T qc = q < -h[k] ? -h[k] : (q > h[k] ? h[k] : q);
      if (qc != q) ++clamped, last = k;
      d2 += (qc - q) * (qc - q);
    }
    if (clamped > 1) continue;
    if (d2 < best) best = d2, seg = T(e), type = e - 2, face = last;
  }
  for (int j = 0; j < 3; ++j) {
    for (int i = 0; i < 8; ++i) {
      if (i & (1 << j)) continue;
      T dif[3];  // the edge's midpoint from the capsule's centre
      for (int k = 0; k < 3; ++k) dif[k] = (k == j ? T(0) : ((i >> k) & 1 ? h[k] : -h[k])) - p[k];
      const T ma = h[j] * h[j], mb = -h[j] * ha[j], mc = hl2;
      const T u = -h[j] * dif[j], v = ha[0] * dif[0] + ha[1] * dif[1] + ha[2] * dif[2];
      const T det = ma * mc - mb * mb;
      if (fabs(det) < T(1e-15)) continue;  // parallel: the edge's ends are other edges' ends
      T x1 = (mc * u - mb * v) / det, x2 = (ma * v - mb * u) / det;  // along the edge, along the axis
      int s1 = 1, s2 = 1;
      if (x1 > T(1)) {
        x1 = 1, s1 = 2, x2 = (v - mb) / mc;
      } else if (x1 < T(-1)) {
        x1 = -1, s1 = 0, x2 = (v + mb) / mc;
      }
      if (x2 > T(1) || x2 < T(-1)) {
        const T sgn = x2 > T(1) ? T(1) : T(-1);
        x2 = sgn, s2 = x2 > T(0) ? 2 : 0;
        x1 = (u - sgn * mb) / ma;
        if (x1 > T(1)) x1 = 1, s1 = 2;
        else if (x1 < T(-1)) x1 = -1, s1 = 0;
      }
      T d2 = 0;
      for (int k = 0; k < 3; ++k) {
        const T g = dif[k] - x2 * ha[k] + (k == j ? h[j] * x1 : T(0));
        d2 += g * g;
      }
      if (d2 < best - T(1e-15)) {
        best = d2, seg = x2, boxpos = x1, type = s1 * 3 + s2, edge = j;
        corner = i + (1 << j) * (s1 == 2 ? 1 : 0);  // the edge's end nearer the closest point (its lower one inside)
      }
    }
  }
  if (type == -4) return;
  T second = -4;  // the second point's parameter from the first (none below -3)
  auto reach = [&](int k) { return T(2) * h[k] / fabs(ha[k]); };  // axis parameter spanning the box along k
  if (type >= 0 && type / 3 != 1) {
    // At a box corner: a second point unless the capsule points at or away from the corner.
    int m = axisdir ^ corner;
    if (m != 0 && m != 7) {
      T mul = 1, de = 1 - seg, dp = 1 + seg;
      if (m == 3 || m == 5 || m == 6) mul = -1, m = 7 - m, dp = 1 - seg, de = 1 + seg;
      const int k = m == 1 ? 0 : m == 2 ? 1 : 2, k1 = (k + 1) % 3, k2 = (k + 2) % 3;
      if (ha[k] * ha[k] / hl2 > T(0.5)) {  // along the edge
        second = de < reach(k) ? de : reach(k);
        second *= mul;
      } else {  // over a face
        second = dp;
        if (reach(k1) < second) second = reach(k1);
        if (reach(k2) < second) second = reach(k2);
        second *= -mul;
      }
    }
  } else if (type >= 0) {
    // Across an edge's middle: a second point where the capsule crosses the edge (an X), not where it ends at it.
    const int m = (axisdir ^ corner) & (7 - (1 << edge));
    if (m == 1 || m == 2 || m == 4) {
      int k1 = (edge + 1) % 3;
      if (fabs(ha[k1]) > fabs(ha[(edge + 2) % 3])) k1 = (edge + 2) % 3;
      const int k2 = 3 - edge - k1;
      const bool up = (m & (1 << k2)) != 0;
      const T mul = up ? T(1) : T(-1);
      second = up ? 1 - seg : 1 + seg;
      if (reach(k2) < second) second = reach(k2);
      const T e2 = (((axisdir & (1 << edge)) != 0) == up) ? 1 - boxpos : 1 + boxpos;
      const T along = h[edge] * e2 / fabs(ha[edge]);
      if (along < second) second = along;
      second *= mul;
    }
  } else if (face >= 0) {
    // An end over a face: towards the other end, until the axis leaves the face's outline.
    const T mul = type == -3 ? T(1) : T(-1);
    second = 2;
    for (int k = 0; k < 3; ++k) {
      if (k == face) continue;
      const T t = p[k] - mul * ha[k];
      const T e1 = (h[k] - t) / ha[k] * mul, e2 = (-h[k] - t) / ha[k] * mul;
      if (e1 > T(0) && e1 < second) second = e1;
      if (e2 > T(0) && e2 < second) second = e2;
    }
    second *= mul;
  }
  sphere_box(out, c + seg * a, r, b, rb, h);
  if (second > T(-3)) sphere_box(out, c + (second + seg) * a, r, b, rb, h);
}
}  // namespace detail

// Geom frames in the world from the body frames.
template <class T>
GMI_HD void geom_frames(const model_view<T>& m, const data<T>& d, int g) {
  const int b = m.geom_bodyid[g];
  mat3<T> rb;
  for (int k = 0; k < 9; ++k) rb.m[k] = d.xmat[9 * b + k];
  store3(d.geom_xpos, g, load3(d.xpos, b) + rb * get3(m.geom_pos, g));
  const mat3<T> rg = to_mat(load4(d.xquat, b) * get4(m.geom_quat, g));
  for (int k = 0; k < 9; ++k) d.geom_xmat[9 * g + k] = rg.m[k];
}

// Radius of a sphere about the geom's centre that holds it, the broad phase's bound; -1: none (a plane, or a type
// without a collider here).
template <class T>
GMI_HD inline T bounding_radius(int type, const T* s) {
  if (type == geom_sphere) return s[0];
  if (type == geom_capsule) return s[0] + s[1];
  if (type == geom_box) return sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
  if (type == geom_cylinder) return sqrt(s[0] * s[0] + s[1] * s[1]);
  return T(-1);
}

// The broad phase: true when pair p can make no contact (kept contacts have distance < 0) because its geoms'
// bounding spheres are apart, or the second geom's sphere lies wholly above the first geom's plane. Reads only the
// centres (and a plane's normal), so the many apart pairs skip the frames and colliders; the bound carries a
// relative margin far above float rounding, so a pair it skips would have made no contact.
template <class T>
GMI_HD inline bool pair_apart(const model_view<T>& m, const data<T>& d, int p) {
  const int g1 = m.pair_geom1[p], g2 = m.pair_geom2[p];
  const T r2 = bounding_radius(m.geom_type[g2], m.geom_size + 3 * g2);
  if (r2 < T(0)) return false;
  const vec3<T> dp = load3(d.geom_xpos, g2) - load3(d.geom_xpos, g1);
  const T slack = T(1) + T(1e-3);
  if (m.geom_type[g1] == geom_plane) {
    const vec3<T> normal{d.geom_xmat[9 * g1 + 2], d.geom_xmat[9 * g1 + 5], d.geom_xmat[9 * g1 + 8]};
    return dot(dp, normal) > r2 * slack;
  }
  const T r1 = bounding_radius(m.geom_type[g1], m.geom_size + 3 * g1);
  if (r1 < T(0)) return false;
  const T reach = (r1 + r2) * slack;
  return dot(dp, dp) > reach * reach;
}

// Pair p's contacts, offered to out (out.add(pos, normal, tangent or zero, dist)), in MuJoCo's order; type pairs
// outside C compile to nothing.
template <collider_set C = all_colliders, class T, class S>
GMI_HD void collide_pair_narrow(const model_view<T>& m, const data<T>& d, int p, S& out) {
  const int g1 = m.pair_geom1[p], g2 = m.pair_geom2[p];
  const int t1 = m.geom_type[g1], t2 = m.geom_type[g2];
  const vec3<T> p1 = load3(d.geom_xpos, g1), p2 = load3(d.geom_xpos, g2);
  const mat3<T> r1 = detail::geom_mat(d, g1), r2 = detail::geom_mat(d, g2);
  const vec3<T> z1 = column(r1, 2), z2 = column(r2, 2);
  const T* s1 = m.geom_size + 3 * g1;
  const T* s2 = m.geom_size + 3 * g2;
  const vec3<T> none{0, 0, 0};
  if (t1 == geom_plane) {
    if (collider_in(C, geom_plane, geom_sphere) && t2 == geom_sphere) {
      detail::plane_sphere(out, p1, z1, p2, s2[0], none);
    } else if (collider_in(C, geom_plane, geom_capsule) && t2 == geom_capsule) {
      const vec3<T> seg = s2[1] * z2;
      detail::plane_sphere(out, p1, z1, p2 + seg, s2[0], z2);
      detail::plane_sphere(out, p1, z1, p2 - seg, s2[0], z2);
    } else if (collider_in(C, geom_plane, geom_box) && t2 == geom_box) {
      const T centre = dot(p2 - p1, z1);
      int found = 0;
      for (int i = 0; i < 8 && found < 4; ++i) {
        const vec3<T> local{(i & 1) ? s2[0] : -s2[0], (i & 2) ? s2[1] : -s2[1], (i & 4) ? s2[2] : -s2[2]};
        const vec3<T> corner = r2 * local;
        const T ldist = dot(z1, corner);
        if (centre + ldist > T(0) || ldist > T(0)) continue;
        ++found;
        const T dist = centre + ldist;
        out.add(p2 + corner - (dist / 2) * z1, z1, none, dist);
      }
    }
  } else if (collider_in(C, geom_box, geom_box) && t1 == geom_box && t2 == geom_box) {
    detail::box<T> a{p1, {column(r1, 0), column(r1, 1), column(r1, 2)}, {s1[0], s1[1], s1[2]}};
    detail::box<T> b{p2, {column(r2, 0), column(r2, 1), column(r2, 2)}, {s2[0], s2[1], s2[2]}};
    detail::box_box(a, b, [&](vec3<T> pos, vec3<T> n, T dist) { out.add(pos, n, none, dist); });
  } else if (collider_in(C, geom_sphere, geom_sphere) && t1 == geom_sphere && t2 == geom_sphere) {
    detail::sphere_sphere(out, p1, s1[0], p2, s2[0], z1, z2);
  } else if (collider_in(C, geom_sphere, geom_box) && t1 == geom_sphere && t2 == geom_box) {
    detail::sphere_box(out, p1, s1[0], p2, r2, s2);
  } else if (collider_in(C, geom_sphere, geom_capsule) && t1 == geom_sphere && t2 == geom_capsule) {
    const vec3<T> axis = s2[1] * z2;
    const T x = detail::clamp1(dot(axis, p1 - p2) / dot(axis, axis));
    detail::sphere_sphere(out, p1, s1[0], p2 + x * axis, s2[0], z1, z2);
  } else if (collider_in(C, geom_capsule, geom_box) && t1 == geom_capsule && t2 == geom_box) {
    detail::capsule_box(out, p1, s1[1] * z1, s1[0], p2, r2, s2);
  } else if (collider_in(C, geom_capsule, geom_capsule) && t1 == geom_capsule && t2 == geom_capsule) {
    // Closest points of the two axis segments (parameters in [-1, 1] along the scaled axes).
    const vec3<T> a1 = s1[1] * z1, a2 = s2[1] * z2, dif = p1 - p2;
    const T ma = dot(a1, a1), mb = -dot(a1, a2), mc = dot(a2, a2);
    const T u = -dot(a1, dif), v = dot(a2, dif);
    const T det = ma * mc - mb * mb;
    if (fabs(det) >= T(1e-15)) {
      T x1 = (mc * u - mb * v) / det, x2 = (ma * v - mb * u) / det;
      if (x1 > T(1)) {
        x1 = 1;
        x2 = (v - mb) / mc;
      } else if (x1 < T(-1)) {
        x1 = -1;
        x2 = (v + mb) / mc;
      }
      if (x2 > T(1)) {
        x2 = 1;
        x1 = detail::clamp1((u - mb) / ma);
      } else if (x2 < T(-1)) {
        x2 = -1;
        x1 = detail::clamp1((u + mb) / ma);
      }
      detail::sphere_sphere(out, p1 + x1 * a1, s1[0], p2 + x2 * a2, s2[0], z1, z2);
    } else {
      // Parallel axes: each end of one against the nearest point of the other, two contacts at most.
      const int before = out.added;
      const T ends[4][2] = {{1, detail::clamp1((v - mb) / mc)}, {-1, detail::clamp1((v + mb) / mc)},
                            {detail::clamp1((u - mb) / ma), 1}, {detail::clamp1((u + mb) / ma), -1}};
      for (int k = 0; k < 4 && out.added - before < 2; ++k) {
        detail::sphere_sphere(out, p1 + ends[k][0] * a1, s1[0], p2 + ends[k][1] * a2, s2[0], z1, z2);
      }
    }
  }
}

// Pair p's contacts after the broad phase (pair_apart): what the pipeline calls.
template <collider_set C = all_colliders, class T, class S>
GMI_HD void collide_pair(const model_view<T>& m, const data<T>& d, int p, S& out) {
  if (pair_apart(m, d, p)) return;
  collide_pair_narrow<C>(m, d, p, out);
}

// Geom frames, then every listed pair's contacts into d.con_* (d.ncon of them), by the colliders in C.
template <collider_set C = all_colliders, class T>
GMI_HD void collide(const model_view<T>& m, const data<T>& d) {
  for (int g = 0; g < m.size.ngeom; ++g) geom_frames(m, d, g);
  d.ncon[0] = 0;
  for (int p = 0; p < m.size.npair; ++p) {
    detail::contact_sink<T> out{d, m.size.ncon_max, p};
    collide_pair<C>(m, d, p, out);
  }
}

}  // namespace gmi::physics

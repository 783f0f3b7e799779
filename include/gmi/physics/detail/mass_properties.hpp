#pragma once
// Mass properties of geoms at uniform density, and their sum into one body's mass, centre of mass and inertia
// (MuJoCo's rules when a body has no <inertial>: each geom's mass is density * volume unless it gives its own
// mass; capsules are a cylinder plus two hemispheres).

#include <array>
#include <cmath>
#include <numbers>
#include <vector>

#include <gmi/physics/math.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics::detail {

// Volume and the principal inertia per unit mass (about the geom's centre, geom axes) of a geom shape.
struct shape_properties {
  double volume = 0;
  std::array<double, 3> unit_inertia{};  // inertia / mass
};

inline shape_properties shape_of(int type, const double* size) {
  constexpr double pi = std::numbers::pi;
  shape_properties s;
  if (type == geom_sphere) {
    const double r = size[0];
    s.volume = 4.0 / 3.0 * pi * r * r * r;
    s.unit_inertia = {0.4 * r * r, 0.4 * r * r, 0.4 * r * r};
  } else if (type == geom_capsule) {
    const double r = size[0], h = 2 * size[1];
    const double sphere = 4.0 / 3.0 * pi * r * r * r, cylinder = pi * r * r * h;
    s.volume = sphere + cylinder;
    // Per unit density, then normalised by the volume.
    const double ixx = cylinder * (3 * r * r + h * h) / 12 + sphere * (0.4 * r * r + h * h / 4 + 3 * h * r / 8);
    const double izz = (cylinder / 2 + 0.4 * sphere) * r * r;
    s.unit_inertia = {ixx / s.volume, ixx / s.volume, izz / s.volume};
  } else if (type == geom_cylinder) {
    const double r = size[0], h = 2 * size[1];
    s.volume = pi * r * r * h;
    s.unit_inertia = {(3 * r * r + h * h) / 12, (3 * r * r + h * h) / 12, r * r / 2};
  } else if (type == geom_box) {
    const double a = 2 * size[0], b = 2 * size[1], c = 2 * size[2];
    s.volume = a * b * c;
    s.unit_inertia = {(b * b + c * c) / 12, (a * a + c * c) / 12, (a * a + b * b) / 12};
  }
  return s;
}

// Accumulates point masses with inertia into a body's mass, centre and inertia about that centre (body axes).
class mass_sum {
 public:
  // A part of mass m at position pos with principal inertia diag turned by q (all in the body frame).
  void add(double m, vec3<double> pos, quat<double> q, std::array<double, 3> diag) {
    parts_.push_back({m, pos, to_mat(q), diag});
  }
  [[nodiscard]] bool empty() const { return parts_.empty(); }

  // mass, centre of mass, inertia about it (xx yy zz xy xz yz).
  void result(double& mass, vec3<double>& com, std::array<double, 6>& inertia) const {
    mass = 0;
    com = {0, 0, 0};
    for (const part& p : parts_) {
      mass += p.m;
      com = com + p.m * p.pos;
    }
    if (mass > 0) com = (1.0 / mass) * com;
    double full[9] = {};
    for (const part& p : parts_) {
      // R diag R^T + m (|d|^2 1 - d d^T)
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
          double v = 0;
          for (int k = 0; k < 3; ++k) v += p.r.m[3 * i + k] * p.diag[k] * p.r.m[3 * j + k];
          full[3 * i + j] += p.m * v;
        }
      }
      const vec3<double> d = p.pos - com;
      const double dv[3] = {d.x, d.y, d.z};
      const double dd = dot(d, d);
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) full[3 * i + j] += p.m * ((i == j ? dd : 0.0) - dv[i] * dv[j]);
      }
    }
    inertia = {full[0], full[4], full[8], full[1], full[2], full[5]};
  }

 private:
  struct part {
    double m;
    vec3<double> pos;
    mat3<double> r;
    std::array<double, 3> diag;  // principal inertia per unit mass
  };
  std::vector<part> parts_;
};

}  // namespace gmi::physics::detail

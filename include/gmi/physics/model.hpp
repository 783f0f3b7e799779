#pragma once
// The physics model: everything about a simulated system that does not change while it runs (tree, joints,
// inertias, geoms, actuators, options), as flat arrays shaped like MuJoCo's mjModel. The host object owns the
// arrays; model_view is a trivially copyable set of pointers that the per-environment stages read, on the host or
// on the device (see batch.cuh for the device copy). Capacities are fixed when the model is loaded.

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include <gmi/core/hd.hpp>

namespace gmi::physics {

// MuJoCo's numbering, so arrays compare one to one with mjModel's.
enum joint_type : int { joint_free = 0, joint_ball = 1, joint_slide = 2, joint_hinge = 3 };
enum geom_type : int { geom_plane = 0, geom_sphere = 2, geom_capsule = 3, geom_cylinder = 5, geom_box = 6 };
enum bias_type : int { bias_none = 0, bias_affine = 1 };

// Sizes of a model: counts of each kind of element.
struct model_sizes {
  int nq = 0;     // generalized positions (free 7, ball 4, hinge and slide 1)
  int nv = 0;     // degrees of freedom (free 6, ball 3, hinge and slide 1)
  int nbody = 0;  // bodies, the world body 0 included
  int njnt = 0;
  int ngeom = 0;
  int nsite = 0;
  int nu = 0;  // actuators
  int nM = 0;  // entries of the sparse mass matrix: for each dof, itself and its ancestor dofs
  int npair = 0;     // geom pairs that may collide (filters applied at load)
  int ncon_max = 0;  // contacts one environment can hold: the most every pair can make at once
  int nefc_max = 0;  // constraint rows: one per limited joint and up to four per contact
};

// Integer arrays: X(name, count per element, element count member of model_sizes).
#define GMI_PHYSICS_INT_FIELDS(X) \
  X(body_parent, 1, nbody)        \
  X(body_root, 1, nbody)          \
  X(body_jntadr, 1, nbody)        \
  X(body_jntnum, 1, nbody)        \
  X(body_dofadr, 1, nbody)        \
  X(body_dofnum, 1, nbody)        \
  X(body_weldid, 1, nbody)        /* nearest ancestor-or-self with joints (0: welded to the world) */ \
  X(jnt_type, 1, njnt)            \
  X(jnt_qposadr, 1, njnt)         \
  X(jnt_dofadr, 1, njnt)          \
  X(jnt_bodyid, 1, njnt)          \
  X(jnt_limited, 1, njnt)         \
  X(dof_bodyid, 1, nv)            \
  X(dof_jntid, 1, nv)             \
  X(dof_parent, 1, nv)            \
  X(dof_Madr, 1, nv)              \
  X(geom_type, 1, ngeom)          \
  X(geom_bodyid, 1, ngeom)        \
  X(geom_contype, 1, ngeom)       \
  X(geom_conaffinity, 1, ngeom)   \
  X(geom_condim, 1, ngeom)        \
  X(site_bodyid, 1, nsite)        \
  X(pair_geom1, 1, npair)         /* the geom of lower type: contact normals point from it */ \
  X(pair_geom2, 1, npair)         \
  X(pair_condim, 1, npair)        /* 1 (frictionless) or 3 (sliding friction, pyramidal cone) */ \
  X(actuator_joint, 1, nu)        \
  X(actuator_biastype, 1, nu)     \
  X(actuator_ctrllimited, 1, nu)  \
  X(actuator_forcelimited, 1, nu)

// Real arrays: X(name, count per element, element count member of model_sizes).
#define GMI_PHYSICS_REAL_FIELDS(X)                                                                       \
  X(body_pos, 3, nbody)           /* frame offset in the parent's frame */                           \
  X(body_quat, 4, nbody)          /* frame orientation relative to the parent */                     \
  X(body_ipos, 3, nbody)          /* centre of mass in the body frame */                             \
  X(body_inertia, 6, nbody)       /* inertia about the centre of mass, body axes: xx yy zz xy xz yz */ \
  X(body_mass, 1, nbody)                                                                             \
  X(body_invweight0, 2, nbody)    /* mean diagonal of J M^-1 J' at the centre of mass, qpos0: translation, rotation */ \
  X(jnt_pos, 3, njnt)             /* anchor in the body frame */                                     \
  X(jnt_axis, 3, njnt)            /* unit axis in the body frame (hinge, slide) */                   \
  X(jnt_range, 2, njnt)                                                                              \
  X(jnt_stiffness, 1, njnt)                                                                          \
  X(jnt_solref, 2, njnt)          /* limit softness: time constant, damping ratio */                 \
  X(jnt_solimp, 5, njnt)          /* limit impedance: d0, dwidth, width, midpoint, power */          \
  X(dof_damping, 1, nv)                                                                              \
  X(dof_armature, 1, nv)                                                                             \
  X(dof_invweight0, 1, nv)        /* diagonal of M^-1 at qpos0: scales constraint regularizers */    \
  X(geom_size, 3, ngeom)                                                                             \
  X(geom_pos, 3, ngeom)                                                                              \
  X(geom_quat, 4, ngeom)                                                                             \
  X(geom_friction, 3, ngeom)                                                                         \
  X(pair_friction, 1, npair)      /* sliding friction: the larger of the two geoms' */               \
  X(pair_solref, 2, npair)                                                                           \
  X(pair_solimp, 5, npair)                                                                           \
  X(site_pos, 3, nsite)                                                                              \
  X(site_quat, 4, nsite)                                                                             \
  X(actuator_gear, 1, nu)         /* the first gear component: hinge and slide transmissions only */ \
  X(actuator_gain, 1, nu)                                                                            \
  X(actuator_bias, 3, nu)         /* force += b0 + b1 * length + b2 * velocity */                    \
  X(actuator_ctrlrange, 2, nu)                                                                       \
  X(actuator_forcerange, 2, nu)                                                                      \
  X(qpos0, 1, nq)                 /* reference configuration (hinge and slide `ref`) */              \
  X(qpos_spring, 1, nq)           /* spring rest positions (`springref`) */

// What the stages read: sizes, options and pointers into one int pool and one real pool.
template <class T>
struct model_view {
  model_sizes size;
  T timestep;
  T gravity[3];
  int iterations;  // Gauss-Seidel sweeps of the constraint solve at most
  T tolerance;     // it stops once no force changes by more than tolerance * (1 + largest force)
#define GMI_PHYSICS_DECLARE_INT(name, width, count) const int* name;
#define GMI_PHYSICS_DECLARE_REAL(name, width, count) const T* name;
  GMI_PHYSICS_INT_FIELDS(GMI_PHYSICS_DECLARE_INT)
  GMI_PHYSICS_REAL_FIELDS(GMI_PHYSICS_DECLARE_REAL)
#undef GMI_PHYSICS_DECLARE_INT
#undef GMI_PHYSICS_DECLARE_REAL
};

// The host model: arrays filled by the loader (mjcf.hpp), names for look-ups, and views over its own pools or
// over a copy of them elsewhere (device memory).
template <class T>
struct model {
  using scalar = T;
  model_sizes size;
  T timestep = T(0.002);
  T gravity[3] = {T(0), T(0), T(-9.81)};
  int iterations = 100;
  T tolerance = T(1e-10);
#define GMI_PHYSICS_DECLARE_INT(name, width, count) std::vector<int> name;
#define GMI_PHYSICS_DECLARE_REAL(name, width, count) std::vector<T> name;
  GMI_PHYSICS_INT_FIELDS(GMI_PHYSICS_DECLARE_INT)
  GMI_PHYSICS_REAL_FIELDS(GMI_PHYSICS_DECLARE_REAL)
#undef GMI_PHYSICS_DECLARE_INT
#undef GMI_PHYSICS_DECLARE_REAL
  std::vector<std::string> body_names, joint_names, geom_names, site_names, actuator_names;

  // Every int array back to back, and every real array: what one copy to the device moves.
  [[nodiscard]] std::vector<int> int_pool() const {
    std::vector<int> out;
#define GMI_PHYSICS_APPEND(name, width, count) out.insert(out.end(), name.begin(), name.end());
    GMI_PHYSICS_INT_FIELDS(GMI_PHYSICS_APPEND)
#undef GMI_PHYSICS_APPEND
    return out;
  }
  [[nodiscard]] std::vector<T> real_pool() const {
    std::vector<T> out;
#define GMI_PHYSICS_APPEND(name, width, count) out.insert(out.end(), name.begin(), name.end());
    GMI_PHYSICS_REAL_FIELDS(GMI_PHYSICS_APPEND)
#undef GMI_PHYSICS_APPEND
    return out;
  }

  // A view whose pointers address pools laid out as int_pool() and real_pool() return them, wherever they live.
  [[nodiscard]] model_view<T> view_of_pools(const int* ints, const T* reals) const {
    model_view<T> v{};
    v.size = size;
    v.timestep = timestep;
    v.iterations = iterations;
    v.tolerance = tolerance;
    for (int i = 0; i < 3; ++i) v.gravity[i] = gravity[i];
    std::size_t at = 0;
#define GMI_PHYSICS_POINT(name, width, count) \
  v.name = ints + at;                         \
  at += name.size();
    GMI_PHYSICS_INT_FIELDS(GMI_PHYSICS_POINT)
#undef GMI_PHYSICS_POINT
    at = 0;
#define GMI_PHYSICS_POINT(name, width, count) \
  v.name = reals + at;                        \
  at += name.size();
    GMI_PHYSICS_REAL_FIELDS(GMI_PHYSICS_POINT)
#undef GMI_PHYSICS_POINT
    return v;
  }

  // A view over this object's own arrays (host stepping).
  [[nodiscard]] model_view<T> view() const {
    model_view<T> v{};
    v.size = size;
    v.timestep = timestep;
    v.iterations = iterations;
    v.tolerance = tolerance;
    for (int i = 0; i < 3; ++i) v.gravity[i] = gravity[i];
#define GMI_PHYSICS_POINT(name, width, count) v.name = name.data();
    GMI_PHYSICS_INT_FIELDS(GMI_PHYSICS_POINT)
    GMI_PHYSICS_REAL_FIELDS(GMI_PHYSICS_POINT)
#undef GMI_PHYSICS_POINT
    return v;
  }

  // The same model in another scalar type (double as loaded, float for the device).
  template <class U>
  [[nodiscard]] model<U> cast() const {
    model<U> out;
    out.size = size;
    out.timestep = U(timestep);
    out.iterations = iterations;
    out.tolerance = U(tolerance) > U(1e-6) ? U(tolerance) : U(1e-6);
    for (int i = 0; i < 3; ++i) out.gravity[i] = U(gravity[i]);
#define GMI_PHYSICS_COPY_INT(name, width, count) out.name = name;
#define GMI_PHYSICS_COPY_REAL(name, width, count) out.name.assign(name.begin(), name.end());
    GMI_PHYSICS_INT_FIELDS(GMI_PHYSICS_COPY_INT)
    GMI_PHYSICS_REAL_FIELDS(GMI_PHYSICS_COPY_REAL)
#undef GMI_PHYSICS_COPY_INT
#undef GMI_PHYSICS_COPY_REAL
    out.body_names = body_names;
    out.joint_names = joint_names;
    out.geom_names = geom_names;
    out.site_names = site_names;
    out.actuator_names = actuator_names;
    return out;
  }

  // Index of a named element, -1 when absent.
  [[nodiscard]] static int find(const std::vector<std::string>& names, const std::string& name) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
};

static_assert(std::is_trivially_copyable_v<model_view<float>>);

}  // namespace gmi::physics

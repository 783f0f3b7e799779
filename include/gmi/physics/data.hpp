#pragma once
// One environment's simulation data, shaped like MuJoCo's mjData: the state (qpos, qvel, ctrl, time) and the
// quantities the forward pipeline computes from it, as strided arrays. A batch of environments keeps every array
// element-major (element k of environment e at k * num_envs + e) so that one thread per environment reads
// coalesced; a single environment is the batch of one.

#include <cstddef>

#include <gmi/core/hd.hpp>
#include <gmi/physics/math.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics {

// Per-environment arrays: X(name, length in reals as an expression of model_sizes s).
#define GMI_PHYSICS_DATA_FIELDS(X)                                                             \
  X(qpos, s.nq)                  /* state: generalized positions */                           \
  X(qvel, s.nv)                  /* state: generalized velocities */                          \
  X(ctrl, s.nu)                  /* input: actuator controls */                               \
  X(qfrc_applied, s.nv)          /* input: generalized forces applied by the user */          \
  X(time, 1)                                                                                  \
  X(qacc, s.nv)                  /* the acceleration the integrator used */                   \
  X(xpos, 3 * s.nbody)           /* body frames in the world */                               \
  X(xquat, 4 * s.nbody)                                                                       \
  X(xmat, 9 * s.nbody)                                                                        \
  X(xipos, 3 * s.nbody)          /* centres of mass in the world */                           \
  X(xanchor, 3 * s.njnt)         /* joint anchors and axes in the world */                    \
  X(xaxis, 3 * s.njnt)                                                                        \
  X(cinert, 10 * s.nbody)        /* body inertia about its tree's reference point */          \
  X(crb, 10 * s.nbody)           /* composite (subtree) inertia, same point */                \
  X(cdof, 6 * s.nv)              /* motion of each dof at unit speed */                       \
  X(cdof_dot, 6 * s.nv)          /* its time derivative */                                    \
  X(cvel, 6 * s.nbody)           /* body spatial velocities */                                \
  X(cacc, 6 * s.nbody)           /* bias accelerations (qacc = 0, gravity as a base lift) */  \
  X(cfrc, 6 * s.nbody)           /* subtree bias forces */                                    \
  X(qM, s.nM)                    /* mass matrix (armature included), MuJoCo's sparse rows */  \
  X(qLD, s.nM)                   /* L'DL factor of qM + timestep * diag(damping) */           \
  X(qfrc_bias, s.nv)             /* Coriolis, centrifugal and gravity forces */               \
  X(qfrc_passive, s.nv)          /* damping and springs */                                    \
  X(qfrc_actuator, s.nv)                                                                      \
  X(qfrc_constraint, s.nv)       /* joint limits and contacts */                              \
  X(actuator_force, s.nu)                                                                     \
  X(qLDc, s.nM)                  /* L'DL factor of qM alone, for the constraint solve */      \
  X(geom_xpos, 3 * s.ngeom)      /* geom frames in the world */                               \
  X(geom_xmat, 9 * s.ngeom)                                                                   \
  X(ncon, 1)                     /* contacts found this step */                               \
  X(con_pos, 3 * s.ncon_max)     /* contact point (midway between the surfaces) */            \
  X(con_frame, 9 * s.ncon_max)   /* normal (geom1 to geom2), then two tangents */             \
  X(con_dist, s.ncon_max)        /* signed distance, < 0 when penetrating */                  \
  X(con_pair, s.ncon_max)        /* index of the geom pair (exact in float below 2^24) */     \
  X(con_force, 3 * s.ncon_max)   /* normal and two friction forces, contact frame */          \
  X(nefc, 1)                     /* constraint rows this step */                              \
  X(efc_J, s.nefc_max * s.nv)    /* rows of the constraint Jacobian */                        \
  X(efc_W, s.nefc_max * s.nv)    /* M^-1 J' per row */                                        \
  X(efc_aref, s.nefc_max)        /* reference acceleration per row */                         \
  X(efc_R, s.nefc_max)           /* regularizer per row */                                    \
  X(efc_AR, s.nefc_max)          /* (J M^-1 J')_ii + R_i */                                   \
  X(efc_force, s.nefc_max)       /* row forces, all >= 0 (limits, pyramid edges) */           \
  X(efc_block, s.nefc_max)       /* rows solved together from here (1 or 4; 0 inside a block) */ \
  X(efc_A4, 4 * s.nefc_max)      /* J M^-1 J' within the row's block */                       \
  X(efc_key, s.nefc_max)         /* row identity, increasing: joint j, or njnt + (pair, contact, edge) */ \
  X(prev_nefc, 1)                /* the previous step's rows, to warm-start the solve */      \
  X(prev_key, s.nefc_max)                                                                     \
  X(prev_force, s.nefc_max)                                                                   \
  X(solver_sweeps, 1)            /* Gauss-Seidel sweeps the last solve took */                \
  X(efc_col, s.nv)               /* scratch: the constrained acceleration during the solve */

// Where each array starts, in reals, within one environment's block.
struct data_layout {
#define GMI_PHYSICS_DECLARE_OFFSET(name, len) std::size_t name = 0;
  GMI_PHYSICS_DATA_FIELDS(GMI_PHYSICS_DECLARE_OFFSET)
#undef GMI_PHYSICS_DECLARE_OFFSET
  std::size_t reals_per_env = 0;
};

[[nodiscard]] GMI_HD constexpr data_layout make_layout(const model_sizes& s) {
  data_layout l;
  std::size_t at = 0;
#define GMI_PHYSICS_PLACE(name, len) \
  l.name = at;                       \
  at += static_cast<std::size_t>(len);
  GMI_PHYSICS_DATA_FIELDS(GMI_PHYSICS_PLACE)
#undef GMI_PHYSICS_PLACE
  l.reals_per_env = at;
  return l;
}

// One environment's arrays within a batch of num_envs environments stored from base (num_envs *
// reals_per_env reals).
template <class T>
struct data {
#define GMI_PHYSICS_DECLARE_ARRAY(name, len) strided<T> name;
  GMI_PHYSICS_DATA_FIELDS(GMI_PHYSICS_DECLARE_ARRAY)
#undef GMI_PHYSICS_DECLARE_ARRAY
};

template <class T>
GMI_HD inline data<T> data_of(const data_layout& l, T* base, int num_envs, int env) {
  data<T> d;
#define GMI_PHYSICS_BIND(name, len) d.name = strided<T>{base + l.name * static_cast<std::size_t>(num_envs) + env, num_envs};
  GMI_PHYSICS_DATA_FIELDS(GMI_PHYSICS_BIND)
#undef GMI_PHYSICS_BIND
  return d;
}

}  // namespace gmi::physics

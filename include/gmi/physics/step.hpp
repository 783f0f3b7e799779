#pragma once
// One environment's forward dynamics and time step, MuJoCo's pipeline order: position stages, velocity stages,
// forces, constraint rows (limits, contacts) and their solve, then the Euler step with joint damping implicit
// (qacc from M + h diag(damping) instead of M, as MuJoCo 2.2's Euler does whenever a dof has damping).

#include <gmi/core/hd.hpp>
#include <gmi/physics/actuation.hpp>
#include <gmi/physics/collision.hpp>
#include <gmi/physics/constraints.hpp>
#include <gmi/physics/crb.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/factor.hpp>
#include <gmi/physics/integrate.hpp>
#include <gmi/physics/kinematics.hpp>
#include <gmi/physics/limits.hpp>
#include <gmi/physics/model.hpp>
#include <gmi/physics/passive.hpp>
#include <gmi/physics/rne.hpp>

namespace gmi::physics {

// The step's stages in order: step() runs them in one call, the staged device path (rl/physics_staged_step.cuh)
// each as its own kernel over a batch whose arrays are element-major in global memory (data.hpp), so that no
// kernel holds the whole step's arrays. Positions: frames, inertias, the mass matrix.
template <class T>
GMI_HD void stage_positions(const model_view<T>& m, const data<T>& d) {
  kinematics(m, d);
  com_frames(m, d);
  mass_matrix(m, d);
}

// Forces and constraint rows (collision, C: the colliders compiled, collision.hpp, runs before it): velocities,
// bias, passive and actuator forces, the unconstrained qacc's numerator, the limit rows then the contact rows.
// Returns the first contact row (the number of limit rows).
template <class T>
GMI_HD int stage_forces(const model_view<T>& m, const data<T>& d) {
  velocities(m, d);
  bias_forces(m, d);
  passive_forces(m, d);
  actuation(m, d);
  const int nv = m.size.nv;
  for (int i = 0; i < nv; ++i) {
    d.qacc[i] = d.qfrc_passive[i] - d.qfrc_bias[i] + d.qfrc_applied[i] + d.qfrc_actuator[i];
  }
  d.nefc[0] = 0;
  add_limit_rows(m, d);
  const int first_contact_row = static_cast<int>(d.nefc[0]);
  add_contact_rows(m, d);
  return first_contact_row;
}

// stage_forces' return value recovered from the rows: limit rows come first, keyed by their joint (< njnt).
template <class T>
GMI_HD int limit_row_count(const model_view<T>& m, const data<T>& d) {
  const int nefc = static_cast<int>(d.nefc[0]);
  int r = 0;
  while (r < nefc && d.efc_key[r] < T(m.size.njnt)) ++r;
  return r;
}

// The constraint solve and qacc: the constraint forces, the contact forces, then qacc with damping implicit.
template <class T>
GMI_HD void stage_solve(const model_view<T>& m, const data<T>& d, int first_contact_row) {
  const int nv = m.size.nv;
  if (d.nefc[0] > T(0)) {
    // The constraint solve sees M alone: its a0 is the explicit unconstrained acceleration, passed in
    // qfrc_constraint's slot, which solve_constraints reads before it writes the forces there.
    factor(m, d.qM, d.qLDc, static_cast<const T*>(nullptr), T(0));
    for (int i = 0; i < nv; ++i) d.qfrc_constraint[i] = d.qacc[i];
    solve(m, d.qLDc, d.qfrc_constraint);
    solve_constraints(m, d, d.qfrc_constraint);
  } else {
    for (int i = 0; i < nv; ++i) d.qfrc_constraint[i] = 0;
    d.prev_nefc[0] = 0;
    d.solver_sweeps[0] = 0;
  }
  contact_forces(m, d, first_contact_row);
  for (int i = 0; i < nv; ++i) d.qacc[i] += d.qfrc_constraint[i];
  factor(m, d.qM, d.qLD, m.dof_damping, m.timestep);
  solve(m, d.qLD, d.qacc);
}

// The semi-implicit Euler step from qacc.
template <class T>
GMI_HD void stage_integrate(const model_view<T>& m, const data<T>& d) {
  const T h = m.timestep;
  for (int i = 0; i < m.size.nv; ++i) d.qvel[i] += h * d.qacc[i];
  integrate_positions(m, d.qpos, d.qvel, h);
  d.time[0] += h;
}

// Everything up to qacc, from qpos, qvel, ctrl and qfrc_applied; C: the colliders compiled (collision.hpp).
template <collider_set C = all_colliders, class T>
GMI_HD void forward(const model_view<T>& m, const data<T>& d) {
  stage_positions(m, d);
  collide<C>(m, d);
  const int first_contact_row = stage_forces(m, d);
  stage_solve(m, d, first_contact_row);
}

// One time step of one environment.
template <collider_set C = all_colliders, class T>
GMI_HD void step(const model_view<T>& m, const data<T>& d) {
  forward<C>(m, d);
  stage_integrate(m, d);
}

// The stages as the staged path runs them, one at a time: k in [0, step_stages) (0 positions, 1 collision,
// 2 forces and rows, 3 solve, 4 integration); running 0 to 4 in order is step<C>.
inline constexpr int step_stages = 5;
template <collider_set C = all_colliders, class T>
GMI_HD void step_stage(int k, const model_view<T>& m, const data<T>& d) {
  if (k == 0) stage_positions(m, d);
  else if (k == 1) collide<C>(m, d);
  else if (k == 2) stage_forces(m, d);
  else if (k == 3) stage_solve(m, d, limit_row_count(m, d));
  else stage_integrate(m, d);
}

}  // namespace gmi::physics

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

// Everything up to qacc, from qpos, qvel, ctrl and qfrc_applied; C: the colliders compiled (collision.hpp).
template <collider_set C = all_colliders, class T>
GMI_HD void forward(const model_view<T>& m, const data<T>& d) {
  kinematics(m, d);
  com_frames(m, d);
  mass_matrix(m, d);
  collide<C>(m, d);
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

// One time step of one environment.
template <collider_set C = all_colliders, class T>
GMI_HD void step(const model_view<T>& m, const data<T>& d) {
  forward<C>(m, d);
  const T h = m.timestep;
  for (int i = 0; i < m.size.nv; ++i) d.qvel[i] += h * d.qacc[i];
  integrate_positions(m, d.qpos, d.qvel, h);
  d.time[0] += h;
}

}  // namespace gmi::physics

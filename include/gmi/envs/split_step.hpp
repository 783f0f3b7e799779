#pragma once
// The physics tasks' env step as its three parts (ant, humanoid, anymal): Task::control (controls, and what the
// reward needs from before the physics), Task::physics_substeps(p) physics steps in scratch local to the call,
// and Task::finish (reward and termination from the new state). The GPU env driver's warp path
// (rl/physics_env_step.cuh) runs the same three parts with the physics over a warp's lanes.

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>

namespace gmi::envs {

template <class Task>
GMI_HD gmi::transition split_step(typename Task::state& s, const float* action, const typename Task::params& p) {
  using sim = typename Task::sim;
  float ctrl[sim::nu > 0 ? sim::nu : 1], carry[Task::carry_dim];
  float scratch[sim::scratch_reals];
  Task::control(s, action, p, ctrl, carry, scratch);
  const gmi::physics::data<float> d =
      sim::simulate(p.model, scratch, s.qpos, s.qvel, ctrl, Task::physics_substeps(p));
  return Task::finish(s, action, carry, d, p, scratch);
}

}  // namespace gmi::envs

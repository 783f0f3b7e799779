#pragma once
// The physics tasks' env step as its three parts (ant_v4, humanoid_v4, anymal): Task::control (controls, and what the
// reward needs from before the physics), Task::physics_substeps(p) physics steps in scratch local to the call,
// and Task::finish (reward and termination from the new state). The GPU env driver's warp path
// (rl/physics_env_step.cuh) runs the same three parts with the physics over a warp's lanes.

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>

namespace gmi::envs {

// The same with the physics in arrays d bound by the caller (physics/thread_shared.hpp's bind_shared puts the
// hottest in shared memory), the others and the task's own scratch in `scratch` (sim::scratch_reals floats).
template <class Task>
GMI_HD gmi::transition split_step_in(typename Task::state& s, const float* action, const typename Task::params& p,
                                     float* scratch, const gmi::physics::data<float>& d) {
  using sim = typename Task::sim;
  float ctrl[sim::nu > 0 ? sim::nu : 1], carry[Task::carry_dim];
  Task::control(s, action, p, ctrl, carry, scratch);
  sim::simulate_in(p.model, d, s.qpos, s.qvel, ctrl, Task::physics_substeps(p));
  return Task::finish(s, action, carry, d, p, scratch);
}

template <class Task>
GMI_HD gmi::transition split_step(typename Task::state& s, const float* action, const typename Task::params& p) {
  using sim = typename Task::sim;
  float scratch[sim::scratch_reals];
  return split_step_in<Task>(s, action, p, scratch, sim::bind(scratch));
}

}  // namespace gmi::envs

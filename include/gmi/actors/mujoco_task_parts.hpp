#pragma once
// The parts the MuJoCo tasks (mujoco_ant.hpp, mujoco_humanoid.hpp, mujoco_anymal.hpp) share: the one-line refusal
// of a model of other sizes, the finiteness of the state, and the copies between mjData (double) and a
// gmi::envs task's float state, so that the tasks can evaluate gmi::physics's own definitions on MuJoCo's state.

#if __has_include(<mujoco/mujoco.h>)
#include <mujoco/mujoco.h>

#include <cmath>
#include <string>

#include <gmi/core/error.hpp>

namespace gmi::actors::mujoco::parts {

// Refuses, in one line, a model whose (nq, nv, nu) are not the task's: "<Task> model sizes (nq, nv, nu): got ...".
inline void require_sizes(const mjModel* m, const std::string& task, int nq, int nv, int nu) {
  require(m->nq == nq && m->nv == nv && m->nu == nu, task + " model sizes (nq, nv, nu)",
          std::to_string(m->nq) + ", " + std::to_string(m->nv) + ", " + std::to_string(m->nu),
          std::to_string(nq) + ", " + std::to_string(nv) + ", " + std::to_string(nu));
}

// Refuses, in one line, a model without a body or geom of that name; returns its id.
inline int require_named(const mjModel* m, const std::string& task, mjtObj type, const char* kind, const char* name) {
  const int id = mj_name2id(m, type, name);
  require(id >= 0, task + " model's " + kind, std::string("none named \"") + name + "\"",
          std::string("a ") + kind + " named \"" + name + "\"");
  return id;
}

[[nodiscard]] inline bool state_finite(const mjModel* m, const mjData* d) noexcept {
  for (int i = 0; i < m->nq; ++i) {
    if (!std::isfinite(d->qpos[i])) return false;
  }
  for (int i = 0; i < m->nv; ++i) {
    if (!std::isfinite(d->qvel[i])) return false;
  }
  return true;
}

// MuJoCo's qpos and qvel into a gmi::envs task state (its float arrays qpos, qvel of the model's sizes).
template <class State>
void to_float(const mjModel* m, const mjData* d, State& s) noexcept {
  for (int i = 0; i < m->nq; ++i) s.qpos[i] = float(d->qpos[i]);
  for (int i = 0; i < m->nv; ++i) s.qvel[i] = float(d->qvel[i]);
}

// A reset state into a fresh mjData (mj_resetData first), then mj_forward so poses and contacts follow qpos.
template <class State>
void start_from(const mjModel* m, mjData* d, const State& s) {
  mj_resetData(m, d);
  for (int i = 0; i < m->nq; ++i) d->qpos[i] = double(s.qpos[i]);
  for (int i = 0; i < m->nv; ++i) d->qvel[i] = double(s.qvel[i]);
  mj_forward(m, d);
}

// frame_skip MuJoCo steps of the controls already set.
inline void substeps(const mjModel* m, mjData* d, int frame_skip) {
  for (int k = 0; k < frame_skip; ++k) mj_step(m, d);
}

}  // namespace gmi::actors::mujoco::parts
#endif

#pragma once
// The parts the MuJoCo tasks (mujoco_ant_v4.hpp, mujoco_humanoid_v4.hpp, mujoco_anymal.hpp) share: the one-line refusal
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

// What mj_resetData sets of everything a later mj_forward or mj_step reads: time 0, qpos0, zero velocities,
// activations, warm start and inputs, the mocap bodies at their model poses, zero userdata (the fields a
// checkpoint saves, mujoco_state.hpp). mj_resetData also clears the rest of mjData's buffer (megabytes where njmax
// is large: Ant's 500 constraint rows), which mj_forward rewrites anyway; after mj_forward the trajectory is the
// same bit for bit (tests/actors/mujoco_reset_test.cpp), at a fraction of the cost of an env step.
inline void reset_data(const mjModel* m, mjData* d) noexcept {
  d->time = 0;
  mju_copy(d->qpos, m->qpos0, m->nq);
  mju_zero(d->qvel, m->nv);
  mju_zero(d->act, m->na);
  mju_zero(d->qacc_warmstart, m->nv);
  mju_zero(d->ctrl, m->nu);
  mju_zero(d->qfrc_applied, m->nv);
  mju_zero(d->xfrc_applied, 6 * m->nbody);
  mju_zero(d->userdata, m->nuserdata);
  for (int b = 0; b < m->nbody; ++b) {
    const int id = m->body_mocapid[b];
    if (id < 0) continue;
    mju_copy3(d->mocap_pos + 3 * id, m->body_pos + 3 * b);
    mju_copy4(d->mocap_quat + 4 * id, m->body_quat + 4 * b);
  }
}

// A reset state into an mjData (reset_data first), then mj_forward so poses, contacts and the warm start follow qpos.
template <class State>
void start_from(const mjModel* m, mjData* d, const State& s) {
  reset_data(m, d);
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

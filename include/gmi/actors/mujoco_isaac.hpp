#pragma once
// Isaac Gym's Ant and Humanoid on MuJoCo, defined as gmi::physics's gmi::envs::ant and
// gmi::envs::humanoid (include/gmi/envs/ant.hpp, humanoid.hpp) on the same model files
// (include/gmi/physics/builtin/ant.xml, humanoid.xml): mujoco::isaac_task<I>. The task's own reset
// (drawn from the env's gmi::rng in the same order), control, observation, reward terms, death cost and
// termination run on MuJoCo's state in float, with the task's substeps (2) of MuJoCo steps per env step; the feet's
// contact force-torque (the observation's foot blocks) are summed from MuJoCo's contacts of the last mj_step
// (mj_contactForce) as isaac_gym::foot_forces sums gmi::physics's. The feet's forces and the last actions live
// beside mjData (task_state_size floats per environment, kept and saved by mujoco::sim). The task's reset reads the
// joint ranges of gmi::physics's model table of the same file, which the task holds.

#if __has_include(<mujoco/mujoco.h>)
#include <mujoco/mujoco.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gmi/actors/mujoco_task_parts.hpp>
#include <gmi/concepts/env.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/envs/ant.hpp>
#include <gmi/envs/humanoid.hpp>

namespace gmi::actors::mujoco {

// MuJoCo's contact force and torque on each foot of task I (I::nfeet, I::foot_of(body)) from d's contacts, world
// frame, the torque about the foot body's origin: ft[6 * foot + 0..2] force, [3..5] torque (isaac_gym::foot_forces).
template <class I, class Real>
void foot_forces(const mjModel* m, const mjData* d, Real* ft) {
  for (int k = 0; k < 6 * I::nfeet; ++k) ft[k] = Real(0);
  for (int c = 0; c < d->ncon; ++c) {
    const mjContact& con = d->contact[c];
    mjtNum f6[6];
    mj_contactForce(m, d, c, f6);
    for (int side = 0; side < 2; ++side) {
      const int body = m->geom_bodyid[side == 0 ? con.geom2 : con.geom1];
      const int foot = I::foot_of(body);
      if (foot < 0) continue;
      double f[3], r[3];
      for (int k = 0; k < 3; ++k) {
        f[k] = (side == 0 ? 1 : -1) * (f6[0] * con.frame[k] + f6[1] * con.frame[3 + k] + f6[2] * con.frame[6 + k]);
        r[k] = con.pos[k] - d->xpos[3 * body + k];
      }
      Real* out = ft + 6 * foot;
      for (int k = 0; k < 3; ++k) out[k] += Real(f[k]);
      out[3] += Real(r[1] * f[2] - r[2] * f[1]);
      out[4] += Real(r[2] * f[0] - r[0] * f[2]);
      out[5] += Real(r[0] * f[1] - r[1] * f[0]);
    }
  }
}

template <class I>
class isaac_task {
 public:
  using definition = I;
  static constexpr int nq = I::sim::nq, nv = I::sim::nv, nj = I::nj, nfeet = I::nfeet;
  static constexpr int obs_size = I::obs_dim, act_size = I::act_dim;
  static constexpr int task_state_size = 6 * nfeet + nj;  // the feet's force-torque, then the last actions
  using params = typename I::params;

  // Refuses a model of other sizes than the task's, in one line.
  isaac_task(const mjModel* m, params p) : m_(m), p_(p), table_(I::make_table(p)) {
    parts::require_sizes(m, I::name, nq, nv, act_size);
    require(p.substeps >= 1, std::string(I::name) + " substeps", p.substeps, ">= 1");
    I::bind_table(p_, table_.data());
  }
  isaac_task(const isaac_task&) = delete;  // p_.model points into table_
  isaac_task& operator=(const isaac_task&) = delete;

  [[nodiscard]] int obs_dim() const noexcept { return obs_size; }
  [[nodiscard]] int act_dim() const noexcept { return act_size; }
  [[nodiscard]] int max_steps() const noexcept { return p_.max_steps; }
  [[nodiscard]] const params& config() const noexcept { return p_; }

  void reset(mjData* d, float* task_state, gmi::rng& r) const {
    typename I::state s;
    I::reset(s, r, p_);
    parts::start_from(m_, d, s);
    keep(s, task_state);
  }

  [[nodiscard]] gmi::transition step(mjData* d, float* task_state, const float* action) const {
    typename I::state s = state_of(d, task_state);
    float ctrl[act_size], carry[I::carry_dim];
    I::control(s, action, p_, ctrl, carry, nullptr);
    for (int u = 0; u < act_size; ++u) d->ctrl[u] = double(ctrl[u]);
    parts::substeps(m_, d, p_.substeps);
    s = state_of(d, task_state);
    float clipped[nj];
    for (int j = 0; j < nj; ++j) s.last_action[j] = clipped[j] = gmi::envs::isaac_gym::clip(action[j]);
    gmi::transition tr{0.0f, true};
    if (!parts::state_finite(m_, d)) {
      for (float& f : s.foot_ft) f = 0.0f;
    } else {
      foot_forces<I>(m_, d, s.foot_ft);
      tr = s.qpos[2] < p_.termination_height ? gmi::transition{p_.death_cost, true}
                                             : gmi::transition{I::terms(s, carry, clipped, p_).sum(), false};
    }
    keep(s, task_state);
    return tr;
  }

  void observe(const mjData* d, const float* task_state, float* obs) const {
    I::observe(state_of(d, task_state), obs, p_);
  }

  [[nodiscard]] typename I::state state_of(const mjData* d, const float* task_state) const noexcept {
    typename I::state s;
    parts::to_float(m_, d, s);
    std::copy_n(task_state, 6 * nfeet, s.foot_ft);
    std::copy_n(task_state + 6 * nfeet, nj, s.last_action);
    return s;
  }

 private:
  static void keep(const typename I::state& s, float* task_state) {
    std::copy_n(s.foot_ft, 6 * nfeet, task_state);
    std::copy_n(s.last_action, nj, task_state + 6 * nfeet);
  }

  const mjModel* m_;
  params p_;
  std::vector<float> table_;
};

using ant = isaac_task<gmi::envs::ant>;
using humanoid = isaac_task<gmi::envs::humanoid>;

}  // namespace gmi::actors::mujoco
#endif

#pragma once
// Actuation: each actuator drives one hinge or slide joint through a gear ratio. The control is clamped to
// ctrlrange when ctrllimited; force = gain * ctrl + b0 + b1 * length + b2 * velocity with length = gear * q and
// velocity = gear * qdot (a motor: gain 1, no bias; a position servo: gain kp, b1 = -kp), clamped to forcerange
// when forcelimited; the joint receives gear * force. These are MuJoCo's rules for its motor and position
// shortcuts with a joint transmission.

#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::physics {

// Actuator u's force (stored in actuator_force) from its control and joint state.
template <class T>
GMI_HD T actuator_force_of(const model_view<T>& m, const data<T>& d, int u) {
  T c = d.ctrl[u];
  if (m.actuator_ctrllimited[u]) {
    c = c < m.actuator_ctrlrange[2 * u] ? m.actuator_ctrlrange[2 * u] : c;
    c = c > m.actuator_ctrlrange[2 * u + 1] ? m.actuator_ctrlrange[2 * u + 1] : c;
  }
  const int j = m.actuator_joint[u];
  const T gear = m.actuator_gear[u];
  const T length = gear * d.qpos[m.jnt_qposadr[j]];
  const T velocity = gear * d.qvel[m.jnt_dofadr[j]];
  T f = m.actuator_gain[u] * c;
  if (m.actuator_biastype[u] == bias_affine) {
    f += m.actuator_bias[3 * u] + m.actuator_bias[3 * u + 1] * length + m.actuator_bias[3 * u + 2] * velocity;
  }
  if (m.actuator_forcelimited[u]) {
    f = f < m.actuator_forcerange[2 * u] ? m.actuator_forcerange[2 * u] : f;
    f = f > m.actuator_forcerange[2 * u + 1] ? m.actuator_forcerange[2 * u + 1] : f;
  }
  d.actuator_force[u] = f;
  return f;
}

// qfrc_actuator from every actuator, in actuator order.
template <class T>
GMI_HD void actuation(const model_view<T>& m, const data<T>& d) {
  for (int i = 0; i < m.size.nv; ++i) d.qfrc_actuator[i] = 0;
  for (int u = 0; u < m.size.nu; ++u) {
    const T f = actuator_force_of(m, d, u);
    d.qfrc_actuator[m.jnt_dofadr[m.actuator_joint[u]]] += m.actuator_gear[u] * f;
  }
}

}  // namespace gmi::physics

#pragma once
// What Isaac Gym's locomotion tasks share (IsaacGymEnvs' Ant and Humanoid), for gmi::envs::ant and
// gmi::envs::humanoid: the observation's first 12 entries (torso height, torso-frame linear and angular
// velocity, yaw, roll and angle to the target, up and heading projections), the progress reward toward the target,
// the heading reward and the feet's contact force-torque from gmi::physics's contacts. Equations: docs/envs.md.

#include <cmath>

#include <gmi/core/hd.hpp>
#include <gmi/physics/data.hpp>
#include <gmi/physics/model.hpp>

namespace gmi::envs::isaac_gym {

// Where the observation's first parts start (both tasks' layouts begin so).
inline constexpr int obs_height = 0, obs_vel = 1, obs_angvel = 4, obs_yaw = 7, obs_roll = 8, obs_angle = 9,
                     obs_up = 10, obs_heading = 11, torso_obs = 12;

GMI_HD inline float clip(float a) { return fminf(fmaxf(a, -1.0f), 1.0f); }

// v in the torso frame: the conjugate of the torso quaternion q (w, x, y, z) applied to a world vector.
GMI_HD inline void to_torso(const float* q, const float* v, float* out) {
  const float w = q[0], ux = -q[1], uy = -q[2], uz = -q[3];
  const float tx = 2.0f * (uy * v[2] - uz * v[1]), ty = 2.0f * (uz * v[0] - ux * v[2]),
              tz = 2.0f * (ux * v[1] - uy * v[0]);
  out[0] = v[0] + w * tx + (uy * tz - uz * ty);
  out[1] = v[1] + w * ty + (uz * tx - ux * tz);
  out[2] = v[2] + w * tz + (ux * ty - uy * tx);
}

// Isaac Gym's progress reward: the change of the potential -(horizontal distance to the target (tx, ty)) / dt over
// a step, from the torso's (x, y) before and after. Computed as (d_before^2 - d_after^2) / (d_before + d_after) / dt
// with the squares' difference factored through the small displacement: float potentials of about -6e4 would
// round it to 4e-3 a step.
GMI_HD inline float progress(const float* xy_before, const float* qpos, float tx, float ty, float dt) {
  const float bx = tx - xy_before[0], by = ty - xy_before[1];
  const float ax = tx - qpos[0], ay = ty - qpos[1];
  const float db = sqrtf(bx * bx + by * by), da = sqrtf(ax * ax + ay * ay);
  const float sum = db + da;
  if (!(sum > 0.0f)) return 0.0f;
  return ((qpos[0] - xy_before[0]) * (bx + ax) + (qpos[1] - xy_before[1]) * (by + ay)) / sum / dt;
}

// The observation's first 12 entries from the free joint's qpos (x, y, z, quaternion) and qvel (world linear,
// torso-frame angular velocity), the angular velocity times angvel_scale, the target at (tx, ty).
GMI_HD inline void observe_torso(const float* qpos, const float* qvel, float angvel_scale, float tx, float ty,
                                 float* obs) {
  const float* q = qpos + 3;
  const float w = q[0], x = q[1], y = q[2], z = q[3];
  obs[obs_height] = qpos[2];
  to_torso(q, qvel, obs + obs_vel);  // the free joint's linear velocity is in the world frame
  for (int k = 0; k < 3; ++k) obs[obs_angvel + k] = angvel_scale * qvel[3 + k];  // torso frame
  const float yaw = atan2f(2.0f * (w * z + x * y), w * w + x * x - y * y - z * z);
  const float roll = atan2f(2.0f * (w * x + y * z), w * w - x * x - y * y + z * z);
  const float dx = tx - qpos[0], dy = ty - qpos[1];
  const float to_target = atan2f(dy, dx) - yaw;
  obs[obs_yaw] = yaw;
  obs[obs_roll] = roll;
  obs[obs_angle] = atan2f(sinf(to_target), cosf(to_target));
  obs[obs_up] = 1.0f - 2.0f * (x * x + y * y);  // z of the torso's up axis
  const float hx = 1.0f - 2.0f * (y * y + z * z), hy = 2.0f * (x * y + w * z);  // the torso's x axis (world x, y)
  const float n = sqrtf(dx * dx + dy * dy);
  obs[obs_heading] = n > 0.0f ? (hx * dx + hy * dy) / n : 0.0f;
}

// The up reward (weight when the up projection exceeds 0.93) and the heading reward (weight above a projection of
// 0.8, in proportion below).
GMI_HD inline float up_reward(const float* torso, float weight) { return torso[obs_up] > 0.93f ? weight : 0.0f; }
GMI_HD inline float heading_reward(const float* torso, float weight) {
  return torso[obs_heading] > 0.8f ? weight : weight * torso[obs_heading] / 0.8f;
}

// Each foot's contact force and torque from the contacts of the last physics step (d): the force on the foot's
// geoms (normal and friction, contact frame to world), summed over its contacts, and the torque of each about the
// foot body's origin, world frame, at the positions that step's contacts were found at. Task::nfeet feet;
// Task::foot_of(body) is a body's foot (its 6 entries in ft) or -1.
template <class Task>
GMI_HD void foot_forces(const gmi::physics::data<float>& d, const gmi::physics::model_view<float>& m, float* ft) {
  for (int k = 0; k < 6 * Task::nfeet; ++k) ft[k] = 0.0f;
  const int ncon = static_cast<int>(d.ncon[0]);
  for (int c = 0; c < ncon; ++c) {
    const int pair = static_cast<int>(d.con_pair[c]);
    for (int side = 0; side < 2; ++side) {
      const int body = m.geom_bodyid[side == 0 ? m.pair_geom2[pair] : m.pair_geom1[pair]];
      const int f = Task::foot_of(body);
      if (f < 0) continue;
      const float sign = side == 0 ? 1.0f : -1.0f;  // the normal points from geom1 to geom2: geom2 is pushed along it
      float force[3], r[3];
      for (int k = 0; k < 3; ++k) {
        force[k] = sign * (d.con_force[3 * c] * d.con_frame[9 * c + k] +
                           d.con_force[3 * c + 1] * d.con_frame[9 * c + 3 + k] +
                           d.con_force[3 * c + 2] * d.con_frame[9 * c + 6 + k]);
        r[k] = d.con_pos[3 * c + k] - d.xpos[3 * body + k];
      }
      float* out = ft + 6 * f;
      for (int k = 0; k < 3; ++k) out[k] += force[k];
      out[3] += r[1] * force[2] - r[2] * force[1];
      out[4] += r[2] * force[0] - r[0] * force[2];
      out[5] += r[0] * force[1] - r[1] * force[0];
    }
  }
}

}  // namespace gmi::envs::isaac_gym

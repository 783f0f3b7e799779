#pragma once
// A 6-DoF rigid body (position, velocity in the world frame; orientation quaternion world-from-body; angular
// velocity in the body frame; diagonal inertia) and its semi-implicit Euler step, shared by the flying tasks.

#include <cmath>

#include <gmi/core/hd.hpp>

namespace gmi::envs::detail {

struct vec3 {
  float x, y, z;
};
GMI_HD inline vec3 operator+(vec3 a, vec3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
GMI_HD inline vec3 operator-(vec3 a, vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
GMI_HD inline vec3 operator*(float k, vec3 a) { return {k * a.x, k * a.y, k * a.z}; }
GMI_HD inline float dot(vec3 a, vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
GMI_HD inline vec3 cross(vec3 a, vec3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }

struct quat {
  float w, x, y, z;
};
// Rotates a body-frame vector into the world frame.
GMI_HD inline vec3 rotate(quat q, vec3 v) {
  const vec3 u{q.x, q.y, q.z};
  const vec3 t = 2.0f * cross(u, v);
  return v + q.w * t + cross(u, t);
}

struct rigid_body {
  vec3 pos, vel;  // world frame
  quat rot;       // world from body
  vec3 ang_vel;   // body frame
};

// One step under a body-frame force and torque plus world gravity (z up): semi-implicit Euler (velocities
// first, then positions and orientation with the new velocities), Euler's equations for the rotation, and the
// quaternion renormalised after each step.
GMI_HD inline void integrate(rigid_body& b, vec3 force_body, vec3 torque_body, float mass, vec3 inertia,
                             float gravity, float dt) {
  const vec3 acc = (1.0f / mass) * rotate(b.rot, force_body) + vec3{0.0f, 0.0f, -gravity};
  b.vel = b.vel + dt * acc;
  b.pos = b.pos + dt * b.vel;
  const vec3 w = b.ang_vel;
  const vec3 iw{inertia.x * w.x, inertia.y * w.y, inertia.z * w.z};
  const vec3 rhs = torque_body - cross(w, iw);
  b.ang_vel = b.ang_vel + dt * vec3{rhs.x / inertia.x, rhs.y / inertia.y, rhs.z / inertia.z};
  const vec3 n = b.ang_vel;
  const quat q = b.rot;
  // dq/dt = q (x) (0, w) / 2
  quat d{-q.x * n.x - q.y * n.y - q.z * n.z, q.w * n.x + q.y * n.z - q.z * n.y, q.w * n.y + q.z * n.x - q.x * n.z,
         q.w * n.z + q.x * n.y - q.y * n.x};
  quat r{q.w + 0.5f * dt * d.w, q.x + 0.5f * dt * d.x, q.y + 0.5f * dt * d.y, q.z + 0.5f * dt * d.z};
  const float inv = 1.0f / sqrtf(r.w * r.w + r.x * r.x + r.y * r.y + r.z * r.z);
  b.rot = {r.w * inv, r.x * inv, r.y * inv, r.z * inv};
}

// The hover reward of Isaac Gym's flying tasks: closeness to the target, uprightness, little spin.
GMI_HD inline float hover_reward(const rigid_body& b, vec3 target) {
  const vec3 e = target - b.pos;
  const float pos_reward = 1.0f / (1.0f + dot(e, e));
  const float up = rotate(b.rot, vec3{0.0f, 0.0f, 1.0f}).z;
  const float tilt = fabsf(1.0f - up);
  const float up_reward = 1.0f / (1.0f + tilt * tilt);
  const float spin = fabsf(b.ang_vel.z);
  const float spin_reward = 1.0f / (1.0f + spin * spin);
  return pos_reward + pos_reward * (up_reward + spin_reward);
}

}  // namespace gmi::envs::detail

#pragma once
// The kernels of rl::sac_device_trainer (sac.cuh): the soft targets, the critic and actor heads' gradients, the
// temperature's Adam step, the Polyak update and the collection step, each one thread per sample or environment,
// built on the per-sample functions of sac_loss.hpp. The update's random streams are keyed by an update count
// that lives on the device, so a captured CUDA graph of the update draws fresh numbers on every replay.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include <gmi/core/rng.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/sac_loss.hpp>

namespace gmi::rl {

// Slots of the device-side sums an update accumulates (means once divided by the batch).
enum sac_sum : int { sac_sum_critic = 0, sac_sum_actor, sac_sum_log_prob, sac_sum_count };

namespace sac_kernels {
inline unsigned blocks(std::size_t n) { return static_cast<unsigned>((n + 255) / 256); }

// eps[i] ~ N(0, 1), stream 2 * (*updates) + part, draw i: the update count is read on the device.
__global__ static void normals(std::uint64_t seed, const std::uint64_t* updates, int part, std::size_t n, float* eps) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const std::uint64_t round = 2 * *updates + std::uint64_t(part);
  gmi::rng r(seed, round * 0x100000000ull + i);
  eps[i] = r.normal();
}

// The update count's step at the end of an update (one thread).
__global__ static void count_update(std::uint64_t* updates) { *updates += 1; }

template <class Nets>
__global__ void targets(const float* actor_p, const float* t1, const float* t2, const float* next_obs,
                        const float* reward, const float* terminated, const float* eps_next, std::size_t n,
                        const float* log_alpha, float gamma, float lo, float hi, float* y) {
  constexpr int O = Nets::obs_dim, A = Nets::act_dim;
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float head[2 * A], x[O + A], q1, q2;
  Nets::actor::forward(actor_p, next_obs + i * O, head);
  squashed_draw<float, A> d;
  d.compute(head, eps_next + i * A, lo, hi);
  for (int k = 0; k < O; ++k) x[k] = next_obs[i * O + k];
  for (int k = 0; k < A; ++k) x[O + k] = d.action[k];
  Nets::critic::forward(t1, x, &q1);
  Nets::critic::forward(t2, x, &q2);
  y[i] = reward[i] + gamma * (1.0f - terminated[i]) * (fminf(q1, q2) - expf(*log_alpha) * d.log_prob);
}

__global__ static void concat(const float* a, int wa, const float* b, int wb, std::size_t n, float* x) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int k = 0; k < wa; ++k) x[i * (wa + wb) + k] = a[i * wa + k];
  for (int k = 0; k < wb; ++k) x[i * (wa + wb) + wa + k] = b[i * wb + k];
}

// d_q = (q - y) / n; sums[slot] += 0.5 (q - y)^2 / n.
__global__ static void critic_dq(const float* q, const float* y, std::size_t n, float* d_q, float* sums) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float e = q[i] - y[i];
  d_q[i] = e / float(n);
  atomicAdd(sums + sac_sum_critic, 0.5f * e * e / float(n));
}

template <class Nets>
__global__ void actor_heads(const float* heads, const float* obs, const float* eps, const float* c1, const float* c2,
                            std::size_t n, const float* log_alpha, float lo, float hi, float* d_heads, float* sums) {
  constexpr int O = Nets::obs_dim, A = Nets::act_dim, CA = Nets::critic::activation_size;
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float alpha = expf(*log_alpha), scale = 1.0f / float(n);
  squashed_draw<float, A> d;
  d.compute(heads + i * 2 * A, eps + i * A, lo, hi);
  float x[O + A], q1, q2, ca[CA], dz[CA], d_x[O + A], g_a[A];
  for (int k = 0; k < O; ++k) x[k] = obs[i * O + k];
  for (int k = 0; k < A; ++k) x[O + k] = d.action[k];
  Nets::critic::forward(c1, x, &q1);
  Nets::critic::forward(c2, x, &q2);
  const bool first = q1 <= q2;  // the gradient of min goes through the smaller critic (recomputed with acts)
  Nets::critic::forward(first ? c1 : c2, x, first ? &q1 : &q2, ca);
  const float minus_one = -1.0f;
  Nets::critic::backward_deltas(first ? c1 : c2, ca, &minus_one, dz, d_x);
  for (int k = 0; k < A; ++k) g_a[k] = d_x[O + k] * scale;
  d.backward(heads + i * 2 * A, eps + i * A, lo, hi, g_a, alpha * scale, d_heads + i * 2 * A);
  atomicAdd(sums + sac_sum_actor, (alpha * d.log_prob - (first ? q1 : q2)) * scale);
  atomicAdd(sums + sac_sum_log_prob, d.log_prob * scale);
}

// Adam on log_alpha alone (state: m, v, step count as float), loss -log_alpha (mean log_prob + target).
__global__ static void alpha_step(float* log_alpha, float* state, const float* sums, float target, float lr) {
  const float g = -(sums[sac_sum_log_prob] + target);
  const float t = state[2] + 1.0f;
  state[2] = t;
  state[0] = 0.9f * state[0] + 0.1f * g;
  state[1] = 0.999f * state[1] + 0.001f * g * g;
  const float bc1 = 1.0f - powf(0.9f, t), bc2 = sqrtf(1.0f - powf(0.999f, t));
  *log_alpha -= (lr / bc1) * state[0] / (sqrtf(state[1]) / bc2 + 1e-8f);
}

// v[i] *= scale: the group's sum becomes its mean (the host path's multiply, so both give the same bits).
__global__ static void scale(float* v, std::size_t n, float s) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) v[i] *= s;
}

__global__ static void polyak(float* target, const float* online, std::size_t n, float tau) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) target[i] = (1.0f - tau) * target[i] + tau * online[i];
}

// One step of environment i: the action (uniform while warming up, else the actor's draw), the env step, and
// the transition written as row i of the rollout columns.
template <class E, class Nets>
__global__ void collect(env_batch_view<E> env, const float* actor_p, float* obs, float* act, float* rew,
                        float* next_obs, float* term, bool warmup, std::uint64_t seed, std::uint64_t round, float lo,
                        float hi, float* current) {
  constexpr int O = E::obs_dim, A = E::act_dim;
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= env.num_envs) return;
  float o[O], a[A], next[O], fin[O];
  for (int k = 0; k < O; ++k) o[k] = current[i * O + k];
  gmi::rng r(seed, round * 0x100000000ull + i);
  if (warmup) {
    for (int k = 0; k < A; ++k) a[k] = r.uniform(-1.0f, 1.0f);
  } else {
    float head[2 * A], eps[A];
    Nets::actor::forward(actor_p, o, head);
    for (int k = 0; k < A; ++k) eps[k] = r.normal();
    squashed_draw<float, A> d;
    d.compute(head, eps, lo, hi);
    for (int k = 0; k < A; ++k) a[k] = d.action[k];
  }
  const step_result s = env.step_one(i, a, next, fin);
  const bool ended = s.terminated || s.truncated;
  for (int k = 0; k < O; ++k) {
    obs[i * O + k] = o[k];
    next_obs[i * O + k] = ended ? fin[k] : next[k];
    current[i * O + k] = next[k];
  }
  for (int k = 0; k < A; ++k) act[i * A + k] = a[k];
  rew[i] = s.reward;
  term[i] = s.terminated ? 1.0f : 0.0f;
}
}  // namespace sac_kernels

}  // namespace gmi::rl

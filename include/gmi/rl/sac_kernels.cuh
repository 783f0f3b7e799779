#pragma once
// The per-sample kernels of rl::sac_device_trainer (sac.cuh; the networks run batched, sac_batched.cuh): the
// squashed draws, the soft targets, the critic and actor heads' gradients, the fixed-order loss sums, the
// temperature's Adam step, the Polyak update, the collection step's two halves (around env_batch::step) and the
// n-step fold, each one thread per sample or environment, built on the per-sample functions of sac_loss.hpp. The update's random
// streams are keyed by an update count that lives on the device, so a captured CUDA graph of the update draws fresh
// numbers on every replay.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include <gmi/core/rng.hpp>
#include <gmi/rl/sac_loss.hpp>
#include <gmi/rl/sac_nstep.hpp>

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

__global__ static void concat(const float* a, int wa, const float* b, int wb, std::size_t n, float* x) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int k = 0; k < wa; ++k) x[i * (wa + wb) + k] = a[i * wa + k];
  for (int k = 0; k < wb; ++k) x[i * (wa + wb) + wa + k] = b[i * wb + k];
}

// d_q = (q - y) / n; terms[i] = 0.5 (q - y)^2 (summed in a fixed order by sum_terms: no float atomics, so every
// run of an update, launched or replayed from a graph, gives the same bits).
__global__ static void critic_dq(const float* q, const float* y, std::size_t n, float* d_q, float* terms) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float e = q[i] - y[i];
  d_q[i] = e / float(n);
  terms[i] = 0.5f * e * e;
}

// x[i] = [obs_i, tanh(mean + sigma eps)] and log_prob[i], from the actor's heads [n][2A] (the batched forward).
template <int O, int A>
__global__ void draw_actions(const float* heads, const float* obs, const float* eps, std::size_t n, float lo, float hi,
                             float* x, float* log_prob) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  log_prob[i] = sac_sample::draw_row<float, O, A>(heads + i * 2 * A, obs + i * O, eps + i * A, lo, hi, x + i * (O + A));
}

// y = r + gamma (1 - terminated) (min(q1, q2) - alpha log_prob): the soft TD target from the targets' outputs.
__global__ static void soft_targets(const float* q1, const float* q2, const float* log_prob, const float* reward,
                                    const float* terminated, std::size_t n, const float* log_alpha, float gamma,
                                    float* y) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] = sac_sample::soft_target(q1[i], q2[i], log_prob[i], reward[i], terminated[i], expf(*log_alpha), gamma);
}

// The gradient of -min(Q1, Q2) goes through the smaller critic: d_out -1 for it, 0 for the other (ties: critic 1).
__global__ static void min_critic(const float* q1, const float* q2, std::size_t n, float* d1, float* d2) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const bool first = q1[i] <= q2[i];
  d1[i] = first ? -1.0f : 0.0f;
  d2[i] = first ? 0.0f : -1.0f;
}

// The actor heads' gradient from dQ/dx of both critics (one of them zero, min_critic), and the per-sample terms of
// the actor loss (alpha log_prob - min Q) and of the mean log-prob.
template <int O, int A>
__global__ void actor_heads(const float* heads, const float* eps, const float* dx1, const float* dx2, const float* q1,
                            const float* q2, std::size_t n, const float* log_alpha, float lo, float hi, float* d_heads,
                            float* actor_terms, float* log_prob_terms) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  sac_sample::actor_head_grad<float, O, A>(heads + i * 2 * A, eps + i * A, dx1 + i * (O + A), dx2 + i * (O + A), q1[i],
                                           q2[i], expf(*log_alpha), 1.0f / float(n), lo, hi, d_heads + i * 2 * A,
                                           actor_terms[i], log_prob_terms[i]);
}

// out[0] = scale * sum of terms[0..n) in a fixed order (one block of sum_threads: strided partial sums, then a
// tree in shared memory), so the result does not depend on scheduling.
inline constexpr int sum_threads = 256;
__global__ static void __launch_bounds__(sum_threads) sum_terms(const float* terms, std::size_t n, float scale,
                                                                float* out) {
  __shared__ float part[sum_threads];
  float s = 0.0f;
  for (std::size_t i = threadIdx.x; i < n; i += sum_threads) s += terms[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = sum_threads / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = part[0] * scale;
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

// The collection step's first half, environment i: its observation kept as the transition's (obs), and its action
// (uniform while warming up, else the draw from the actor's heads [envs][2A], a batched forward of current); the
// environments then step in env_batch::step (a physics task's on its fast path), and store_next finishes the row.
template <int O, int A>
__global__ void draw_env_actions(std::size_t n, const float* current, const float* heads, float* obs, float* act,
                                 bool warmup, std::uint64_t seed, std::uint64_t round, float lo, float hi) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int k = 0; k < O; ++k) obs[i * O + k] = current[i * O + k];
  gmi::rng r(seed, round * 0x100000000ull + i);
  if (warmup) {
    for (int k = 0; k < A; ++k) act[i * A + k] = r.uniform(-1.0f, 1.0f);
    return;
  }
  float eps[A];
  for (int k = 0; k < A; ++k) eps[k] = r.normal();
  squashed_draw<float, A> d;
  d.compute(heads + i * 2 * A, eps, lo, hi);
  for (int k = 0; k < A; ++k) act[i * A + k] = d.action[k];
}

// The collection step's second half, environment i, after env_batch::step wrote current (the next observations,
// after auto-reset) and final (the last observation of an episode that ended): the stored next observation is the
// episode's last one where it ended, terminated (not truncated: a time limit bootstraps) and ended (either) as 0 or 1.
template <int O>
__global__ void store_next(std::size_t n, const float* current, const float* final_obs, const std::uint8_t* terminated,
                           const std::uint8_t* truncated, float* next_obs, float* term, float* ended) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const bool over = terminated[i] || truncated[i];
  const float* src = over ? final_obs + i * O : current + i * O;
  for (int k = 0; k < O; ++k) next_obs[i * O + k] = src[k];
  term[i] = terminated[i] ? 1.0f : 0.0f;
  ended[i] = over ? 1.0f : 0.0f;
}

// n-step returns: environment i's transition starting at ring slot `oldest`, folded (sac_nstep::fold).
template <int O, int A>
__global__ void nstep_fold(sac_nstep::ring r, int oldest, float gamma, float* obs, float* act, float* rew, float* next,
                           float* term) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= r.envs) return;
  sac_nstep::fold<O, A>(r, i, oldest, gamma, obs, act, rew, next, term);
}
}  // namespace sac_kernels

}  // namespace gmi::rl

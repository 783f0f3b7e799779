#pragma once
// PPO with the environments on CPU actors and the policy and update on the GPU. cpu_actors::run alternates two env
// groups: for group g at step k the driver thread enqueues, on the trainer's stream and without waiting, the copies
// of the group's observations (and rewards, flags, final observations of step k - 1) from the pinned staging
// arrays, one kernel (collect_step.hpp per environment: normalize, forward, sample, record), the copy of the
// actions back, and cudaLaunchHostFunc(&handoff::signal_callback): the cores step group g once it fires, while the
// GPU serves the other group. After the rollout the trainer's own update runs on the stream
// (ppo_trainer::iterate_collected, replayed as a CUDA graph). No stream synchronisation per step: the hand-off
// counters are the only waits (tests/actors_gpu checks it with the stream held shut).
// Any host_sim with fixed sizes: env_sim<E> for a gmi::env's host code (the trainer is typed on E), MuJoCo tasks
// (mujoco::sim<Task>; the trainer is typed on sim_shape<S>, whose own env batch is never stepped).

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <gmi/actors/actor_engine.hpp>
#include <gmi/actors/collect_step.hpp>
#include <gmi/actors/cpu_actors.hpp>
#include <gmi/actors/host_sim.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/rl/ppo.cuh>

namespace gmi::actors {

namespace detail {
template <class E, class Net>
struct group_step_args {
  rl::ppo_rollout_view<E, Net> v;
  const float* params;
  gmi::rng* rngs;  // [num_envs]: each environment's policy stream over the rollout
  const float *obs, *final_obs, *rewards;  // the group's, on the device (final_obs null: nothing truncated)
  const std::uint8_t *terminated, *truncated;
  float* actions;
  std::size_t first_env, count;
  int step;
  bool needs_actions;
};

template <class Net>
inline constexpr bool actor_params_in_shared = Net::param_count * sizeof(float) <= 48 * 1024;

// One thread per environment of the group; the weights go to shared memory once per block when they fit.
template <class E, class Net>
__global__ static void group_step_kernel(group_step_args<E, Net> a) {
  extern __shared__ float staged[];
  const float* p = a.params;
  if constexpr (actor_params_in_shared<Net>) {
    for (int q = threadIdx.x; q < Net::param_count; q += blockDim.x) staged[q] = a.params[q];
    __syncthreads();
    p = staged;
  }
  const std::size_t j = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= a.count) return;
  const std::size_t i = a.first_env + j;
  if (a.step == 0) a.rngs[i] = gmi::rng(a.v.policy_seed, i, a.v.policy_rng_blocks[i]);
  gmi::rng r = a.rngs[i];
  const bool later = a.step > 0;
  const collect_input in{a.obs + j * E::obs_dim, a.final_obs ? a.final_obs + j * E::obs_dim : nullptr,
                         later ? a.rewards[j] : 0.0f, later && a.terminated[j] != 0,
                         later && a.final_obs && a.truncated[j] != 0};
  collect_step(a.v, p, r, i, a.step, a.needs_actions, in, a.needs_actions ? a.actions + j * E::act_dim : nullptr);
  a.rngs[i] = r;
}
}  // namespace detail

// The trainer is the base class (the update, checkpoints, weights, set_sync); iterate, serve and the episode calls
// are the actors' (actor_engine.hpp). TrainerEnv types the trainer (by default E for env_sim<E>, else sim_shape<S>).
template <fixed_size_sim S, class Net, gmi::env TrainerEnv = typename detail::trainer_env<S>::type>
class ppo_gpu_actors
    : public actor_engine<ppo_gpu_actors<S, Net, TrainerEnv>, rl::ppo_trainer<TrainerEnv, Net, exec::cuda>, cpu_actors<S>> {
  using base = actor_engine<ppo_gpu_actors, rl::ppo_trainer<TrainerEnv, Net, exec::cuda>, cpu_actors<S>>;
  friend base;

 public:
  using sim_type = S;
  using env_type = TrainerEnv;
  using typename base::actors_type;
  using typename base::trainer_type;
  static constexpr int obs_dim = S::obs_size, act_dim = S::act_size;
  static_assert(obs_dim == TrainerEnv::obs_dim && act_dim == TrainerEnv::act_dim,
                "gmi::actors::ppo_gpu_actors: the trainer's env must have the sim's observation and action sizes");

  // num_envs environments of the sim built from sim_args on the actor cores (env_sim<E>: num_envs, seed, env
  // params; mujoco::sim: the model, num_envs, seed, task params); the trainer runs on gpu.stream with `seed` for
  // its weights and policy draws.
  template <class... SimArgs>
  ppo_gpu_actors(actor_config actors, int num_envs, std::uint64_t seed, rl::ppo_config config, exec::cuda gpu,
                 SimArgs&&... sim_args)
      : base(std::move(actors), num_envs, seed, config, typename TrainerEnv::params{}, gpu,
             std::forward<SimArgs>(sim_args)...),
        stream_(gpu.stream),
        per_group_(this->actors_.envs_per_group()),
        rngs_(std::size_t(num_envs)),
        obs_(per_group_ * obs_dim),
        final_obs_(per_group_ * obs_dim),
        rewards_(per_group_),
        actions_(per_group_ * act_dim),
        flags_(2 * per_group_) {}
  ppo_gpu_actors(const ppo_gpu_actors&) = delete;
  ppo_gpu_actors& operator=(const ppo_gpu_actors&) = delete;
  // Queued host callbacks signal the actors' counters: they run before those go.
  ~ppo_gpu_actors() {
    if (cudaStreamSynchronize(stream_) != cudaSuccess) (void)cudaGetLastError();
  }

  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_; }

 private:
  struct collector {
    ppo_gpu_actors* self;
    rl::ppo_rollout_view<env_type, Net> v;
    void submit(const group_batch& b, handoff& ready) { self->enqueue_group(v, b, ready); }
  };

  // `steps` steps of every environment: each group's hand-off enqueued on the stream (steps <= horizon).
  void collect(int steps) {
    collector c{this, trainer_type::rollout_view()};
    this->actors_.run(c, steps, this->log_);
  }

  template <class T>
  void to_device(cuda::device_buffer<T>& dst, const T* src, std::size_t count) {
    GMI_CUDA_TRY(cudaMemcpyAsync(dst.data(), src, count * sizeof(T), cudaMemcpyHostToDevice, stream_));
  }

  // Group b's work at its step, enqueued without waiting: the device buffers are shared by the groups, which the
  // one stream orders.
  void enqueue_group(const rl::ppo_rollout_view<env_type, Net>& v, const group_batch& b, handoff& ready) {
    const std::size_t n = b.num_envs;
    to_device(obs_, b.obs.data(), n * obs_dim);
    bool truncated = false;
    if (b.step > 0) {
      to_device(rewards_, b.rewards.data(), n);
      GMI_CUDA_TRY(cudaMemcpyAsync(flags_.data(), b.terminated.data(), n, cudaMemcpyHostToDevice, stream_));
      GMI_CUDA_TRY(cudaMemcpyAsync(flags_.data() + per_group_, b.truncated.data(), n, cudaMemcpyHostToDevice, stream_));
      truncated = std::any_of(b.truncated.begin(), b.truncated.end(), [](std::uint8_t f) { return f != 0; });
      if (truncated) to_device(final_obs_, b.final_obs.data(), n * obs_dim);  // only when some episode was cut
    }
    detail::group_step_args<env_type, Net> a{v,
                                             trainer_type::params().data(),
                                             rngs_.data(),
                                             obs_.data(),
                                             truncated ? final_obs_.data() : nullptr,
                                             rewards_.data(),
                                             flags_.data(),
                                             flags_.data() + per_group_,
                                             actions_.data(),
                                             b.first_env,
                                             n,
                                             b.step,
                                             b.needs_actions};
    constexpr unsigned block = 128;
    constexpr std::size_t shared = detail::actor_params_in_shared<Net> ? Net::param_count * sizeof(float) : 0;
    detail::group_step_kernel<env_type, Net><<<unsigned((n + block - 1) / block), block, shared, stream_>>>(a);
    GMI_CUDA_TRY(cudaGetLastError());
    if (!b.needs_actions) return;  // the run's last observations: bootstrap and GAE, no hand-off
    GMI_CUDA_TRY(cudaMemcpyAsync(b.actions.data(), actions_.data(), n * act_dim * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream_));
    GMI_CUDA_TRY(cudaLaunchHostFunc(stream_, &handoff::signal_callback, &ready));
  }

  cudaStream_t stream_;
  std::size_t per_group_;
  cuda::device_buffer<gmi::rng> rngs_;
  cuda::device_buffer<float> obs_, final_obs_, rewards_, actions_;
  cuda::device_buffer<std::uint8_t> flags_;  // terminated, then truncated
};

// PPO on CPU actors for a gmi::env, its host code stepped on the cores, the policy on the GPU.
template <gmi::env E, class Net>
class ppo_gpu_on_actors : public ppo_gpu_actors<env_sim<E>, Net> {
 public:
  ppo_gpu_on_actors(actor_config actors, int num_envs, std::uint64_t seed, rl::ppo_config config,
                    typename E::params env_params = {}, exec::cuda gpu = {})
      : ppo_gpu_actors<env_sim<E>, Net>(std::move(actors), num_envs, seed, config, gpu, num_envs, seed, env_params) {}
};

}  // namespace gmi::actors

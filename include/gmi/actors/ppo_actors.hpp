#pragma once
// PPO whose environments step on CPU actors: the rollout is collected through cpu_actors::run (pinned cores,
// two env groups alternating), the policy's forward, sampling and GAE run in the actors' policy callback, and the
// update is the trainer's own (ppo_trainer::iterate_collected). Each environment sees the same per-env policy
// and environment random streams, in the same order, as in ppo_trainer::iterate(), so a run equals a plain
// host-trainer run with the same seed bit for bit (the collection is time-major here, env-major there; every
// per-env computation is the same).
// ppo_sim_on_actors runs any host_sim with fixed sizes the same way (MuJoCo tasks: the trainer typed on sim_shape).
// Host inference (exec::host); ppo_actors_gpu.cuh runs the same per-env steps (collect_step.hpp) on the GPU.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include <gmi/actors/actor_engine.hpp>
#include <gmi/actors/collect_step.hpp>
#include <gmi/actors/cpu_actors.hpp>
#include <gmi/actors/host_sim.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/rl/ppo.hpp>

namespace gmi::actors {

// The trainer is the base class (the update, checkpoints, weights, set_sync); iterate, serve and the episode calls
// are the actors' (actor_engine.hpp). Any host_sim with fixed sizes; TrainerEnv types the trainer (E for
// env_sim<E>, or a wrapper of E (actors::on_cpu); sim_shape<S> for a sim that is not a gmi::env, e.g. MuJoCo).
template <fixed_size_sim S, class Net, gmi::env TrainerEnv = typename detail::trainer_env<S>::type>
class ppo_sim_on_actors
    : public actor_engine<ppo_sim_on_actors<S, Net, TrainerEnv>, rl::ppo_trainer<TrainerEnv, Net, exec::host>,
                          cpu_actors<S>> {
  using base = actor_engine<ppo_sim_on_actors, rl::ppo_trainer<TrainerEnv, Net, exec::host>, cpu_actors<S>>;
  friend base;

 public:
  using sim_type = S;
  using typename base::actors_type;
  using typename base::trainer_type;
  static constexpr int obs_dim = S::obs_size, act_dim = S::act_size, dist_dim = Net::dist_dim;
  static_assert(obs_dim == TrainerEnv::obs_dim && act_dim == TrainerEnv::act_dim,
                "gmi::actors::ppo_sim_on_actors: the trainer's env must have the sim's observation and action sizes");

  // num_envs environments of the sim built from sim_args on the actor cores (mujoco::sim: the model, num_envs,
  // seed, task params); `inference` is the host policy the per-group forward passes run on (the driver thread by
  // default, so the actor cores are left to stepping).
  template <class... SimArgs>
  ppo_sim_on_actors(actor_config actors, int num_envs, std::uint64_t seed, rl::ppo_config config,
                    typename TrainerEnv::params trainer_params, exec::host inference, SimArgs&&... sim_args)
      : base(std::move(actors), num_envs, seed, config, trainer_params, inference, std::forward<SimArgs>(sim_args)...),
        inference_(inference) {}

 private:
  // The actors' policy: for group g at step k, the outcome of step k - 1 (reward, truncation bootstrap, end),
  // then the action of step k; after the last step, the bootstrap value and GAE of the group's columns.
  struct collector {
    rl::ppo_rollout_view<TrainerEnv, Net> v;
    const float* params;
    std::vector<gmi::rng> rngs;  // one per environment, alive for the whole rollout (a partly used block stays)
    exec::host inference;

    void submit(const group_batch& b, handoff& ready) {
      exec::for_each(inference, b.num_envs, [&](std::size_t j) { one(b, j); });
      if (b.needs_actions) ready.signal();
    }

    void one(const group_batch& b, std::size_t j) {
      const collect_input in{b.obs.data() + j * obs_dim, b.step > 0 ? b.final_obs.data() + j * obs_dim : nullptr,
                             b.step > 0 ? b.rewards[j] : 0.0f, b.step > 0 && b.terminated[j] != 0,
                             b.step > 0 && b.truncated[j] != 0};
      const std::size_t i = b.first_env + j;
      collect_step(v, params, rngs[i], i, b.step, b.needs_actions,
                   in, b.needs_actions ? b.actions.data() + j * act_dim : nullptr);
    }
  };

  // `steps` steps of every environment through the collector (steps <= horizon).
  void collect(int steps) {
    collector c{trainer_type::rollout_view(), trainer_type::params().data(), {}, inference_};
    c.rngs.reserve(std::size_t(trainer_type::num_envs()));
    for (int i = 0; i < trainer_type::num_envs(); ++i)
      c.rngs.emplace_back(c.v.policy_seed, std::uint64_t(i), c.v.policy_rng_blocks[i]);
    this->actors_.run(c, steps, this->log_);
  }

  exec::host inference_;
};

// PPO on the actors over any gmi::env's host code (env_sim<E>): equals ppo_trainer<TrainerEnv, Net, exec::host>
// with the same seed bit for bit.
template <gmi::env E, class Net, gmi::env TrainerEnv = E>
class ppo_on_actors : public ppo_sim_on_actors<env_sim<E>, Net, TrainerEnv> {
  using base = ppo_sim_on_actors<env_sim<E>, Net, TrainerEnv>;

 public:
  using env_type = E;

  // num_envs environments seeded like the trainer's (the trainer's own env batch is built but never stepped).
  ppo_on_actors(actor_config actors, int num_envs, std::uint64_t seed, rl::ppo_config config,
                typename E::params env_params = {}, exec::host inference = exec::host{.threads = 1})
      : base(std::move(actors), num_envs, seed, config, trainer_params(env_params), inference, num_envs, seed,
             env_params) {}

 private:
  static typename TrainerEnv::params trainer_params(const typename E::params& p) {
    if constexpr (std::is_same_v<typename TrainerEnv::params, typename E::params>) return p;
    else return {};
  }
};

}  // namespace gmi::actors

#pragma once
// PPO whose environments step on CPU actors: the rollout is collected through cpu_actors::run (pinned cores,
// two env groups alternating), the policy's forward, sampling and GAE run in the actors' policy callback, and the
// update is the trainer's own (ppo_trainer::iterate_collected). Each environment sees the same per-env policy
// and environment random streams, in the same order, as in ppo_trainer::iterate(), so a run equals a plain
// host-trainer run with the same seed bit for bit (the collection is time-major here, env-major there; every
// per-env computation is the same).
// Host inference (exec::host); ppo_actors_gpu.cuh runs the same per-env steps (collect_step.hpp) on the GPU.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <gmi/actors/collect_step.hpp>
#include <gmi/actors/cpu_actors.hpp>
#include <gmi/actors/host_sim.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/rl/ppo.hpp>

namespace gmi::actors {

template <gmi::env E, class Net>
class ppo_on_actors {
 public:
  using env_type = E;
  using trainer_type = rl::ppo_trainer<E, Net, exec::host>;
  using actors_type = cpu_actors<env_sim<E>>;
  static constexpr int obs_dim = E::obs_dim, act_dim = E::act_dim, dist_dim = Net::dist_dim;

  // num_envs environments seeded like the trainer's (the trainer's own env batch is built but never stepped);
  // `inference` is the host policy the per-group forward passes run on (the driver thread by default, so the
  // actor cores are left to stepping).
  ppo_on_actors(actor_config actors, int num_envs, std::uint64_t seed, rl::ppo_config config,
                typename E::params env_params = {}, exec::host inference = exec::host{.threads = 1})
      : trainer_(num_envs, seed, config, env_params, inference),
        actors_(std::move(actors), num_envs, seed, env_params),
        inference_(inference) {
    actors_.start();
  }

  // One PPO iteration: horizon steps of every environment on the actors (double-buffered), then the update.
  void iterate() {
    collector c{trainer_.rollout_view(), trainer_.params().data(), {}, inference_};
    c.rngs.reserve(std::size_t(trainer_.num_envs()));
    for (int i = 0; i < trainer_.num_envs(); ++i)
      c.rngs.emplace_back(c.v.policy_seed, std::uint64_t(i), c.v.policy_rng_blocks[i]);
    actors_.run(c, c.v.horizon, log_);
    trainer_.iterate_collected();
  }

  // Finished episodes since the last call (from the actors' environments).
  rl::episode_stats episodes() { return actors_.read_stats(); }
  [[nodiscard]] rl::ppo_losses losses() { return trainer_.losses(); }
  [[nodiscard]] trainer_type& trainer() noexcept { return trainer_; }
  [[nodiscard]] actors_type& actors() noexcept { return actors_; }
  [[nodiscard]] std::uint64_t iteration() const noexcept { return trainer_.iteration(); }
  // Records the next iterations' hand-offs (tests: the overlap); nullptr stops recording.
  void trace(event_log* log) noexcept { log_ = log; }

 private:
  // The actors' policy: for group g at step k, the outcome of step k - 1 (reward, truncation bootstrap, end),
  // then the action of step k; after the last step, the bootstrap value and GAE of the group's columns.
  struct collector {
    rl::ppo_rollout_view<E, Net> v;
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

  trainer_type trainer_;
  actors_type actors_;
  exec::host inference_;
  event_log* log_ = nullptr;
};

}  // namespace gmi::actors

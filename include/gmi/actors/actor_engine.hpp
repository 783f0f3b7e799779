#pragma once
// What PPO on CPU actors does the same on the host (ppo_actors.hpp) and with the GPU trainer (ppo_actors_gpu.cuh):
// a ppo_trainer (the base class: update, checkpoints, weights, set_sync) plus the actors, whose rollout step is
// iterate() (horizon steps collected on the actors, then the trainer's update without its own collection), serve()
// and the episode calls. The two engines differ only in how a group's hand-off is served (Derived::collect).
// A synced group of such engines (one per GMI, each on its own cores) trains through the trainer's set_sync.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gmi/actors/cpu_actors.hpp>
#include <gmi/actors/host_sim.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/span.hpp>
#include <gmi/io/checkpoint.hpp>
#include <gmi/rl/ppo_config.hpp>
#include <gmi/rl/env_batch.hpp>

namespace gmi::actors {

// Episode statistics of an engine whose environments are the actors' (host memory, nothing to wait for): the
// trainer's request / poll / wait calls, answered from the actors' sim.
class actor_episodes {
 public:
  template <class Actors>
  void request(Actors& a) {
    if (!pending_) pending_ = a.read_stats();
  }
  std::optional<rl::episode_stats> take() { return std::exchange(pending_, std::nullopt); }

 private:
  std::optional<rl::episode_stats> pending_;
};

// Trainer: an rl::ppo_trainer; Actors: cpu_actors<Sim>. Derived provides collect(steps): `steps` (<= horizon) steps
// of every environment through the actors, recorded into the trainer's rollout.
template <class Derived, class Trainer, class Actors>
class actor_engine : public Trainer {
 public:
  using trainer_type = Trainer;
  using actors_type = Actors;

  // The trainer from (num_envs, seed, config, trainer_env_params, policy), the actors from (actors, sim_args...);
  // the actor threads start here.
  template <class TrainerParams, class Policy, class... SimArgs>
  actor_engine(actor_config actors, int num_envs, std::uint64_t seed, rl::ppo_config config, TrainerParams params,
               Policy policy, SimArgs&&... sim_args)
      : Trainer(num_envs, seed, config, params, policy), actors_(std::move(actors), std::forward<SimArgs>(sim_args)...) {
    require(actors_.num_envs() == num_envs, "the actors' sim env count", actors_.num_envs(),
            "num_envs (" + std::to_string(num_envs) + ")");
    // The first episodes start out of phase as the trainer's own would (ppo_config::random_episode_start).
    actors_.start(config.random_episode_start ? rl::episode_start::random_step : rl::episode_start::first_step);
  }

  // One PPO iteration: horizon steps of every environment on the actors (double-buffered), then the update.
  void iterate() {
    derived().collect(Trainer::config().horizon);
    Trainer::iterate_collected();
  }
  // Serving tier: `steps` steps of policy and environments on the actors, no update (the rollout is overwritten).
  void serve(int steps) {
    require(steps >= 1, "serve steps", steps, ">= 1");
    for (int done = 0; done < steps;) {
      const int now = std::min(steps - done, Trainer::config().horizon);
      derived().collect(now);
      done += now;
    }
  }

  // The trainer's state plus the actors' environments (where the sim exposes its state: env_sim as "actors.env.*",
  // mujoco::sim as "actors.mujoco.*" and "actors.env.*"), so a resumed run continues the same episodes; otherwise
  // "actors_env_state" says "fresh" and a resumed run starts new episodes on the actors.
  [[nodiscard]] io::checkpoint save_state() {
    io::checkpoint ck = Trainer::save_state();
    if constexpr (sim_with_state<typename Actors::sim_type> || sim_with_checkpoint<typename Actors::sim_type>) {
      if constexpr (sim_with_checkpoint<typename Actors::sim_type>) {
        actors_.sim().save_state(ck, "actors.");
      } else {
        actors_.sim().visit_state([&](const char* name, auto span) { ck.add(std::string("actors.") + name, span); });
      }
      ck.add("actors.obs", actors_.observations());
      ck.meta["actors_env_state"] = "saved";
    } else {
      ck.meta["actors_env_state"] = "fresh";
    }
    return ck;
  }
  // Restores what save_state saved; a checkpoint without the actors' environments (a plain trainer's, or a sim
  // without state) is refused for a sim that has them, in one line.
  void load_state(const io::checkpoint& ck) {
    if constexpr (sim_with_state<typename Actors::sim_type> || sim_with_checkpoint<typename Actors::sim_type>) {
      const std::string saved = ck.meta.contains("actors_env_state") ? ck.meta["actors_env_state"].dump() : "nothing";
      require(saved == "\"saved\"", "checkpoint actors_env_state", saved,
              "\"saved\" (a checkpoint of CPU actors holds their environments)");
      const std::vector<float> obs = ck.get<float>("actors.obs", actors_.observations().size(), "this run's environments");
      Trainer::load_state(ck);
      if constexpr (sim_with_checkpoint<typename Actors::sim_type>) {
        actors_.sim().load_state(ck, "actors.");
      } else {
        actors_.sim().visit_state([&](const char* name, auto span) {
          using T = std::remove_cv_t<typename decltype(span)::element_type>;
          const std::vector<T> v =
              ck.get<T>(std::string("actors.") + name, span.size(), "this run's number of environments");
          std::copy(v.begin(), v.end(), span.data());
        });
      }
      actors_.restore_observations(host_span<const float>(obs.data(), obs.size()));
    } else {
      Trainer::load_state(ck);
    }
  }

  // Finished episodes since the last call (from the actors' environments; host memory, no wait).
  rl::episode_stats episodes() { return actors_.read_stats(); }
  void request_episodes() { episodes_.request(actors_); }
  std::optional<rl::episode_stats> poll_episodes() { return episodes_.take(); }
  std::optional<rl::episode_stats> wait_episodes() { return episodes_.take(); }
  [[nodiscard]] Trainer& trainer() noexcept { return *this; }
  [[nodiscard]] Actors& actors() noexcept { return actors_; }
  // The cores this engine's actors step on.
  [[nodiscard]] const std::vector<int>& cores() const noexcept { return actors_.cores(); }
  // Records the next iterations' hand-offs (tests: the overlap); nullptr stops recording.
  void trace(event_log* log) noexcept { log_ = log; }

 protected:
  Actors actors_;
  event_log* log_ = nullptr;

 private:
  Derived& derived() noexcept { return static_cast<Derived&>(*this); }
  actor_episodes episodes_;
};

}  // namespace gmi::actors

#pragma once
// gmi::trainers::sac<>: soft actor-critic as a trainer recipe a pipeline can name. Off policy: it learns from a
// replay table its environments fill, so gmi::train and gmi::run give it the off-policy layout
// (pipeline/run_offpolicy.cuh: rl::sac_trainer on host threads, rl::sac_device_trainer on one GPU), not the PPO
// engine. Hidden is the width of the actor's and critics' two hidden layers.

#include <gmi/concepts/agent.hpp>
#include <gmi/rl/sac.hpp>
#include <gmi/rl/sac_config.hpp>

namespace gmi::trainers {

template <class Config = rl::sac_config, int Hidden = 256>
struct sac {
  using trainer_concept = gmi::trainer_tag;
  using config = Config;
  static constexpr bool trains = true;
  static constexpr bool asynchronous = false;
  static constexpr bool off_policy = true;
  static constexpr int hidden = Hidden;
  // The actor and twin critics for an environment.
  template <class Env>
  using networks = rl::sac_networks<Env::obs_dim, Env::act_dim, Hidden>;
  // The host engine for an environment (the device one is rl::sac_device_trainer<Env, networks<Env>>). The
  // pipeline names it with its agent's network and a policy: SAC's networks are the trainer's own, so both go unused.
  template <class Env, class AgentNet = void, class Policy = void>
  using engine = rl::sac_trainer<Env, networks<Env>>;
};

static_assert(gmi::trainer<sac<>>);
static_assert(gmi::trainer_is_off_policy<sac<>>() && !gmi::trainer_is_off_policy<int>());

}  // namespace gmi::trainers

#pragma once
// gmi::trainers::sac<>: soft actor-critic (gmi::rl::sac_trainer) as a trainer recipe a pipeline can name. Off
// policy: it learns from a replay table rather than from the rollout it just collected. No layout runs it yet
// (the pipeline's layouts take ppo, appo and none); use rl::sac_trainer directly until one does.

#include <gmi/concepts/agent.hpp>
#include <gmi/rl/sac.hpp>
#include <gmi/rl/sac_config.hpp>

namespace gmi::trainers {

template <class Config = rl::sac_config>
struct sac {
  using trainer_concept = gmi::trainer_tag;
  using config = Config;
  static constexpr bool trains = true;
  static constexpr bool asynchronous = false;
  static constexpr bool off_policy = true;
  // The engine for an environment; Nets picks the actor and critic sizes (rl::sac_networks).
  template <class Env, class Nets = rl::sac_networks<Env::obs_dim, Env::act_dim>>
  using engine = rl::sac_trainer<Env, Nets>;
};

static_assert(gmi::trainer<sac<>>);

}  // namespace gmi::trainers

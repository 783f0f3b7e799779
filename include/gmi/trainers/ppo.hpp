#pragma once
// Trainer recipes for pipelines: gmi::trainers::ppo<> (gmi::rl::ppo_trainer) and gmi::trainers::none (serving).

#include <gmi/concepts/agent.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/rl/ppo_config.hpp>

namespace gmi::trainers {

template <class Config = rl::ppo_config>
struct ppo {
  using trainer_concept = gmi::trainer_tag;
  using config = Config;
  static constexpr bool trains = true;
  template <class Env, class Net, class Policy>
  using engine = rl::ppo_trainer<Env, Net, Policy>;
};

// Serving only: the pipeline runs policy inference and environments, no updates. It still uses the PPO engine's
// fused serving path (its update machinery is never run).
struct none {
  using trainer_concept = gmi::trainer_tag;
  using config = rl::ppo_config;
  static constexpr bool trains = false;
  template <class Env, class Net, class Policy>
  using engine = rl::ppo_trainer<Env, Net, Policy>;
};

static_assert(gmi::trainer<ppo<>>);
static_assert(gmi::trainer<none>);

}  // namespace gmi::trainers

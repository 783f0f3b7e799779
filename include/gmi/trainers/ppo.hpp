#pragma once
// Trainer recipes for pipelines: gmi::trainers::ppo<> (synchronous PPO, gmi::rl::ppo_trainer: the colocated
// layout), gmi::trainers::appo<> (asynchronous PPO with V-trace, gmi::rl::appo_learner: the split layout) and
// gmi::trainers::none (serving: rl::policy_server, no trainer). A layout takes only the trainers it can run
// (pipeline.hpp says which).

#include <gmi/concepts/agent.hpp>
#include <gmi/layout/layouts.hpp>
#include <gmi/rl/policy_server.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/rl/ppo_config.hpp>

namespace gmi::trainers {

// The engine PPO runs for a pipeline's env slot: rl::ppo_trainer, unless an env wrapper names another
// (actors::on_cpu<Env>: the environments on CPU actors, pipeline/cpu_actors.hpp).
template <class Env, class Net, class Policy>
struct engine_for {
  using type = rl::ppo_trainer<Env, Net, Policy>;
};

template <class Config = rl::ppo_config>
struct ppo {
  using trainer_concept = gmi::trainer_tag;
  using config = Config;
  static constexpr bool trains = true;
  static constexpr bool asynchronous = false;
  template <class Env, class Net, class Policy>
  using engine = typename engine_for<Env, Net, Policy>::type;
};

// Asynchronous PPO: serving GMIs act with the newest weights they have and stream rollouts to a learner that
// corrects the lag with V-trace (layout split). Its settings are the PPO config's plus the split flags.
template <class Config = rl::ppo_config>
struct appo {
  using trainer_concept = gmi::trainer_tag;
  using config = Config;
  static constexpr bool trains = true;
  static constexpr bool asynchronous = true;
  template <class Env, class Net, class Policy>
  using engine = rl::ppo_trainer<Env, Net, Policy>;  // the serving tier's engine (act, sample, step)
};

// The trainer of the same recipe for another layout: split runs ppo's settings as appo.
template <class Layout, class Trainer>
struct trainer_for_layout {
  using type = Trainer;
};
template <class Config>
struct trainer_for_layout<layout::split, ppo<Config>> {
  using type = appo<Config>;
};

// Serving only: the pipeline runs policy inference and environments, no updates. Its engine is rl::policy_server
// (the PPO trainer's fused serving step without its rollout, optimizer or update buffers).
struct none {
  using trainer_concept = gmi::trainer_tag;
  using config = rl::ppo_config;
  static constexpr bool trains = false;
  static constexpr bool asynchronous = false;
  template <class Env, class Net, class Policy>
  using engine = rl::policy_server<Env, Net, Policy>;
};

static_assert(gmi::trainer<ppo<>>);
static_assert(gmi::trainer<appo<>>);
static_assert(gmi::trainer<none>);

}  // namespace gmi::trainers

#pragma once
// gmi::pipeline<Env, Agent, Trainer, Layout, Partition, Comm>: the typed composition a user writes once. The
// roles and policies are checked here, at compile time, with a sentence for every combination that can not
// work; what depends on the machine is checked when gmi::run starts.

#include <gmi/comm/none.hpp>
#include <gmi/concepts/agent.hpp>
#include <gmi/concepts/env.hpp>
#include <gmi/layout/layouts.hpp>
#include <gmi/partition/none.hpp>
#include <gmi/trainers/ppo.hpp>

#include <type_traits>

namespace gmi {

template <class Env, class Agent, class Trainer, class Layout = layout::colocated, class Partition = partition::none,
          class Comm = comm::none>
struct pipeline {
  static_assert(gmi::check_env<Env>(), "gmi::pipeline: Env must model gmi::env (see the message above)");
  static_assert(gmi::check_agent<Agent>(), "gmi::pipeline: Agent must model gmi::agent (see the message above)");
  static_assert(gmi::check_trainer<Trainer>(), "gmi::pipeline: Trainer must model gmi::trainer (see the message above)");
  static_assert(layout::layout_policy<Layout>,
                "gmi::pipeline: Layout must be gmi::layout::serving, gmi::layout::colocated or gmi::layout::split");
  static_assert(partition::partition_policy<Partition>,
                "gmi::pipeline: Partition must be a gmi::partition backend (gmi::partition::none, ...)");
  static_assert(comm::communicator_policy<Comm>, "gmi::pipeline: Comm must be a gmi::comm communicator (gmi::comm::none, ...)");
  static_assert(!Layout::trains || Trainer::trains,
                "gmi::pipeline: a training layout (colocated, split) needs a trainer that trains: use "
                "gmi::trainers::ppo<> or choose gmi::layout::serving");
  static_assert(!std::is_same_v<Layout, layout::split> || gmi::trainer_is_asynchronous<Trainer>(),
                "gmi::pipeline: layout split runs asynchronous PPO with V-trace: name gmi::trainers::appo<> as the "
                "Trainer");
  static_assert(!std::is_same_v<Layout, layout::colocated> || !gmi::trainer_is_asynchronous<Trainer>(),
                "gmi::pipeline: layout colocated runs synchronous PPO: name gmi::trainers::ppo<> as the Trainer "
                "(gmi::trainers::appo<> runs in layout split)");
  using env = Env;
  using agent = Agent;
  using trainer = Trainer;
  using layout_type = Layout;
  using partition_type = Partition;
  using comm_type = Comm;
  static_assert(gmi::agent_fits_env<Agent, Env>(),
                "gmi::pipeline: the agent's policy must fit the task's actions (the sentence above says how)");
  using network = gmi::agent_network<Agent, Env>;
  template <class Policy>
  using engine = typename Trainer::template engine<Env, network, Policy>;
  // The same roles, partition and communicator in another layout (autotune's measured mapping runs a colocated
  // pipeline's roles split).
  template <class OtherLayout>
  using with_layout = pipeline<Env, Agent, typename trainers::trainer_for_layout<OtherLayout, Trainer>::type,
                               OtherLayout, Partition, Comm>;
};

}  // namespace gmi

#pragma once
// The Agent and Trainer role concepts. An agent is a network recipe whose input and output sizes come from the
// environment (so they can never disagree); a trainer is an algorithm recipe that, given the environment, the
// network and an execution policy, names the engine that trains them.

#include <concepts>

#include <gmi/concepts/env.hpp>

namespace gmi {

struct agent_tag {};
struct trainer_tag {};

// using agent_concept = gmi::agent_tag;
// template <int ObsDim, int Outputs> using network = ...;  // per-sample forward/backward, flat parameters
// Outputs is gmi::policy_outputs<Env>(): the action size of a continuous task, num_actions of a discrete one;
// the network says which it is with Net::discrete (gmi::network_fits_env checks it against the task).
template <class A>
concept agent = requires {
  typename A::agent_concept;
  requires std::same_as<typename A::agent_concept, agent_tag>;
  typename A::template network<4, 2>;
  { A::template network<4, 2>::param_count } -> std::convertible_to<int>;
};

// using trainer_concept = gmi::trainer_tag;
// using config = ...;                         // hyperparameters with validate()
// static constexpr bool trains;               // false for serving-only pipelines (gmi::trainers::none)
// template <class Env, class Net, class Policy> using engine = ...;
template <class T>
concept trainer = requires {
  typename T::trainer_concept;
  requires std::same_as<typename T::trainer_concept, trainer_tag>;
  typename T::config;
  { T::trains } -> std::convertible_to<bool>;
};

template <class A>
consteval bool check_agent() {
  static_assert(requires { typename A::agent_concept; },
                "gmi::agent: the type must opt in with `using agent_concept = gmi::agent_tag;`");
  static_assert(requires { typename A::template network<4, 2>; },
                "gmi::agent: the type must give `template <int ObsDim, int Outputs> using network = ...;`");
  return agent<A>;
}

// The network agent A builds for task E, sized from it.
template <class A, class E>
using agent_network = typename A::template network<E::obs_dim, policy_outputs<E>()>;

// Whether agent A can act in task E: a categorical agent for discrete actions, a Gaussian one for continuous
// actions; a mismatch fails to compile with a sentence that names the agent to use.
template <class A, class E>
consteval bool agent_fits_env() {
  return network_fits_env<agent_network<A, E>, E>();
}

template <class T>
consteval bool check_trainer() {
  static_assert(requires { typename T::trainer_concept; },
                "gmi::trainer: the type must opt in with `using trainer_concept = gmi::trainer_tag;`");
  static_assert(requires { typename T::config; }, "gmi::trainer: the type must name its hyperparameters: `using config`");
  static_assert(requires { { T::trains } -> std::convertible_to<bool>; },
                "gmi::trainer: the type must say whether it trains: `static constexpr bool trains`");
  return trainer<T>;
}

// A trainer's optional `static constexpr bool asynchronous` (false when absent): it learns from rollouts that
// other GMIs acted (layout split) rather than from its own (layout colocated).
template <class T>
consteval bool trainer_is_asynchronous() {
  if constexpr (requires { { T::asynchronous } -> std::convertible_to<bool>; }) return T::asynchronous;
  else return false;
}

// A trainer's optional `static constexpr bool off_policy` (false when absent): it learns from a replay table that
// its environments fill (gmi::trainers::sac), so gmi::train runs the off-policy layout (pipeline/run_offpolicy.cuh).
template <class T>
consteval bool trainer_is_off_policy() {
  if constexpr (requires { { T::off_policy } -> std::convertible_to<bool>; }) return T::off_policy;
  else return false;
}

static_assert(!agent<int>);
static_assert(!trainer<int>);

}  // namespace gmi

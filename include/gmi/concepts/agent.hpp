#pragma once
// The Agent and Trainer role concepts. An agent is a network recipe whose input and output sizes come from the
// environment (so they can never disagree); a trainer is an algorithm recipe that, given the environment, the
// network and an execution policy, names the engine that trains them.

#include <concepts>

namespace gmi {

struct agent_tag {};
struct trainer_tag {};

// using agent_concept = gmi::agent_tag;
// template <int ObsDim, int ActDim> using network = ...;   // per-sample forward/backward, flat parameters
template <class A>
concept agent = requires {
  typename A::agent_concept;
  requires std::same_as<typename A::agent_concept, agent_tag>;
  typename A::template network<4, 1>;
  { A::template network<4, 1>::param_count } -> std::convertible_to<int>;
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
  static_assert(requires { typename A::template network<4, 1>; },
                "gmi::agent: the type must give `template <int ObsDim, int ActDim> using network = ...;`");
  return agent<A>;
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

static_assert(!agent<int>);
static_assert(!trainer<int>);

}  // namespace gmi

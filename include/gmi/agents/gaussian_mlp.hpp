#pragma once
// gmi::agents::gaussian_mlp<Hidden, Act>: the Isaac-Gym-style actor-critic for continuous actions (shared body,
// mean and value heads, state-independent log-std), sized from the environment.

#include <gmi/concepts/agent.hpp>
#include <gmi/nn/activation.hpp>
#include <gmi/nn/actor_critic.hpp>
#include <gmi/nn/layers.hpp>

namespace gmi::agents {

template <class Hidden = nn::layers<32, 32>, class Act = nn::elu>
struct gaussian_mlp {
  using agent_concept = gmi::agent_tag;
  using hidden = Hidden;
  using activation = Act;
  template <int ObsDim, int ActDim>
  using network = nn::gaussian_actor_critic<ObsDim, ActDim, Hidden, Act>;
};

static_assert(gmi::agent<gaussian_mlp<>>);

}  // namespace gmi::agents

#pragma once
// gmi::agents::categorical_mlp<Hidden, Act>: the actor-critic for discrete actions (shared body, a head of one
// logit per action and the value, softmax sampling), sized from the environment: a task with
// `static constexpr int num_actions = N` gets N logits.

#include <gmi/concepts/agent.hpp>
#include <gmi/nn/activation.hpp>
#include <gmi/nn/actor_critic.hpp>
#include <gmi/nn/layers.hpp>

namespace gmi::agents {

template <class Hidden = nn::layers<32, 32>, class Act = nn::elu>
struct categorical_mlp {
  using agent_concept = gmi::agent_tag;
  using hidden = Hidden;
  using activation = Act;
  // NumActions = gmi::policy_outputs<Env>(), the task's num_actions.
  template <int ObsDim, int NumActions>
  using network = nn::categorical_actor_critic<ObsDim, NumActions, Hidden, Act>;
};

static_assert(gmi::agent<categorical_mlp<>>);

}  // namespace gmi::agents

// A continuous (Gaussian) agent on a task with discrete actions is refused with a sentence naming the categorical
// agent; the control pairs the task with gmi::agents::categorical_mlp.
#include <gmi/agents/categorical_mlp.hpp>
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/envs/cartpole_discrete.hpp>
#include <gmi/pipeline/pipeline.hpp>

#ifdef GMI_EXPECT_COMPILE_FAIL
using agent = gmi::agents::gaussian_mlp<>;
#else
using agent = gmi::agents::categorical_mlp<>;
#endif
using discrete_pipeline = gmi::pipeline<gmi::envs::cartpole_discrete, agent, gmi::trainers::ppo<>>;

int main() { return discrete_pipeline::network::discrete ? 0 : 1; }

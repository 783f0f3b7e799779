// A categorical agent on a task with continuous actions is refused with a sentence naming the Gaussian agent; the
// control pairs the task with gmi::agents::gaussian_mlp.
#include <gmi/agents/categorical_mlp.hpp>
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/pipeline/pipeline.hpp>

#ifdef GMI_EXPECT_COMPILE_FAIL
using agent = gmi::agents::categorical_mlp<>;
#else
using agent = gmi::agents::gaussian_mlp<>;
#endif
using continuous_pipeline = gmi::pipeline<gmi::envs::cartpole, agent, gmi::trainers::ppo<>>;

int main() { return continuous_pipeline::network::discrete ? 1 : 0; }

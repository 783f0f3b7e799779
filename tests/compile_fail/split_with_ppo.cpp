// The split layout runs asynchronous PPO: a pipeline that names the synchronous trainer there is refused with a
// sentence naming the trainer to use.
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/pipeline/pipeline.hpp>
#include <gmi/trainers/ppo.hpp>

#ifdef GMI_EXPECT_COMPILE_FAIL
using trainer = gmi::trainers::ppo<>;
#else
using trainer = gmi::trainers::appo<>;
#endif
using split_pipeline = gmi::pipeline<gmi::envs::cartpole, gmi::agents::gaussian_mlp<>, trainer, gmi::layout::split>;

int main() { return sizeof(split_pipeline) > 0 ? 0 : 1; }

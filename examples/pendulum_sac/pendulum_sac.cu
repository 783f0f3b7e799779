// Soft actor-critic through the pipeline: gmi::run with gmi::trainers::sac<> as the Trainer runs the off-policy
// layout (environments collect into a replay table, the learner samples batches from it; host threads or one GPU).
// The task is Pendulum unless built with GMI_TASK (point_reach for bench/sac/device_pipeline.sh; ant_v4 and humanoid_v4,
// with GMI_SAC_HIDDEN=256, for bench/sac/device_tasks.sh). Try --help.
#include <gmi/gmi.hpp>

#ifndef GMI_TASK
#define GMI_TASK pendulum
#endif
#ifndef GMI_SAC_HIDDEN
#define GMI_SAC_HIDDEN 64
#endif

using sac_pipeline = gmi::pipeline<gmi::envs::GMI_TASK,                                 // the task
                                   gmi::agents::gaussian_mlp<gmi::nn::layers<64, 64>>,  // (the PPO agent; SAC's
                                                                                        // networks are the trainer's)
                                   gmi::trainers::sac<gmi::rl::sac_config, GMI_SAC_HIDDEN>>;  // actor + twin critics

int main(int argc, char** argv) { return gmi::run<sac_pipeline>(argc, argv); }

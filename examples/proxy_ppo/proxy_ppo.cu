// PPO on a workload proxy (a seeded linear-quadratic task with an articulated task's observation and action sizes,
// docs/envs.md), where the best reachable mean return is known: -trace(P) of the Riccati solution for resets
// x0 ~ N(0, I). gmi::run prints it, reports every return beside it, and stops at --target-optimum-gap. The task is
// chosen when building (GMI_PROXY_TASK, default franka_cabinet_proxy). Try --help.
#include <gmi/gmi.hpp>

#ifndef GMI_PROXY_TASK
#define GMI_PROXY_TASK franka_cabinet_proxy
#endif

using proxy_ppo = gmi::pipeline<gmi::envs::GMI_PROXY_TASK,                              // the task (a proxy)
                                gmi::agents::gaussian_mlp<gmi::nn::layers<64, 64>>,     // n-64-64 actor-critic
                                gmi::trainers::ppo<>,                                   // PPO, rl_games-style
                                gmi::layout::colocated,                                 // env + agent + trainer per GMI
                                gmi::partition::none,                                   // --gmis-per-gpu, --partition
                                gmi::comm::hierarchical<gmi::comm::nccl>>;              // gradients over many GMIs

int main(int argc, char** argv) { return gmi::run<proxy_ppo>(argc, argv); }

// Cartpole PPO, written as a user would: one pipeline type, one call. Trains on the GPU when there is one and on
// host threads otherwise; stops when the mean return reaches 450 of 500 or at the step limit. Try --help.
#include <gmi/gmi.hpp>

using cartpole_ppo = gmi::pipeline<gmi::envs::cartpole,                            // the task (same as the anchor)
                                   gmi::agents::gaussian_mlp<gmi::nn::layers<32, 32>>,  // 4-32-32 actor-critic
                                   gmi::trainers::ppo<>,                             // PPO, rl_games-style
                                   gmi::layout::colocated,                           // env + agent + trainer per GMI
                                   gmi::partition::none,                             // default: one GMI (--gmis-per-gpu, --partition)
                                   gmi::comm::hierarchical<gmi::comm::nccl>>;        // gradients over many GMIs

int main(int argc, char** argv) { return gmi::run<cartpole_ppo>(argc, argv); }

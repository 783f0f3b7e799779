// Cartpole with asynchronous PPO (APPO) in the split layout: on each GPU, GMI 0 trains with V-trace and GMIs
// 1..k-1 step environments with the newest weights they have and stream rollouts to it through an experience
// channel. Default: 1 trainer + 3 serving GMIs as green contexts (threads); --partition mps runs them as
// processes. Stops when the mean return reaches 450 of 500, or at the time or step limit. Try --help.
#include <gmi/gmi.hpp>

using cartpole_appo = gmi::pipeline<gmi::envs::cartpole,
                                    gmi::agents::gaussian_mlp<gmi::nn::layers<32, 32>>,  // 4-32-32 actor-critic
                                    gmi::trainers::appo<>,                            // PPO loss, V-trace advantages
                                    gmi::layout::split,                               // serving GMIs -> trainer GMI
                                    gmi::partition::green_context,                    // SM slices, one process
                                    gmi::comm::hierarchical<gmi::comm::nccl>>;

int main(int argc, char** argv) { return gmi::run<cartpole_appo>(argc, argv); }

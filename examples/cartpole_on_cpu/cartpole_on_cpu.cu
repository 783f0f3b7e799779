// Cartpole PPO with the environments on CPU actors: the same program as cartpole_ppo with actors::on_cpu in the
// env slot. Cartpole's host code steps on every core but one (pinned, two env groups alternating); the policy
// and the update run on the GPU when there is one, on host threads otherwise. --gmis-per-gpu K trains K GMIs as
// one synchronous group, each on its own actor cores (--actor-cores-per-gmi). Try --help.
#include <gmi/gmi.hpp>

using cartpole_on_cpu = gmi::pipeline<gmi::actors::on_cpu<gmi::envs::cartpole>,           // Cartpole on CPU actors
                                      gmi::agents::gaussian_mlp<gmi::nn::layers<32, 32>>,  // 4-32-32 actor-critic
                                      gmi::trainers::ppo<>,                               // PPO
                                      gmi::layout::colocated,                             // env + agent + trainer per GMI
                                      gmi::partition::none,                               // --gmis-per-gpu, --partition
                                      gmi::comm::hierarchical<gmi::comm::nccl>>;          // gradients over GMIs on GPUs

int main(int argc, char** argv) { return gmi::run<cartpole_on_cpu>(argc, argv); }

// Ant PPO with MuJoCo on CPU actors: actors::on_mujoco<envs::ant_v4> in the env slot steps gmi::physics's Ant model
// with MuJoCo (its contacts as predefined pairs, one mjData per stepping thread) on every core but one (pinned, two
// env groups alternating); the policy and the update run on the GPU when there is one, on host threads otherwise.
// Flags, metrics lines, checkpoints (with every environment's MuJoCo state), --resume and stop rules are
// gmi::run's. --gmis-per-gpu K trains K GMIs as one synchronous group, each on its own actor cores. Try --help.
#include <gmi/gmi.hpp>
#include <gmi/pipeline/mujoco_actors.hpp>

using ant_on_cpu = gmi::pipeline<gmi::actors::on_mujoco<gmi::envs::ant_v4>,   // the Ant on MuJoCo, CPU actors
                                 gmi::agents::gaussian_mlp<>,              // 27-32-32 actor-critic
                                 gmi::trainers::ppo<>,                     // PPO
                                 gmi::layout::colocated,                   // env + agent + trainer per GMI
                                 gmi::partition::none,                     // --gmis-per-gpu, --partition
                                 gmi::comm::hierarchical<gmi::comm::nccl>>; // gradients over GMIs on GPUs

int main(int argc, char** argv) { return gmi::run<ant_on_cpu>(argc, argv); }

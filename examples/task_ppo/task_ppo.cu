// PPO on one task besides Cartpole (which has examples/cartpole_ppo): Pendulum, BallBalance, Quadcopter, Ingenuity, the
// learning suite's point_reach, sparse_reach, long_track, spring_chain, cartpole_discrete (discrete actions: a
// categorical agent), the physics tasks ant_v4, humanoid_v4, anymal, ant, humanoid (gmi::physics, docs/envs.md),
// or a workload proxy of an articulated task (a seeded linear-quadratic task with its observation and action sizes,
// docs/envs.md). On a proxy the best reachable mean return is known, -trace(P) of the Riccati solution for resets x0 ~
// N(0, I): gmi::run prints it, reports every return beside it, and stops at --target-optimum-gap.
// The task is chosen when building (GMI_TASK, default franka_cabinet_proxy). Try --help.
#include <gmi/gmi.hpp>

#ifndef GMI_TASK
#define GMI_TASK franka_cabinet_proxy
#endif

// The hidden layers: 64-64, or with GMI_ISAAC_NET (the *_isaac_net_ppo builds) the PyTorch anchor's Isaac Gym sizes.
template <class Task>
struct isaac_hidden {
  using type = gmi::nn::layers<64, 64>;
};
template <>
struct isaac_hidden<gmi::envs::ant_proxy> {
  using type = gmi::nn::layers<256, 128, 64>;
};
template <>
struct isaac_hidden<gmi::envs::humanoid_proxy> {
  using type = gmi::nn::layers<200, 400, 100>;
};
template <>
struct isaac_hidden<gmi::envs::shadow_hand_proxy> {
  using type = gmi::nn::layers<512, 512, 512, 256>;
};
#ifdef GMI_ISAAC_NET
using hidden = isaac_hidden<gmi::envs::GMI_TASK>::type;
#else
using hidden = gmi::nn::layers<64, 64>;
#endif

// A Gaussian policy for continuous actions, a categorical one (softmax over logits) for a task with num_actions.
using agent = std::conditional_t<gmi::has_discrete_actions<gmi::envs::GMI_TASK>, gmi::agents::categorical_mlp<hidden>,
                                 gmi::agents::gaussian_mlp<hidden>>;

using task_ppo = gmi::pipeline<gmi::envs::GMI_TASK,                                     // the task
                               agent,                                                   // n-64-64 unless GMI_ISAAC_NET
                               gmi::trainers::ppo<>,                                    // PPO, rl_games-style
                               gmi::layout::colocated,                                  // env + agent + trainer per GMI
                               gmi::partition::none,                                    // --gmis-per-gpu, --partition
                               gmi::comm::hierarchical<gmi::comm::nccl>>;               // gradients over many GMIs

int main(int argc, char** argv) { return gmi::run<task_ppo>(argc, argv); }

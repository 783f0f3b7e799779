// PPO with a categorical policy on a task of five discrete actions (grid_walk.hpp): the task declares
// num_actions = 5 and the pipeline names gmi::agents::categorical_mlp. Before training it prints what a
// hand-written greedy walker and a random policy return, the two ends of the scale the run's returns climb along.
#include <gmi/gmi.hpp>

#include "grid_walk.hpp"

#include <cstdio>

using grid_walk_ppo = gmi::pipeline<grid_walk,
                                    gmi::agents::categorical_mlp<gmi::nn::layers<64, 64>>,  // 5 logits + value
                                    gmi::trainers::ppo<>,
                                    gmi::layout::colocated,
                                    gmi::partition::none,
                                    gmi::comm::hierarchical<gmi::comm::nccl>>;

int main(int argc, char** argv) {
  const double greedy = grid_walk::mean_return([](const float* o, gmi::rng&) { return grid_walk::greedy(o); });
  const double random = grid_walk::mean_return([](const float*, gmi::rng& r) { return grid_walk::cell(r, 5); });
  std::printf("grid_walk: a greedy walker returns %.2f, a random policy %.2f\n", greedy, random);
  return gmi::run<grid_walk_ppo>(argc, argv);
}

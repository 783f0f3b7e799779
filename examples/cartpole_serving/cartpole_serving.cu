// Cartpole policy serving on GMIs: the pipeline type names the partition backend (MPS here), the flags say how
// many GMIs: `--gmis-per-gpu 8` serves with 8 MPS clients on one GPU, `--partition green_context` with 8
// green-context slices in one process, `--partition none --gmis-per-gpu 1` as one plain instance, `--gpus all`
// on every GPU. Prints each GMI's and the total steps/s with GPM SM activity. Try --help.
#include <gmi/gmi.hpp>

using cartpole_serving = gmi::pipeline<gmi::envs::cartpole,
                                       gmi::agents::gaussian_mlp<gmi::nn::layers<32, 32>>,
                                       gmi::trainers::none,     // inference only
                                       gmi::layout::serving,    // env + agent in every GMI
                                       gmi::partition::mps,     // one MPS client process per GMI
                                       gmi::comm::none>;

int main(int argc, char** argv) { return gmi::run<cartpole_serving>(argc, argv); }

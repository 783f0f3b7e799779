// A user's training program compiled by the host compiler (a .cpp file): the pipeline type, Comm included,
// compiles; calling gmi::run fails with a sentence saying it needs nvcc and how to build.
#include <gmi/gmi.hpp>

using host_ppo = gmi::pipeline<gmi::envs::cartpole, gmi::agents::gaussian_mlp<gmi::nn::layers<32, 32>>,
                               gmi::trainers::ppo<>, gmi::layout::colocated, gmi::partition::none,
                               gmi::comm::hierarchical<gmi::comm::nccl>>;

#ifdef GMI_EXPECT_COMPILE_FAIL
int main(int argc, char** argv) { return gmi::run<host_ppo>(argc, argv); }
#else
int main() { return sizeof(host_ppo) > 0 ? 0 : 1; }
#endif

// Your own environment trained with PPO: a point pushed along a line towards a goal (examples/quickstart, shown
// verbatim in the README). gmi steps it in batches on the GPU when there is one, on host threads otherwise.
#include <gmi/gmi.hpp>

#include <cmath>

struct reach {
  using env_concept = gmi::env_tag;                // opt in; the structure below is checked at compile time
  static constexpr int obs_dim = 2, act_dim = 1;
  static constexpr double solved_return = -6.0;    // gmi::run stops at this mean episode return (--target-return)
  struct params { float speed = 0.1f; int max_steps = 50; };  // max_steps: the time limit
  struct state { float x, goal; };

  GMI_HD static void reset(state& s, gmi::rng& r, const params&) {
    s.x = r.uniform(-1.0f, 1.0f);
    s.goal = r.uniform(-1.0f, 1.0f);
  }
  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    s.x += p.speed * fminf(fmaxf(action[0], -1.0f), 1.0f);
    return {.reward = -fabsf(s.goal - s.x), .terminated = false};
  }
  GMI_HD static void observe(const state& s, float* obs, const params&) {
    obs[0] = s.x;
    obs[1] = s.goal - s.x;
  }
};
static_assert(gmi::check_env<reach>());  // a missing member is named in a sentence

using reach_ppo = gmi::pipeline<reach,
                                gmi::agents::gaussian_mlp<gmi::nn::layers<32, 32>>,  // 2-32-32 actor-critic
                                gmi::trainers::ppo<>,
                                gmi::layout::colocated,      // env + agent + trainer in every GMI
                                gmi::partition::none,        // or mps, green_context (--partition)
                                gmi::comm::hierarchical<gmi::comm::nccl>>;  // gradients across GMIs

int main(int argc, char** argv) { return gmi::run<reach_ppo>(argc, argv); }

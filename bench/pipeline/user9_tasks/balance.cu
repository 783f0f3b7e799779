// One of user9's tasks (bench/pipeline/device_user9.sh), written against the public API as a user would.
// (c) early termination as failure plus a time limit: keep a ball on a beam whose tilt the action drives.
// x'' = (5/7) g sin(theta) + push, theta' = 2 clamp(a) rad/s; terminated (a failure) when |x| > 1 m or |theta| > 0.6;
// reward 1 - x^2 per step alive; time limit 300 steps of 0.02 s. Reset x, v, theta small and random; a random push
// each step (noise) keeps it from staying put by itself.
#include <gmi/gmi.hpp>
#include "controller.hpp"
#include <cmath>

struct balance {
  using env_concept = gmi::env_tag;
  static constexpr int obs_dim = 3, act_dim = 1;
  struct params { float dt = 0.02f, g = 9.81f, noise = 0.5f; int max_steps = 300; };
  struct state { float x, v, th; };
  GMI_HD static void reset(state& s, gmi::rng& r, const params&) {
    s.x = r.uniform(-0.5f, 0.5f); s.v = r.uniform(-0.5f, 0.5f); s.th = r.uniform(-0.2f, 0.2f);
  }
  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng& r, const params& p) {
    const float w = fminf(fmaxf(action[0], -1.0f), 1.0f) * 2.0f;
    s.th += p.dt * w;
    s.v += p.dt * (5.0f / 7.0f * p.g * sinf(s.th) + p.noise * r.normal());
    s.x += p.dt * s.v;
    const bool fell = fabsf(s.x) > 1.0f || fabsf(s.th) > 0.6f;
    return {.reward = fell ? 0.0f : 1.0f - s.x * s.x, .terminated = fell};
  }
  GMI_HD static void observe(const state& s, float* obs, const params&) { obs[0] = s.x; obs[1] = s.v; obs[2] = s.th; }
};
static_assert(gmi::check_env<balance>());

using balance_ppo = gmi::pipeline<balance, gmi::agents::gaussian_mlp<gmi::nn::layers<64, 64>>, gmi::trainers::ppo<>,
                                  gmi::layout::colocated, gmi::partition::none,
                                  gmi::comm::hierarchical<gmi::comm::nccl>>;

int main(int argc, char** argv) {
  const double good = mean_return<balance>([](const float* o, float* a, gmi::rng&) {
    const float th_cmd = -(0.6f * o[0] + 0.5f * o[1]);  // tilt against the ball's offset and speed
    a[0] = 4.0f * (th_cmd - o[2]);
  });
  const double rnd = mean_return<balance>([](const float*, float* a, gmi::rng& r) { a[0] = r.uniform(-1.f, 1.f); });
  std::printf("user9: balance hand-written controller %.3f, random %.3f\n", good, rnd);
  return gmi::run<balance_ppo>(argc, argv);
}

// One of user9's tasks (bench/pipeline/device_user9.sh), written against the public API as a user would.
// (b) continuous, observations in the hundreds: hold a tank at a target temperature (kelvin).
// obs (T, target, ambient) in K; action: heater power 2000 W * clamp(a) (negative cools); dT/dt = k (ambient - T)
// + P / C; reward exp(-|T - target| / 10) in (0, 1] every step; 200 steps of 5 s.
#include <gmi/gmi.hpp>
#include "controller.hpp"
#include <cmath>

struct heater {
  using env_concept = gmi::env_tag;
  static constexpr int obs_dim = 3, act_dim = 1;
  struct params { float dt = 5.0f, k = 0.002f, heat_capacity = 4000.0f, max_power = 2000.0f; int max_steps = 200; };
  struct state { float t, target, ambient; };
  GMI_HD static void reset(state& s, gmi::rng& r, const params&) {
    s.t = r.uniform(250.0f, 400.0f); s.target = r.uniform(280.0f, 380.0f); s.ambient = r.uniform(250.0f, 320.0f);
  }
  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    const float u = fminf(fmaxf(action[0], -1.0f), 1.0f) * p.max_power;
    s.t += p.dt * (p.k * (s.ambient - s.t) + u / p.heat_capacity);
    return {.reward = expf(-fabsf(s.t - s.target) / 10.0f), .terminated = false};
  }
  GMI_HD static void observe(const state& s, float* obs, const params&) {
    obs[0] = s.t; obs[1] = s.target; obs[2] = s.ambient;
  }
};
static_assert(gmi::check_env<heater>());

using heater_ppo = gmi::pipeline<heater, gmi::agents::gaussian_mlp<gmi::nn::layers<64, 64>>, gmi::trainers::ppo<>,
                                 gmi::layout::colocated, gmi::partition::none,
                                 gmi::comm::hierarchical<gmi::comm::nccl>>;

int main(int argc, char** argv) {
  const heater::params p{};
  const double good = mean_return<heater>([&](const float* o, float* a, gmi::rng&) {
    // feed-forward the loss to ambient, plus a proportional term; a one-step deadbeat where it fits
    const float hold = p.k * (o[1] - o[2]) * p.heat_capacity;
    const float move = (o[1] - o[0]) * p.heat_capacity / p.dt;
    a[0] = (hold + move) / p.max_power;
  });
  const double rnd = mean_return<heater>([](const float*, float* a, gmi::rng& r) { a[0] = r.uniform(-1.f, 1.f); });
  const double zero = mean_return<heater>([](const float*, float* a, gmi::rng&) { a[0] = 0; });
  std::printf("user9: heater hand-written controller %.3f, random %.3f, zero %.3f\n", good, rnd, zero);
  return gmi::run<heater_ppo>(argc, argv);
}

// gmi::train / gmi::serve on host threads (see train_runs.hpp).
#include "train_runs.hpp"

#include <gmi/gmi.hpp>

namespace {

// Every step pays params.reward; nothing ends an episode but the time limit.
struct constant_reward {
  using env_concept = gmi::env_tag;
  static constexpr const char* name = "constant_reward";
  static constexpr int obs_dim = 2, act_dim = 1;
  struct params {
    float reward = 1.0f;
    int max_steps = 10;
  };
  struct state {
    float t;
  };
  GMI_HD static void reset(state& s, gmi::rng&, const params&) { s.t = 0; }
  GMI_HD static gmi::transition step(state& s, const float*, gmi::rng&, const params& p) {
    s.t += 1;
    return {p.reward, false};
  }
  GMI_HD static void observe(const state& s, float* obs, const params&) {
    obs[0] = s.t;
    obs[1] = 1.0f;
  }
};
static_assert(gmi::env<constant_reward>);

using constant_ppo = gmi::pipeline<constant_reward, gmi::agents::gaussian_mlp<>, gmi::trainers::ppo<>>;
using cartpole_ppo = gmi::pipeline<gmi::envs::cartpole, gmi::agents::gaussian_mlp<>, gmi::trainers::ppo<>>;
using cartpole_serving = gmi::pipeline<gmi::envs::cartpole, gmi::agents::gaussian_mlp<>, gmi::trainers::none,
                                       gmi::layout::serving>;

template <class Config>
void small(Config& c) {
  c.device = gmi::device_choice::host;
  c.quiet = true;
  c.num_envs = 64;
  c.min_episodes = 8;
  c.ppo.minibatch = 512;
  c.ppo.epochs = 2;
}

gmi_test::train_outcome outcome_of(const gmi::train_result& r) {
  gmi_test::train_outcome o;
  o.reason = r.reason_text();
  o.exit_code = r.exit_code;
  o.env_steps = r.env_steps;
  o.mean_return = r.mean_return;
  o.eval_return = r.eval_return;
  o.train_rate = r.rates.train_samples_per_s;
  o.env_rate = r.rates.env_steps_per_s;
  o.serve_rate = r.rates.serve_steps_per_s;
  o.curve = r.curve;
  for (const auto& t : r.weights.tensors()) o.weight_names.push_back(t.name);
  return o;
}

}  // namespace

namespace gmi_test {

train_outcome train_constant_reward(float reward, int max_steps, double max_env_steps, double target_return) {
  auto c = gmi::default_config<constant_ppo>();
  small(c);
  c.env.reward = reward;
  c.env.max_steps = max_steps;
  c.max_env_steps = max_env_steps;
  c.target_return = target_return;
  return outcome_of(gmi::train<constant_ppo>(c));
}

train_outcome train_cartpole(double max_env_steps, unsigned long long seed) {
  auto c = gmi::default_config<cartpole_ppo>();
  small(c);
  c.seed = seed;
  c.max_env_steps = max_env_steps;
  return outcome_of(gmi::train<cartpole_ppo>(c));
}

train_outcome train_refused(const std::string& which) {
  auto c = gmi::default_config<cartpole_ppo>();
  small(c);
  if (which == "population") c.population = true;
  if (which == "optimum_gap") c.target_optimum_gap = 0.1;
  if (which == "clip") c.ppo.clip = 1.5f;
  try {
    return outcome_of(gmi::train<cartpole_ppo>(c));
  } catch (const gmi::config_error& e) {
    train_outcome o;
    o.error = e.what();
    return o;
  }
}

train_outcome serve_cartpole() {
  auto c = gmi::default_config<cartpole_serving>();
  small(c);
  c.serve_seconds = 0.2;
  return outcome_of(gmi::serve<cartpole_serving>(c));
}

}  // namespace gmi_test

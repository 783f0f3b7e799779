#include "on_cpu_runs.hpp"

#include <type_traits>

#include <gmi/gmi.hpp>
#include <gmi/pipeline/cpu_actors.hpp>

namespace {
namespace ac = gmi::actors;
using cart = gmi::envs::cartpole;
using on_cpu_ppo = gmi::pipeline<ac::on_cpu<cart, 2>, gmi::agents::gaussian_mlp<>, gmi::trainers::ppo<>>;
using host_engine = on_cpu_ppo::engine<gmi::exec::host>;

std::vector<float> flat(const gmi::io::checkpoint& ck) {
  std::vector<float> out;
  for (const auto& t : ck.tensors()) {
    const auto v = ck.get_f32(t.name);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}
}  // namespace

on_cpu_outcome train_cartpole_on_cpu(double max_env_steps) {
  on_cpu_outcome o;
  o.engine_is_actors = std::is_same_v<host_engine, ac::on_cpu_engine<cart, 2, on_cpu_ppo::network, gmi::exec::host>> &&
                       std::is_base_of_v<ac::ppo_on_actors<cart, on_cpu_ppo::network, ac::on_cpu<cart, 2>>, host_engine>;
  auto c = gmi::default_config<on_cpu_ppo>();
  c.device = gmi::device_choice::host;
  c.quiet = true;
  c.num_envs = 64;
  c.min_episodes = 8;
  c.ppo.minibatch = 512;
  c.ppo.epochs = 2;
  c.max_env_steps = max_env_steps;
  c.target_return = std::numeric_limits<double>::quiet_NaN();
  try {
    const gmi::train_result r = gmi::train<on_cpu_ppo>(c);
    o.reason = r.reason_text();
    o.env_steps = r.env_steps;
    o.iterations = long(r.iterations);
    o.train_rate = r.rates.train_samples_per_s;
    o.serve_rate = r.rates.serve_steps_per_s;
    o.weights = flat(r.weights);
    ac::ppo_on_actors<cart, on_cpu_ppo::network> ref(ac::actor_config{ac::choose_cores(2), 2}, c.num_envs, c.seed, c.ppo,
                                                     c.env);
    for (long i = 0; i < o.iterations; ++i) ref.iterate();
    o.reference = flat(ref.policy_tensors());
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

std::string on_cpu_sync_refusal() {
  host_engine e(8, 1, gmi::rl::ppo_config{});
  try {
    e.set_sync(gmi::rl::ppo_sync{});
  } catch (const gmi::config_error& err) {
    return err.what();
  }
  return "";
}

std::string on_cpu_several_gmis_refusal(const std::string& which) {
  auto c = gmi::default_config<on_cpu_ppo>();
  c.device = gmi::device_choice::host;
  c.quiet = true;
  c.num_envs = 64;
  c.max_env_steps = 1;
  if (which == "population") c.population = true;
  if (which == "gmis") c.gmis_per_gpu = 4;
  if (which == "gpus") c.gpus = "all";
  try {
    (void)gmi::train<on_cpu_ppo>(c);
  } catch (const gmi::config_error& err) {
    return err.what();
  }
  return "";
}

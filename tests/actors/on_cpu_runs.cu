#include "on_cpu_runs.hpp"

#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
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

namespace {
using on_cpu_any = gmi::pipeline<ac::on_cpu<cart, 0>, gmi::agents::gaussian_mlp<>, gmi::trainers::ppo<>>;
using plain_ppo = gmi::pipeline<cart, gmi::agents::gaussian_mlp<>, gmi::trainers::ppo<>>;

template <class P>
gmi::train_config<P> small_host_config(double max_env_steps) {
  auto c = gmi::default_config<P>();
  c.device = gmi::device_choice::host;
  c.quiet = true;
  c.num_envs = 64;
  c.min_episodes = 16;
  c.ppo.minibatch = 512;
  c.ppo.epochs = 4;
  c.max_env_steps = max_env_steps;
  c.max_seconds = 240;
  c.target_return = std::numeric_limits<double>::quiet_NaN();
  return c;
}
}  // namespace

std::string on_cpu_refusal(const std::string& which) {
  auto c = small_host_config<on_cpu_any>(1);
  try {
    if (which == "cores_without_actors" || which == "cpu_cores_without_actors") {
      auto p = small_host_config<plain_ppo>(1);
      if (which == "cores_without_actors") p.actor_cores_per_gmi = 2;
      else p.partition = "cpu_cores";
      (void)gmi::train<plain_ppo>(p);
      return "";
    }
    if (which == "population") c.population = true;
    if (which == "split_roles") {
      c.split_roles = true;
      c.gmis_per_gpu = 2;
    }
    if (which == "threshold") c.autotune.placement_threshold = -1;
    if (which == "too_many_cores") {
      c.gmis_per_gpu = 2;
      c.actor_cores_per_gmi = 4096;
    }
    (void)gmi::train<on_cpu_any>(c);
  } catch (const gmi::config_error& err) {
    return err.what();
  }
  return "";
}

on_cpu_gmis_outcome train_cartpole_on_cpu_gmis(int gmis, double max_env_steps, double target_return, bool direct) {
  on_cpu_gmis_outcome o;
  auto c = small_host_config<on_cpu_any>(max_env_steps);
  c.gmis_per_gpu = gmis;
  c.partition = "cpu_cores";
  c.actor_cores_per_gmi = 1;
  c.target_return = target_return;
  try {
    if (direct) {
      for (const auto& g : gmi::detail::run_cpu_actor_gmis<on_cpu_any>(c)) {
        o.cores.push_back(g.cores);
        o.weights.push_back(g.params);
        o.iterations = long(g.iterations);
        o.mean_return = g.end.mean_return;
        o.reason = gmi::stop_reason_text(g.end.reason, g.end.signal_number);
      }
      return o;
    }
    const gmi::train_result r = gmi::train<on_cpu_any>(c);
    o.reason = r.reason_text();
    o.exit_code = r.exit_code;
    o.gmis = r.gmis;
    o.iterations = long(r.iterations);
    o.env_steps = r.env_steps;
    o.mean_return = r.mean_return;
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

cli_outcome parse_on_cpu_cli(const std::vector<std::string>& args) {
  auto c = gmi::default_config<on_cpu_any>();
  std::vector<std::string> words{"prog"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  cli_outcome o;
  if (const auto code = gmi::parse_cli(int(argv.size()), argv.data(), c)) o.exit_code = *code;
  o.placement_threshold = c.autotune.placement_threshold;
  o.actor_cores_per_gmi = c.actor_cores_per_gmi;
  return o;
}

std::vector<int> applied_ratio(int cores_per_gmi, int envs_per_core, int gmis_per_gpu, std::string* error) {
  gmi::run_options o;
  gmi::plan::ratio_point r;
  r.cores_per_gmi = cores_per_gmi;
  r.envs_per_core = envs_per_core;
  r.gmis_per_gpu = gmis_per_gpu;
  r.steps_per_s = 1e5;
  try {
    gmi::apply_actor_ratio(o, r);
  } catch (const gmi::config_error& e) {
    *error = e.what();
    return {};
  }
  return {o.actor_cores_per_gmi, o.gmis_per_gpu, o.num_envs};
}

namespace {
// The JSON lines of a metrics file.
std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}
}  // namespace

host_gmis_run run_host_gmis(long iterations, const std::string& checkpoint, const std::string& resume,
                            const std::string& metrics) {
  host_gmis_run o;
  auto c = small_host_config<on_cpu_any>(2.0 * 64 * 16 * double(iterations));
  c.gmis_per_gpu = 2;
  c.partition = "cpu_cores";
  c.actor_cores_per_gmi = 1;
  c.log_interval = 0;
  c.checkpoint_path = checkpoint;
  c.resume_path = resume;
  c.metrics_path = metrics;
  c.log_interval = 0;  // a progress line at every decision
  std::remove(metrics.c_str());
  for (int r = 0; r < 2; ++r) std::remove(gmi::detail::member_metrics_path(metrics, r).c_str());
  try {
    const gmi::train_result r = gmi::train<on_cpu_any>(c);
    o.reason = r.reason_text();
    o.exit_code = r.exit_code;
    o.iterations = long(r.iterations);
    for (const auto& j : read_lines(metrics)) {
      if (j.value("event", "") == "end") {
        o.end_hash = std::to_string(j.at("weights_hash").get<std::uint64_t>());
        o.end_identical = j.at("weights_identical").get<bool>();
        o.resumed_at = j.at("resumed_at").get<long>();
        continue;
      }
      if (o.first_metrics_iteration < 0) o.first_metrics_iteration = j.at("iteration").get<long>();
      ++o.metrics_lines;
    }
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

resumable_run run_resumable(int gmis, double max_env_steps, const std::string& checkpoint, const std::string& resume,
                            const std::string& metrics) {
  resumable_run o;
  auto c = small_host_config<on_cpu_any>(max_env_steps);
  c.gmis_per_gpu = gmis;
  c.num_envs = 128 / gmis;
  c.actor_cores_per_gmi = 1;
  if (gmis > 1) c.partition = "cpu_cores";
  c.checkpoint_path = checkpoint;
  c.resume_path = resume;
  c.metrics_path = metrics;
  std::remove(metrics.c_str());
  try {
    const gmi::train_result r = gmi::train<on_cpu_any>(c);
    o.reason = r.reason_text();
    o.exit_code = r.exit_code;
    o.iterations = long(r.iterations);
    o.env_steps = r.env_steps;
    for (const auto& j : read_lines(metrics)) {
      if (j.value("event", "") != "end") continue;
      o.end_iteration = j.at("iteration").get<long>();
      o.resumed_at = j.at("resumed_at").get<long>();
      o.end_env_steps = j.at("env_steps").get<double>();
      o.end_wall_s = j.at("wall_s").get<double>();
    }
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

namespace {
// --plan needs a communicator that reduces (checked for every layout that trains); host GMIs sum on the host.
using on_cpu_planned = gmi::pipeline<ac::on_cpu<cart, 0>, gmi::agents::gaussian_mlp<>, gmi::trainers::ppo<>,
                                     gmi::layout::colocated, gmi::partition::none,
                                     gmi::comm::hierarchical<gmi::comm::nccl>>;
}  // namespace

ratio_plan_run train_on_ratio_plan(const std::string& path, const std::string& metrics, bool with_ratio) {
  ratio_plan_run o;
  namespace pl = gmi::plan;
  pl::plan p;
  p.made_for = pl::machine::of(pl::discover());
  p.chosen = pl::candidate{"mps", 4, 512};  // the GPU trials' choice: host threads take only the ratio
  p.trials_of = "colocated";
  p.selection = "test";
  p.stopped_by = "test";
  if (with_ratio) {
    const auto point = [](int cores, int envs, int gmis, double rate) {
      pl::ratio_point r;
      r.cores_per_gmi = cores;
      r.envs_per_core = envs;
      r.gmis_per_gpu = gmis;
      r.steps_per_s = rate;
      return r;
    };
    p.cpu_actor_ratio = pl::choose_ratio({point(1, 64, 1, 1.0e5), point(1, 16, 2, 2.0e5), point(2, 16, 1, 1.5e5)});
  }
  auto c = small_host_config<on_cpu_planned>(2.0 * 64 * 16 * 3);
  c.autotune.plan_path = path;
  c.metrics_path = metrics;
  c.log_interval = 0;
  std::remove(metrics.c_str());
  try {
    pl::save(p, path);
    const pl::plan back = pl::load(path);
    if (back.cpu_actor_ratio) {
      o.chosen_cores = back.cpu_actor_ratio->chosen.cores_per_gmi;
      o.chosen_envs_per_core = back.cpu_actor_ratio->chosen.envs_per_core;
      o.chosen_gmis = back.cpu_actor_ratio->chosen.gmis_per_gpu;
    }
    if (with_ratio) {  // the program's own entry: gmi::run over the flags a user types
      std::vector<std::string> words{"prog", "--device", "host", "--plan", path, "--metrics", metrics, "--quiet",
                                     "--log-interval", "0", "--max-env-steps", "6144", "--target-return", "nan",
                                     "--min-episodes", "16"};
      std::vector<char*> argv;
      for (auto& w : words) argv.push_back(w.data());
      o.exit_code = gmi::run<on_cpu_planned>(int(argv.size()), argv.data());
    } else {
      o.exit_code = gmi::train<on_cpu_planned>(c).exit_code;
    }
    for (const auto& j : read_lines(metrics)) {
      if (j.value("event", "") != "end") continue;
      o.gmis = j.at("gmis").get<int>();
      o.num_envs = j.at("num_envs").get<int>();
      o.actor_cores_per_gmi = j.at("actor_cores_per_gmi").get<int>();
      o.actor_cores = j.at("actor_cores").get<std::vector<std::vector<int>>>();
    }
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

population_run train_population_on_cpu(const std::string& metrics) {
  population_run o;
  auto c = small_host_config<on_cpu_any>(64 * 16 * 4);
  c.population = true;
  c.gmis_per_gpu = 2;
  c.actor_cores_per_gmi = 1;
  c.seed = 7;
  c.metrics_path = metrics;
  c.log_interval = 0;  // a progress line at every decision
  std::remove(metrics.c_str());
  for (int r = 0; r < 2; ++r) std::remove(gmi::detail::member_metrics_path(metrics, r).c_str());
  try {
    const gmi::train_result r = gmi::train<on_cpu_any>(c);
    o.exit_code = r.exit_code;
    o.gmis = r.gmis;
    for (const auto& j : read_lines(metrics)) {
      if (j.value("event", "") != "population") continue;
      for (const auto& m : j.at("members")) {
        population_member_run p;
        p.seed = m.at("seed").get<std::uint64_t>();
        p.reason = m.at("reason").get<std::string>();
        p.iterations = m.at("iterations").get<long>();
        p.actor_cores = m.at("actor_cores").get<std::vector<int>>();
        const int rank = m.at("rank").get<int>();
        for (const auto& l : read_lines(gmi::detail::member_metrics_path(metrics, rank))) {
          p.file_seed = l.at("seed").get<std::uint64_t>();
          p.file_rank = l.at("rank").get<long>();
          if (l.value("event", "") != "end") {
            ++p.progress_lines;
            continue;
          }
          ++p.end_lines;
          p.file_iterations = l.at("iteration").get<long>();
          p.curve_points = l.at("curve").size();
          p.wall_points = l.at("wall_curve").size();
        }
        o.members.push_back(p);
      }
    }
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

// PPO on host threads with any ppo_config, for measuring defaults without a GPU and without gmi::run's flags:
// prints the mean return of the episodes finished in each reporting window and the last window's at the end.
// Usage: gmi.tool.host_ppo <task> [--num-envs 256] [--minibatch 1024] [--env-steps 1e6] [--seed 1] [--threads 0]
//        [--normalize-obs 0|1] [--normalize-value 0|1] [--normalize-advantage 0|1] [--popart 0|1] [--random-start 0|1] [--obs-window N]
//        [--value-window N]
//        [--lr-schedule constant|adaptive|linear|kl_capped] [--max-lr 1e-2] [--kl-target 0.016] [--reports 20]
//        [--gamma 0.99] [--lambda 0.95] [--lr 3e-4] [--entropy 0] [--epochs 8] [--horizon 16] [--obs-clip 5]
//        [--eval-episodes 256] [--entropy-schedule constant|linear] [--min-entropy 0] [--log-std-min -inf]
//        [--log-std-max inf] [--max-steps N (the proxies' training episode length; the evaluation keeps 1000)]
//        [--value-coef 2] [--clip 0.2] [--max-grad-norm 1] [--clip-value 0|1 (1)] [--value-clip 0.5] [--value-symlog 0|1]
//        [--advantage-window 1 (rollouts)]
//        [--value-scale-only 0|1] [--diagnostics 0|1 (each line adds the return statistics, the observation
//        statistics' mean std, Adam's RMS gradient norms and the log-std: print_diagnostics)]
//        [--reward-scaling 0|1 (with --normalize-value 0)] [--reward-clip 10] [--reward-window N]
// Tasks: the suite's small ones (cartpole, pendulum, point_reach, sparse_reach, long_track, spring_chain, quadcopter) and the
// LQ proxies (ant_proxy, anymal_proxy, humanoid_proxy, franka_cabinet_proxy, shadow_hand_proxy). The last line
// also gives the deterministic evaluation's mean return (rl/ppo_eval.hpp) and, for the proxies, both returns over
// the Riccati optimum's and rest_cost / rest_gap: the mean policy's cost over one episode started at rest (x0 = 0,
// where the optimal controller costs 0), the part of the evaluation's cost that the settled states' actions add.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/envs/registry.hpp>
#include <gmi/envs/lq_proxy.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/rl/ppo_eval.hpp>

namespace {
struct options {
  int num_envs = 256, seed = 1, threads = 0, reports = 20, eval_episodes = gmi::rl::default_eval_episodes;
  int max_steps = 0;  // > 0: the LQ proxies' training episode length (the evaluation keeps the default)
  double env_steps = 1e6;
  bool diagnostics = false;
  gmi::rl::ppo_config ppo;
};

[[noreturn]] void bad(const std::string& what, const std::string& got, const std::string& need) {
  std::fprintf(stderr, "gmi.tool.host_ppo: %s: got %s, need %s\n", what.c_str(), got.c_str(), need.c_str());
  std::exit(2);
}

// The policy's mean std over its action dimensions (exp of the log-std parameters).
template <class Trainer>
double policy_std(Trainer& t) {
  using net = typename Trainer::net_type;
  double sum = 0;
  for (int j = 0; j < net::act_dim; ++j) sum += std::exp(double(t.params()[net::log_std_offset + j]));
  return sum / net::act_dim;
}

// --diagnostics 1: what drifts late in a run. vmean/vstd: the return normalizer's statistics; obs_std: the mean
// of the observation normalizer's stds; grad_rms: sqrt of the sum of Adam's bias-corrected second moments, about the
// RMS norm of the recent clipped gradients (1 when the max_grad_norm clip binds at every step); grad_rms_pi/_v: the
// same over the policy's own parameters (the head's policy rows and the log-std) and the value row of the head;
// mu_rms: the RMS of the head's policy bias.
template <class Trainer>
void print_diagnostics(Trainer& t) {
  using net = typename Trainer::net_type;
  const auto v = t.value_normalizer().view(), ob = t.obs_normalizer().view();
  double obs_std = 0;
  for (int j = 0; j < ob.dim; ++j) obs_std += ob.std[j] / ob.dim;
  const auto m2 = t.optimizer().second_moment();
  const double bc2 = 1.0 - std::pow(0.999, double(t.optimizer().steps()));
  double all = 0, pi = 0, val = 0;
  for (std::size_t q = 0; q < m2.size(); ++q) all += m2[q] / bc2;
  for (int j = 0; j < net::act_dim; ++j) pi += m2[net::log_std_offset + j] / bc2;
  for (int k = 0; k < net::hidden * net::act_dim; ++k) pi += m2[net::head_weight_offset + k] / bc2;
  for (int k = 0; k < net::hidden; ++k) val += m2[net::head_weight_offset + net::act_dim * net::hidden + k] / bc2;
  std::printf(" vmean %.5g vstd %.5g obs_std %.4g grad_rms %.4g grad_rms_pi %.4g grad_rms_v %.4g log_std", v.mean[0],
              v.std[0], obs_std, std::sqrt(all), std::sqrt(pi), std::sqrt(val));
  for (int j = 0; j < net::act_dim; ++j) std::printf("%c%.3f", j ? ',' : ' ', double(t.params()[net::log_std_offset + j]));
}

template <class Task, class Hidden>
int train(const options& o) {
  using net = typename gmi::agents::gaussian_mlp<Hidden>::template network<Task::obs_dim, Task::act_dim>;
  typename Task::params env{};
  if constexpr (requires { env.max_steps; }) {
    if (o.max_steps > 0) env.max_steps = o.max_steps;
  }
  gmi::rl::ppo_trainer<Task, net, gmi::exec::host> t(o.num_envs, o.seed, o.ppo, env,
                                                      gmi::exec::host{.threads = static_cast<unsigned>(o.threads)});
  const double per = double(t.samples_per_iteration());
  const long iterations = std::max(1L, long((o.env_steps + per - 1) / per));
  const long every = std::max(1L, iterations / o.reports);
  gmi::rl::episode_stats window;
  double last = std::numeric_limits<double>::quiet_NaN();
  for (long i = 1; i <= iterations; ++i) {
    t.iterate();
    const auto e = t.episodes();
    window.episodes += e.episodes;
    window.return_sum += e.return_sum;
    if (i % every == 0 || i == iterations) {
      if (window.episodes > 0) last = window.mean_return();
      const auto l = t.losses();
      std::printf("host_ppo: %s steps %.0f return %.6g episodes %llu value_loss %.4g kl %.4g clip_frac %.3g lr %.3g "
                  "entropy_coef %.3g std %.4g", Task::name, double(i) * per, last,
                  static_cast<unsigned long long>(window.episodes), l.value_loss, l.approx_kl, l.clip_fraction,
                  l.learning_rate, t.current_entropy_coef(), policy_std(t));
      if (o.diagnostics) print_diagnostics(t);
      std::printf("\n");
      std::fflush(stdout);
      window = {};
    }
  }
  const gmi::rl::eval_result ev =
      gmi::rl::evaluate_mode(t, o.eval_episodes, {}, gmi::exec::host{.threads = static_cast<unsigned>(o.threads)});
  std::printf("host_ppo: final %s %.6g eval %.6g std %.4g", Task::name, last, ev.mean_return, policy_std(t));
  if constexpr (requires { Task::optimal_mean_return(typename Task::params{}); }) {
    const double opt = Task::optimal_mean_return(typename Task::params{});
    std::printf(" optimum %.6g gap %.4g eval_gap %.4g", opt, last / opt, ev.mean_return / opt);
    // The mean policy from rest (x0 = 0, where the optimal controller costs 0): what its action at the settled
    // states costs over a whole episode, the part of eval_gap that the transient does not explain.
    typename Task::params rest{};
    rest.init_std = 0.0f;
    const gmi::rl::eval_result at_rest =
        gmi::rl::evaluate_mode(t, 1, rest, gmi::exec::host{.threads = static_cast<unsigned>(o.threads)});
    std::printf(" rest_cost %.4g rest_gap %.4g", -at_rest.mean_return, at_rest.mean_return / opt);
  }
  std::printf("\n");
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) bad("task", "none", "a suite task of host_ppo_tool.cpp's usage line");
  options o;
  o.ppo.minibatch = 1024;
  const std::string task = argv[1];
  for (int i = 2; i < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) bad(std::string(flag), "no value", "a value");
    const std::string v = argv[i + 1];
    const auto flag01 = [&](bool& b) {
      if (v != "0" && v != "1") bad(std::string(flag), v, "0 or 1");
      b = v == "1";
    };
    if (flag == "--num-envs") o.num_envs = std::atoi(v.c_str());
    else if (flag == "--minibatch") o.ppo.minibatch = std::atoi(v.c_str());
    else if (flag == "--env-steps") o.env_steps = std::atof(v.c_str());
    else if (flag == "--seed") o.seed = std::atoi(v.c_str());
    else if (flag == "--threads") o.threads = std::atoi(v.c_str());
    else if (flag == "--diagnostics") flag01(o.diagnostics);
    else if (flag == "--reports") o.reports = std::max(1, std::atoi(v.c_str()));
    else if (flag == "--normalize-obs") flag01(o.ppo.normalize_obs);
    else if (flag == "--normalize-value") flag01(o.ppo.normalize_value);
    else if (flag == "--normalize-advantage") flag01(o.ppo.normalize_advantage);
    else if (flag == "--popart") flag01(o.ppo.popart);
    else if (flag == "--random-start") flag01(o.ppo.random_episode_start);
    else if (flag == "--obs-window") o.ppo.obs_normalizer_window = std::atof(v.c_str());
    else if (flag == "--value-window") o.ppo.value_normalizer_window = std::atof(v.c_str());
    else if (flag == "--max-lr") o.ppo.max_learning_rate = float(std::atof(v.c_str()));
    else if (flag == "--kl-target") o.ppo.kl_target = float(std::atof(v.c_str()));
    else if (flag == "--value-coef") o.ppo.value_coef = float(std::atof(v.c_str()));
    else if (flag == "--clip") o.ppo.clip = float(std::atof(v.c_str()));
    else if (flag == "--max-grad-norm") o.ppo.max_grad_norm = float(std::atof(v.c_str()));
    else if (flag == "--clip-value") flag01(o.ppo.clip_value);
    else if (flag == "--advantage-window") o.ppo.advantage_window = std::atoi(v.c_str());
    else if (flag == "--value-clip") o.ppo.value_clip = float(std::atof(v.c_str()));
    else if (flag == "--value-symlog") flag01(o.ppo.value_symlog);
    else if (flag == "--value-scale-only") flag01(o.ppo.value_scale_only);
    else if (flag == "--reward-scaling") flag01(o.ppo.reward_scaling);
    else if (flag == "--reward-clip") o.ppo.reward_clip = float(std::atof(v.c_str()));
    else if (flag == "--reward-window") o.ppo.reward_scaling_window = std::atof(v.c_str());
    else if (flag == "--gamma") o.ppo.gamma = float(std::atof(v.c_str()));
    else if (flag == "--lambda") o.ppo.lambda = float(std::atof(v.c_str()));
    else if (flag == "--lr") o.ppo.learning_rate = float(std::atof(v.c_str()));
    else if (flag == "--entropy") o.ppo.entropy_coef = float(std::atof(v.c_str()));
    else if (flag == "--epochs") o.ppo.epochs = std::atoi(v.c_str());
    else if (flag == "--horizon") o.ppo.horizon = std::atoi(v.c_str());
    else if (flag == "--obs-clip") o.ppo.obs_clip = float(std::atof(v.c_str()));
    else if (flag == "--eval-episodes") o.eval_episodes = std::atoi(v.c_str());
    else if (flag == "--lr-schedule") {
      const auto s = gmi::rl::parse_lr_schedule(v);
      if (!s) bad("--lr-schedule", v, "constant, adaptive, linear or kl_capped");
      o.ppo.schedule = *s;
    } else if (flag == "--entropy-schedule") {
      const auto s = gmi::rl::parse_entropy_schedule(v);
      if (!s) bad("--entropy-schedule", v, "constant or linear");
      o.ppo.entropy_decay = *s;
    } else if (flag == "--min-entropy") o.ppo.min_entropy_coef = float(std::atof(v.c_str()));
    else if (flag == "--log-std-min") o.ppo.log_std_min = float(std::atof(v.c_str()));
    else if (flag == "--max-steps") o.max_steps = std::atoi(v.c_str());
    else if (flag == "--log-std-max") o.ppo.log_std_max = float(std::atof(v.c_str()));
    else bad("flag", std::string(flag), "one of those in the usage line of host_ppo_tool.cpp");
  }
  // Linear schedules span the whole run (whichever flag came first).
  if (o.ppo.schedule == gmi::rl::lr_schedule::linear) o.ppo.lr_decay_env_steps = o.env_steps;
  if (o.ppo.entropy_decay == gmi::rl::entropy_schedule::linear) o.ppo.entropy_decay_env_steps = o.env_steps;
  if (o.eval_episodes < 1) bad("--eval-episodes", std::to_string(o.eval_episodes), ">= 1");
  if (o.num_envs < 1) bad("--num-envs", std::to_string(o.num_envs), ">= 1");
  if (!(o.env_steps >= 1)) bad("--env-steps", std::to_string(o.env_steps), ">= 1");
  try {
    o.ppo.validate();
    using small = gmi::nn::layers<32, 32>;
    using mid = gmi::nn::layers<64, 64>;
    if (task == "cartpole") return train<gmi::envs::cartpole, small>(o);
    if (task == "pendulum") return train<gmi::envs::pendulum, mid>(o);
    if (task == "point_reach") return train<gmi::envs::point_reach, mid>(o);
    if (task == "sparse_reach") return train<gmi::envs::sparse_reach, mid>(o);
    if (task == "long_track") return train<gmi::envs::long_track, mid>(o);
    if (task == "spring_chain") return train<gmi::envs::spring_chain, mid>(o);
    if (task == "quadcopter") return train<gmi::envs::quadcopter, mid>(o);
    if (task == "ant_proxy") return train<gmi::envs::ant_proxy, mid>(o);
    if (task == "anymal_proxy") return train<gmi::envs::anymal_proxy, mid>(o);
    if (task == "humanoid_proxy") return train<gmi::envs::humanoid_proxy, mid>(o);
    if (task == "franka_cabinet_proxy") return train<gmi::envs::franka_cabinet_proxy, mid>(o);
    if (task == "shadow_hand_proxy") return train<gmi::envs::shadow_hand_proxy, mid>(o);
  } catch (const gmi::error& e) {
    std::fprintf(stderr, "gmi.tool.host_ppo: %s\n", e.what());
    return 2;
  }
  bad("task", task, "a suite task of host_ppo_tool.cpp's usage line");
}

#pragma once
// The off-policy layout: what gmi::train and gmi::run do for a pipeline whose trainer is off-policy
// (gmi::trainers::sac). The trainer type chooses it, whatever the pipeline's Layout says: every GMI's environments
// collect into a replay table and its learner samples batches from it (rl::sac_trainer on host threads with a
// replay::host_table; rl::sac_device_trainer on one GPU with a replay::device_table), no PPO engine behind it.
// Flags: the run's own (--num-envs, --max-env-steps, ...) and --sac-* for rl::sac_config.

#include <cmath>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/device.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/pipeline/cli.hpp>
#include <gmi/pipeline/defaults.hpp>
#include <gmi/pipeline/offpolicy_loop.hpp>
#include <gmi/pipeline/resolve.cuh>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/rl/sac.cuh>
#include <gmi/rl/sac.hpp>
#include <gmi/runtime/flags.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace gmi::detail {

// Refuses the options the off-policy layout does not have (one line each), then the shared checks.
template <class Pipeline>
void validate_offpolicy(train_config<Pipeline>& o) {
  o.sac.validate();
  gmi::require(!o.population && o.sweep_path.empty(), "--population/--sweep with trainer", "sac",
               "one training (population mode runs PPO)");
  gmi::require(!o.split_roles, "--split-roles with trainer", "sac", "no --split-roles (the split layout runs APPO)");
  gmi::require(!o.autotune.on && o.autotune.plan_path.empty(), "--autotune/--plan with trainer", "sac",
               "neither (plans are searched for the PPO layouts)");
  gmi::require(o.checkpoint_path.empty() && o.resume_path.empty() && o.restart_on_failure == 0,
               "--checkpoint/--resume/--restart-on-failure with trainer", "sac",
               "none of them (SAC runs save no checkpoints yet; replay::snapshot saves a table)");
  gmi::require(o.sac_eval_episodes >= 0 && o.sac_eval_episodes <= 4096, "--sac-eval-episodes", o.sac_eval_episodes,
               "0 .. 4096");
  using Env = typename Pipeline::env;
  if (const auto best = optimal_mean_return<Env>(o.env)) o.optimal_mean_return = *best;
  gmi::require(std::isnan(o.target_optimum_gap) || (std::isfinite(o.target_optimum_gap) && o.target_optimum_gap > 0),
               "--target-optimum-gap", o.target_optimum_gap, "> 0 (a fraction of |optimum|, e.g. 0.1)");
  if (std::isfinite(o.target_optimum_gap)) {
    gmi::require(std::isfinite(o.optimal_mean_return), "--target-optimum-gap for task", task_name<Env>(),
                 "a task with a known optimal mean return (the *_proxy tasks)");
    o.target_return = o.optimal_mean_return - o.target_optimum_gap * std::fabs(o.optimal_mean_return);
  }
}

// Host threads or one GPU; several GMIs are refused: data-parallel SAC learners over GMIs (gradients through the
// hierarchical allreduce) are not built yet.
template <class Pipeline>
placement place_offpolicy(const train_config<Pipeline>& o) {
  const bool several = o.gmis_per_gpu > 1 || o.gpus != "1" || o.partition != "none" ||
                       o.launch == runtime::launch_mode::processes;
  if (several) {
    throw gmi::config_error(gmi::got_need(
        "--gmis-per-gpu/--gpus/--partition/--launch for trainer sac",
        std::to_string(o.gmis_per_gpu) + " GMIs a GPU, --gpus " + o.gpus + ", --partition " + o.partition,
        "one GMI (--gmis-per-gpu 1 --gpus 1 --partition none): SAC learners over several GMIs are not built yet"));
  }
  const auto gpus = cuda::device_count();
  const bool use_gpu = o.device == device_choice::gpu || (o.device == device_choice::automatic && gpus.has_value());
  if (!use_gpu) {
    return placement::on_host(gpus ? std::string("host threads (asked for)")
                                   : "host threads (" + gpus.error().message() + ")");
  }
  if (!gpus) throw gmi::config_error(gmi::got_need("--device", "gpu", "a CUDA device (" + gpus.error().message() + ")"));
  gmi::require(o.gpu < *gpus, "--gpu", o.gpu, "< " + std::to_string(*gpus) + " (visible CUDA devices)");
  const auto info = cuda::describe_device(o.gpu);
  return placement::on_gpu(o.gpu, info.name + " (" + std::to_string(info.sm_count) + " SMs)");
}

template <class Pipeline>
train_result train_offpolicy(train_config<Pipeline> o) {
  using Env = typename Pipeline::env;
  using Trainer = typename Pipeline::trainer;
  using Nets = typename Trainer::template networks<Env>;
  validate_offpolicy(o);
  if (std::isfinite(o.optimal_mean_return) && !o.quiet) {
    std::printf("gmi: %s: optimal mean return %s (known for this task); target %s\n", task_name<Env>(),
                metrics::si(o.optimal_mean_return).c_str(),
                std::isfinite(o.target_return) ? metrics::si(o.target_return).c_str() : "none");
  }
  const placement where = place_offpolicy(o);
  if (where.at == placement::where::host) {
    rl::sac_trainer<Env, Nets> eng(o.sac, o.num_envs, o.seed, o.env, exec::host{});
    return offpolicy_loop<Pipeline>(eng, o, where.device_text, "gmi_host");
  }
  GMI_CUDA_TRY(cudaSetDevice(where.gpu));
  rl::sac_device_trainer<Env, Nets> eng(o.sac, o.num_envs, o.seed, o.env);
  return offpolicy_loop<Pipeline>(eng, o, where.device_text, "gmi_device");
}

// gmi::run's flags for an off-policy pipeline: the run's and the SAC settings. Returns the exit code when the
// program should stop here (--help: 0; a bad flag: 2), nullopt to run.
template <class Pipeline>
std::optional<int> parse_offpolicy_cli(int argc, char** argv, train_config<Pipeline>& o) {
  CLI::App app{"gmi pipeline: off-policy layout (SAC)", argc > 0 ? argv[0] : "gmi"};
  auto& s = o.sac;
  std::string device = choice_name(o.device, device_choice_names);
  app.add_option("--num-envs", o.num_envs, "environments")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  app.add_option("--seed", o.seed, "seed of environments, actions, initial weights and samples")->capture_default_str();
  app.add_option("--device", device, "where to run")->check(CLI::IsMember(choice_names(device_choice_names)))->capture_default_str();
  app.add_option("--gpu", o.gpu, "CUDA device ordinal")->check(detail::non_negative_number())->capture_default_str();
  app.add_option("--gpus", o.gpus, "GPUs to use (off-policy: 1)")->capture_default_str();
  app.add_option("--gmis-per-gpu", o.gmis_per_gpu, "GMIs per GPU (off-policy: 1)")->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--max-env-steps", o.max_env_steps, "stop after this many environment steps")->check(detail::positive_number())->capture_default_str();
  app.add_option("--max-seconds", o.max_seconds, "stop after this many seconds")->check(detail::positive_number())->capture_default_str();
  auto* target_flag = app.add_option("--target-return", o.target_return, "stop when the mean episode return reaches this (nan: never)");
  app.add_option("--target-optimum-gap", o.target_optimum_gap, "stop within this fraction of the task's optimal mean return");
  app.add_option("--min-episodes", o.min_episodes, "episodes a mean return must cover")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--log-interval", o.log_interval, "seconds between progress lines")->check(CLI::Range(0.0, 3600.0))->capture_default_str();
  app.add_option("--metrics", o.metrics_path, "append JSON-lines metrics to this file");
  app.add_flag("--quiet", o.quiet, "no progress lines");
  app.add_option("--sac-batch", s.batch, "transitions per gradient step")->capture_default_str();
  app.add_option("--sac-gamma", s.gamma, "discount")->capture_default_str();
  app.add_option("--sac-tau", s.tau, "Polyak factor of the target critics")->capture_default_str();
  app.add_option("--sac-actor-lr", s.actor_lr, "actor learning rate")->capture_default_str();
  app.add_option("--sac-critic-lr", s.critic_lr, "critics' learning rate")->capture_default_str();
  app.add_option("--sac-alpha-lr", s.alpha_lr, "temperature learning rate")->capture_default_str();
  app.add_option("--sac-initial-alpha", s.initial_alpha, "temperature before tuning")->capture_default_str();
  app.add_option("--sac-replay-capacity", s.replay_capacity, "transitions kept (oldest evicted)")->capture_default_str();
  app.add_option("--sac-warmup-steps", s.warmup_steps, "env transitions with uniform random actions first")->capture_default_str();
  app.add_option("--sac-updates-per-step", s.updates_per_step, "gradient steps per collected env transition")->capture_default_str();
  app.add_option("--sac-max-grad-norm", s.max_grad_norm, "gradient-norm clip (default: none)");
  app.add_option("--sac-eval-episodes", o.sac_eval_episodes, "fresh episodes of the deterministic policy at the end")->capture_default_str();
  if (const auto code = runtime::parse_flags(app, argc, argv)) return *code;
  o.device = parse_choice("--device", device, device_choice_names);
  if (std::isfinite(o.target_optimum_gap) && target_flag->count() > 0) {
    std::fprintf(stderr, "%s: --target-optimum-gap with --target-return: got %g, need one of the two\n",
                 app.get_name().c_str(), o.target_return);
    return 2;
  }
  return std::nullopt;
}

template <class Pipeline>
int run_offpolicy(int argc, char** argv) {
  train_config<Pipeline> config = default_config<Pipeline>();
  if (const auto code = parse_offpolicy_cli(argc, argv, config)) return *code;
  const char* program = argc > 0 ? argv[0] : "gmi";
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  try {
    return train_offpolicy<Pipeline>(config).exit_code;
  } catch (const gmi::config_error& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 2;
  } catch (const gmi::error& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.describe().c_str());
    return 1;
  }
}

}  // namespace gmi::detail

#pragma once
// The off-policy layout: what gmi::train and gmi::run do for a pipeline whose trainer is off-policy
// (gmi::trainers::sac). The trainer type chooses it, whatever the pipeline's Layout says: every GMI's environments
// collect into a replay table and its learner samples batches from it (rl::sac_trainer on host threads with a
// replay::host_table; rl::sac_device_trainer on one GPU with a replay::device_table), no PPO engine behind it.
// Several GMIs (--gmis-per-gpu K, --gpus, --partition mps; on the host --partition cpu_cores) are data-parallel
// learners, each with its own replay shard (offpolicy_gmis.cuh).
// Flags: the run's shared ones (cli.hpp's add_run_flags: --num-envs, --max-env-steps, ...) and --sac-*; on a GPU
// the settings no flag gives are rl::sac_gpu_scale's (apply_sac_gpu_scale).

#include <cmath>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/device.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/pipeline/cli.hpp>
#include <gmi/pipeline/defaults.hpp>
#include <gmi/pipeline/offpolicy_gmis.cuh>
#include <gmi/pipeline/offpolicy_loop.hpp>
#include <gmi/pipeline/resolve.cuh>
#include <gmi/pipeline/restart.hpp>
#include <gmi/pipeline/sac_defaults.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/rl/sac.cuh>
#include <gmi/rl/sac.hpp>
#include <gmi/runtime/flags.hpp>
#include <gmi/runtime/gmis.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace gmi::detail {

// Refuses the options the off-policy layout does not have (one line each), then the shared checks.
template <class Pipeline>
void validate_offpolicy(train_config<Pipeline>& o) {
  o.sac.validate();
  gmi::require(!o.population && o.sweep_path.empty(), "--population/--sweep with trainer", "sac",
               "one training (population mode runs PPO)");
  if (o.split_roles) {
    const bool host = o.partition == "cpu_cores";
    gmi::require((host ? o.device != device_choice::gpu && o.gmis_per_gpu >= 2
                       : o.device != device_choice::host && (o.gmis_per_gpu >= 2 || o.gpus != "1")),
                 "--split-roles with trainer sac on", std::string(choice_name(o.device, device_choice_names)) + ", --partition " +
                     o.partition + ", " + std::to_string(o.gmis_per_gpu) + " GMI(s) a GPU, --gpus " + o.gpus,
                 "at least 2 GMIs: --device host --partition cpu_cores --gmis-per-gpu >= 2, or GPU GMIs (--partition "
                 "none or mps, --gmis-per-gpu >= 2 or several --gpus); GMI 0 learns, the others act");
  }
  gmi::require(!o.split_roles || o.sac.n_step == 1, "--sac-n-step with --split-roles", o.sac.n_step,
               "1 (the actors send one-step transitions)");
  gmi::require(!o.sac_global_sampling || (!o.split_roles && o.sac.replay_shards == 1),
               "--sac-global-sampling with", o.split_roles ? "--split-roles" : "--sac-replay-shards > 1",
               "data-parallel learners with one table each (neither --split-roles nor --sac-replay-shards > 1)");
  gmi::require(o.gradient_allreduce != allreduce_choice::automatic, "--gradient-allreduce with trainer sac", "automatic",
               "hierarchical (GPU GMIs sum on the device) or cpu_staged (through the host)");
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

// Whether the learners run on a GPU: in a GMI process, with --device gpu, or with --device auto where a GPU is
// visible and the GMIs are not host GMIs (--partition cpu_cores).
template <class Pipeline>
bool offpolicy_on_gpu(const train_config<Pipeline>& o) {
  if (runtime::this_gmi().has_value() || o.device == device_choice::gpu) return true;
  return o.device == device_choice::automatic && o.partition != "cpu_cores" && cuda::device_count().has_value();
}

// Host threads (one GMI, or --partition cpu_cores: --gmis-per-gpu K host GMIs), one GPU, or GPU GMIs (none or MPS).
// `host_gmis` is set to the host GMIs' count.
template <class Pipeline>
placement place_offpolicy(const train_config<Pipeline>& o, int& host_gmis) {
  host_gmis = 1;
  const std::string shape = std::to_string(o.gmis_per_gpu) + " GMIs a GPU, --gpus " + o.gpus + ", --partition " +
                            o.partition + ", --launch " + choice_name(o.launch, runtime::launch_mode_names);
  gmi::require(o.partition == "none" || o.partition == "mps" || o.partition == "cpu_cores",
               "--partition for trainer sac", o.partition,
               "none or mps (GPU GMIs), or cpu_cores (host GMIs): data-parallel learners run there");
  const bool gmi_process = runtime::this_gmi().has_value();
  const auto gpus = cuda::device_count();
  const bool use_gpu = offpolicy_on_gpu(o);
  if (!use_gpu) {
    if (o.partition == "cpu_cores") {
      gmi::require(o.gpus == "1" && o.launch != runtime::launch_mode::processes,
                   "--gpus/--launch with --partition cpu_cores", shape,
                   "--gpus 1 and threads (host GMIs are threads of this process)");
      if (gmi::status st = partition::cpu_cores::can_implement(o.gmis_per_gpu); !st) {
        throw gmi::config_error("--gmis-per-gpu with --partition cpu_cores: " + st.message());
      }
      host_gmis = o.gmis_per_gpu;
      return placement::on_host(std::to_string(host_gmis) + " host GMIs (cpu_cores)");
    }
    if (o.gmis_per_gpu > 1 || o.gpus != "1" || o.partition != "none" || o.launch == runtime::launch_mode::processes) {
      throw gmi::config_error(gmi::got_need("--gmis-per-gpu/--gpus/--partition/--launch for trainer sac on host threads",
                                            shape, "--partition cpu_cores for several host GMIs, or a GPU"));
    }
    return placement::on_host(gpus ? std::string("host threads (asked for)")
                                   : "host threads (" + gpus.error().message() + ")");
  }
  if (!gpus) throw gmi::config_error(gmi::got_need("--device", "gpu", "a CUDA device (" + gpus.error().message() + ")"));
  gmi::require(o.partition != "cpu_cores", "--partition for trainer sac on a GPU", o.partition,
               "none or mps (cpu_cores is for --device host)");
  if (!gmi_process) gmi::require(o.gpu < *gpus, "--gpu", o.gpu, "< " + std::to_string(*gpus) + " (visible CUDA devices)");
  const std::vector<int> chosen = gpus_of_run(o, *gpus);
  if (gmi_process || chosen.size() > 1 || o.gmis_per_gpu > 1 || o.partition != "none" ||
      o.launch == runtime::launch_mode::processes) {
    runtime::gmis_config cfg = gmis_config_of(o, chosen);
    cfg.heartbeat_timeout = std::chrono::milliseconds(30000);
    // GMI processes get no GMI_* of ours from the launcher: the test hook (split roles' lost actor) goes explicitly.
    if (const char* v = std::getenv(test_kill_var)) cfg.env.emplace_back(test_kill_var, v);
    return placement::on_gmis(std::move(cfg));
  }
  const auto info = cuda::describe_device(o.gpu);
  return placement::on_gpu(o.gpu, info.name + " (" + std::to_string(info.sm_count) + " SMs)");
}

template <class Pipeline>
train_result train_offpolicy(train_config<Pipeline> o) {
  using Env = typename Pipeline::env;
  using Trainer = typename Pipeline::trainer;
  using Nets = typename Trainer::template networks<Env>;
  validate_offpolicy(o);
  if (std::isfinite(o.optimal_mean_return) && !o.quiet && !runtime::this_gmi()) {
    std::printf("gmi: %s: optimal mean return %s (known for this task); target %s\n", task_name<Env>(),
                metrics::si(o.optimal_mean_return).c_str(),
                std::isfinite(o.target_return) ? metrics::si(o.target_return).c_str() : "none");
  }
  int host_gmis = 1;
  const placement where = place_offpolicy(o, host_gmis);
  gmi::require(!o.sac_global_sampling || host_gmis > 1 || where.at == placement::where::gmis,
               "--sac-global-sampling on", "one learner",
               "2 or more data-parallel learners (--gmis-per-gpu >= 2 or several --gpus)");
  if (o.split_roles) {  // refuses --split-transport device where it cannot run (host GMIs, several GPUs under MPS/MIG)
    const bool gmis = where.at == placement::where::gmis;
    const bool see_every_gpu = gmis && where.cfg.partition == "none";
    (void)split_transport_on_device(o.split_transport, gmis, gmis ? int(where.cfg.gpus.size()) : 1, see_every_gpu);
  }
  if (where.at == placement::where::host && host_gmis > 1) return offpolicy_on_host_gmis<Pipeline>(o, host_gmis);
  if (where.at == placement::where::gmis) return offpolicy_on_gpu_gmis<Pipeline>(o, where.cfg);
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
  std::vector<std::function<void()>> after;  // the choice flags' words into their enums
  std::vector<std::string> partitions(partition::gpu_backends::names.begin(), partition::gpu_backends::names.end());
  partitions.emplace_back("cpu_cores");  // host GMIs: data-parallel learners without a GPU
  CLI::Option* target_flag = add_run_flags(app, after, o, partitions);
  app.add_option("--sac-batch", s.batch, "transitions per gradient step")->capture_default_str();
  app.add_option("--sac-gamma", s.gamma, "discount")->capture_default_str();
  app.add_option("--sac-tau", s.tau, "Polyak factor of the target critics")->capture_default_str();
  app.add_option("--sac-actor-lr", s.actor_lr, "actor learning rate")->capture_default_str();
  app.add_option("--sac-critic-lr", s.critic_lr, "critics' learning rate")->capture_default_str();
  app.add_option("--sac-alpha-lr", s.alpha_lr, "temperature learning rate")->capture_default_str();
  app.add_option("--sac-initial-alpha", s.initial_alpha, "temperature before tuning")->capture_default_str();
  app.add_option("--sac-replay-capacity", s.replay_capacity, "transitions kept (oldest evicted)")->capture_default_str();
  app.add_option("--sac-warmup-steps", s.warmup_steps, "env transitions with uniform random actions first")->capture_default_str();
  CLI::Option* per_step = app.add_option("--sac-updates-per-step", s.updates_per_step,
                                         "gradient steps per collected env transition")->capture_default_str();
  app.add_option("--sac-updates-per-vector-step", s.updates_per_vector_step,
                 "gradient steps per vector step (a step of all --num-envs environments); replaces "
                 "--sac-updates-per-step")->excludes(per_step);
  app.add_option("--sac-max-grad-norm", s.max_grad_norm, "gradient-norm clip (default: none)");
  app.add_option("--sac-n-step", s.n_step, "rewards summed per stored transition before the critics bootstrap "
                 "(n-step returns, cut where an episode ends)")->capture_default_str();
  app.add_option("--sac-target-entropy", s.target_entropy, "the temperature's entropy target (default: -action "
                 "dimensions)");
  app.add_flag("--sac-cuda-graph,!--no-sac-cuda-graph", s.cuda_graph,
               "one GPU GMI: replay each update as a captured CUDA graph (same results; not with gradients averaged "
               "over GMIs; on by default); --no-sac-cuda-graph launches every kernel");
  app.add_option("--sac-replay-shards", s.replay_shards, "GPU trainer: the replay as this many device tables, one a "
                 "group of environments, sampled as one table (above 1: the update launches, no CUDA graph)")
      ->capture_default_str();
  app.add_option("--sac-placement-every", s.placement_every, "GPU trainer: a placement step every this many vector "
                 "steps (shards by their draws: hot ones in device memory, cold ones in pinned host memory); 0: none")
      ->capture_default_str();
  app.add_option("--sac-replay-device-mib", s.replay_device_mib, "GPU trainer: device memory for the shards' columns, "
                 "MiB (whole shards, hottest first; every shard starts in pinned host memory); default: no budget");
  app.footer(std::string("The defaults above are the host trainer's (a few environments, the paper's settings). With the "
                         "learners on a GPU, what no flag sets takes rl::sac_gpu_scale: --num-envs ") +
             std::to_string(rl::sac_gpu_scale::num_envs) + ", --sac-batch " + std::to_string(rl::sac_gpu_scale::batch) +
             ", --sac-updates-per-vector-step " + std::to_string(int(rl::sac_gpu_scale::updates_per_vector_step)) +
             ", --sac-warmup-steps " + std::to_string(rl::sac_gpu_scale::warmup_steps) + ", --sac-replay-capacity " +
             std::to_string(rl::sac_gpu_scale::replay_capacity) + ", --sac-n-step " +
             std::to_string(rl::sac_gpu_scale::n_step) + " (1 with --split-roles).");
  app.add_flag("--sac-global-sampling", o.sac_global_sampling,
               "data-parallel learners: each update's batch (learners x --sac-batch) one uniform sample over the union "
               "of their tables, each learner drawing its share from its own and weighting its gradient by it; off: "
               "each learner samples --sac-batch from its own table");
  app.add_flag("--split-roles", o.split_roles,
               "host or GPU GMIs: GMI 0 learns from the transitions the other GMIs collect (they only act, with the "
               "learner's weights one message behind; on a GPU its device table takes them; --split-transport)");
  add_choice(app, after, "--split-transport", o.split_transport, split_transport_names,
             "--split-roles: how the actors' transitions reach the learner and its weights come back: device (GPU GMIs "
             "of one GPU: the actors write into the learner's device memory through channels, no host copy), host "
             "(messages through the host, one upload a message), auto (device where it runs, else host)");
  add_choice(app, after, "--gradient-allreduce", o.gradient_allreduce, allreduce_choice_names,
             "GPU GMIs: average each update's gradients on the device (hierarchical: the GPU's GMIs, then NCCL "
             "between GPUs; no stream wait) or through the host (cpu_staged: two stream waits an update); host GMIs "
             "always sum through the host");
  app.add_option("--sac-eval-episodes", o.sac_eval_episodes, "fresh episodes of the deterministic policy at the end")->capture_default_str();
  if (const auto code = runtime::parse_flags(app, argc, argv)) return *code;
  for (const auto& fill : after) fill();
  if (offpolicy_on_gpu(o)) apply_sac_gpu_scale(o, [&](const char* flag) { return app.count(flag) > 0; });
  return check_target_flags(app, target_flag, o);
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

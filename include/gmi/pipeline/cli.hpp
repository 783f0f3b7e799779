#pragma once
// gmi::run's flags: parse_cli fills a train_config from argv (the pipeline's defaults first, then the flags), with
// CLI11's --help; a bad flag or value is one line naming it and what is allowed, exit code 2. What a flag's value
// means is train_config's business (run_options.hpp, rl::ppo_config); the checks that need every flag at once
// are validate's (resolve.cuh), so a program that fills a config in code gets them too.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include <gmi/core/choice.hpp>
#include <gmi/core/error.hpp>
#include <gmi/partition/partition.hpp>
#include <gmi/pipeline/defaults.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/rl/ppo_config.hpp>
#include <gmi/runtime/flags.hpp>

namespace gmi {

namespace detail {
// A flag whose value is one word of `table` (core/choice.hpp): CLI11 checks the word, and its line lists them;
// `after` fills `out` once argv is parsed.
template <class E, std::size_t N>
CLI::Option* add_choice(CLI::App& app, std::vector<std::function<void()>>& after, const std::string& flag, E& out,
                        const choice_table<E, N>& table, const std::string& help) {
  auto text = std::make_shared<std::string>(choice_name(out, table));
  after.push_back([text, &out, &table, flag] { out = parse_choice(flag, *text, table); });
  return app.add_option(flag, *text, help)->check(CLI::IsMember(choice_names(table)))->default_str(*text);
}

// Number checks that say what was given and what is allowed in one short line (CLI11's own print the whole double
// range): a finite number > 0, or >= 0.
inline CLI::Validator number_at_least(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool ok = !text.empty() && end && *end == '\0' && std::isfinite(v) && (zero_allowed ? v >= 0 : v > 0);
        return ok ? std::string() : "got " + text + ", need a number " + (zero_allowed ? ">= 0" : "> 0");
      },
      zero_allowed ? "NUMBER >= 0" : "NUMBER > 0");
}
inline CLI::Validator positive_number() { return number_at_least(false); }
inline CLI::Validator non_negative_number() { return number_at_least(true); }

// The flags of every layout, the off-policy one included (run_offpolicy.cuh): envs, seed, where the GMIs run and
// how many, the limits and target, progress and metrics. `partitions`: the words --partition takes. Returns
// --target-return's option for check_target_flags.
template <class Names>
CLI::Option* add_run_flags(CLI::App& app, std::vector<std::function<void()>>& after, run_options& o,
                           const Names& partitions) {
  app.add_option("--num-envs", o.num_envs, "environments per GMI")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  app.add_option("--seed", o.seed, "seed of environments, policy sampling, initial weights and shuffles")->capture_default_str();
  add_choice(app, after, "--device", o.device, device_choice_names, "where to run");
  app.add_option("--gpu", o.gpu, "CUDA device ordinal")->check(non_negative_number())->capture_default_str();
  app.add_option("--gpus", o.gpus, "GPUs to use from --gpu on: a count or \"all\"")->capture_default_str();
  app.add_option("--gmis-per-gpu", o.gmis_per_gpu, "GMIs per GPU (the backend sets the upper bound; host: GMIs)")
      ->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--partition", o.partition, "partition backend (default: the pipeline's)")
      ->check(CLI::IsMember(std::vector<std::string>(partitions.begin(), partitions.end())))
      ->capture_default_str();
  add_choice(app, after, "--launch", o.launch, runtime::launch_mode_names,
             "GMIs as threads or processes (mps/mig: processes; green_context: threads)");
  app.add_option("--mps-percentage", o.mps_percentage, "MPS active-thread percentage per GMI (default 100 / GMIs per GPU, rounded up)")
      ->check(CLI::Range(1, 100));
  app.add_option("--sms-per-gmi", o.sms_per_gmi, "green_context: SMs per GMI (0: the largest equal slice)")
      ->check(non_negative_number())->capture_default_str();
  app.add_option("--max-env-steps", o.max_env_steps,
                 "stop after this many environment steps in all (since training began: a resumed checkpoint's count in)")
      ->check(positive_number())
      ->capture_default_str();
  app.add_option("--max-seconds", o.max_seconds, "stop after this many seconds of training")->check(positive_number())->capture_default_str();
  auto* target_return_flag =
      app.add_option("--target-return", o.target_return, "stop when the mean episode return reaches this (nan: never)");
  app.add_option("--target-optimum-gap", o.target_optimum_gap,
                 "stop when the mean return is within this fraction of the task's optimal mean return (tasks with a "
                 "known optimum: the *_proxy tasks); e.g. 0.1: at most 10% below it");
  app.add_option("--min-episodes", o.min_episodes, "episodes a mean return must cover")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--log-interval", o.log_interval, "seconds between progress lines")->check(CLI::Range(0.0, 3600.0))->capture_default_str();
  app.add_option("--metrics", o.metrics_path, "append JSON-lines metrics to this file");
  app.add_flag("--quiet", o.quiet, "no progress lines");
  return target_return_flag;
}

// After parsing: --target-optimum-gap and --target-return exclude each other (exit code 2 and one line).
inline std::optional<int> check_target_flags(const CLI::App& app, const CLI::Option* target_return_flag,
                                             const run_options& o) {
  if (std::isfinite(o.target_optimum_gap) && target_return_flag->count() > 0) {
    std::fprintf(stderr, "%s: --target-optimum-gap with --target-return: got %g, need one of the two\n",
                 app.get_name().c_str(), o.target_return);
    return 2;
  }
  return std::nullopt;
}

// A config check's line names the train_config field ("ppo.learning_rate: got -1, need in (0, 1)"); under
// gmi::run the flag that set it is the name to show ("--lr: got -1, need in (0, 1)"). Other lines stay.
inline std::string with_flag_name(const std::string& line) {
  static constexpr std::pair<std::string_view, std::string_view> renamed[] = {
      {"learning_rate", "lr"}, {"max_learning_rate", "max-lr"}};
  static constexpr std::string_view same[] = {  // ppo fields whose flag is the field's name with dashes
      "horizon", "minibatch", "epochs", "clip", "dual_clip", "gamma", "lambda", "max_grad_norm", "value_coef",
      "entropy_coef", "bounds_loss_coef", "min_entropy_coef", "entropy_decay_env_steps", "value_symlog",
      "value_scale_only", "advantage_window", "value_clip",
      "log_std_min", "log_std_max", "obs_clip", "obs_normalizer_window", "value_normalizer_window",
      "reward_scaling", "reward_clip", "reward_scaling_window",
      "lr_decay_env_steps", "kl_target"};
  constexpr std::string_view prefix = "ppo.";
  const std::size_t colon = line.find(':');
  if (colon == std::string::npos || !line.starts_with(prefix)) return line;
  const std::string_view field = std::string_view(line).substr(prefix.size(), colon - prefix.size());
  std::string flag;
  for (const auto& [from, to] : renamed)
    if (field == from) flag = to;
  for (const std::string_view f : same)
    if (field == f) flag = f;
  if (flag.empty()) return line;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return "--" + flag + line.substr(colon);
}
}  // namespace detail

// Fills `o` from argv on top of what it holds (gmi::default_config<Pipeline>() for gmi::run). Returns the exit
// code when the program should stop here (--help: 0; a bad flag: 2, its line printed), nullopt to run.
template <class Pipeline>
std::optional<int> parse_cli(int argc, char** argv, train_config<Pipeline>& o) {
  CLI::App app{"gmi pipeline: " + std::string(Pipeline::layout_type::name) + " layout", argc > 0 ? argv[0] : "gmi"};
  std::vector<std::function<void()>> after;  // the choice flags' words into their enums
  using detail::add_choice;
  const std::vector<std::string> partitions = [] {
    std::vector<std::string> names(partition::gpu_backends::names.begin(), partition::gpu_backends::names.end());
    names.emplace_back("cpu_cores");  // actors::on_cpu on host threads (pipeline/cpu_actor_gmis.hpp)
    return names;
  }();
  CLI::Option* target_return_flag = detail::add_run_flags(app, after, o, partitions);
  app.add_option("--host-id", o.host_id, "this host's id in a run over several hosts (mpirun/srun; default hostname[.local rank])");
  app.add_option("--actor-cores-per-gmi", o.actor_cores_per_gmi,
                 "CPU actors (actors::on_cpu): actor cores per GMI, disjoint between GMIs (0: the type's, or an even share)")
      ->check(CLI::Range(0, 4096))->capture_default_str();
  app.add_option("--serve-seconds", o.serve_seconds, "serving layout: seconds to measure")->check(detail::positive_number())->capture_default_str();
  app.add_option("--horizon", o.ppo.horizon, "PPO steps per environment per iteration")->capture_default_str();
  app.add_option("--minibatch", o.ppo.minibatch, "PPO minibatch size")->capture_default_str();
  app.add_option("--epochs", o.ppo.epochs, "PPO epochs per iteration")->capture_default_str();
  app.add_option("--lr", o.ppo.learning_rate, "Adam learning rate")->capture_default_str();
  app.add_option("--clip", o.ppo.clip, "PPO ratio clip")->capture_default_str();
  app.add_option("--dual-clip", o.ppo.dual_clip,
                 "dual-clip PPO: a negative advantage's ratio counts up to this (0: off; else > 1 + clip)")
      ->capture_default_str();
  app.add_option("--gamma", o.ppo.gamma, "discount")->capture_default_str();
  app.add_option("--lambda", o.ppo.lambda, "GAE lambda")->capture_default_str();
  app.add_option("--entropy-coef", o.ppo.entropy_coef, "entropy bonus weight")->capture_default_str();
  std::string entropy_schedule = rl::entropy_schedule_name(o.ppo.entropy_decay);
  app.add_option("--entropy-schedule", entropy_schedule,
                 "entropy weight: constant (--entropy-coef) or linear (from --entropy-coef down to --min-entropy-coef "
                 "over --entropy-decay-env-steps)")
      ->check(CLI::IsMember({"constant", "linear"}))->capture_default_str();
  app.add_option("--min-entropy-coef", o.ppo.min_entropy_coef, "linear entropy schedule: the floor")->capture_default_str();
  auto* entropy_decay_flag = app.add_option("--entropy-decay-env-steps", o.ppo.entropy_decay_env_steps,
                                            "linear entropy schedule: env steps of the whole training the decay spans "
                                            "(default: --max-env-steps)");
  app.add_option("--log-std-min", o.ppo.log_std_min,
                 "floor of the Gaussian policy's log-std parameter after every step (-inf: none)")->capture_default_str();
  app.add_option("--log-std-max", o.ppo.log_std_max,
                 "ceiling of the Gaussian policy's log-std parameter after every step (inf: none)")->capture_default_str();
  app.add_option("--bounds-loss-coef", o.ppo.bounds_loss_coef,
                 "weight of the loss that keeps action means inside [-1.1, 1.1] (rl_games' bounds_loss_coef)")
      ->capture_default_str();
  app.add_option("--value-coef", o.ppo.value_coef, "value loss weight")->capture_default_str();
  app.add_option("--value-clip", o.ppo.value_clip,
                 "--clip-value true: the new value kept within this of the rollout's (normalized units with "
                 "--normalize-value; rl_games' e_clip 0.2)")->capture_default_str();
  app.add_option("--advantage-window", o.ppo.advantage_window,
                 "PPO trainer, with --normalize-advantage true: advantages normalized by the mean and std of the last "
                 "this many rollouts (older samples forgotten); 1: each rollout by its own")->capture_default_str();
  app.add_option("--max-grad-norm", o.ppo.max_grad_norm, "gradient-norm clip (<= 0: off)")->capture_default_str();
  app.add_option("--obs-normalizer-window", o.ppo.obs_normalizer_window,
                 "samples the observation normalizer weighs at most (older ones fade); 0: every sample")
      ->capture_default_str();
  app.add_option("--obs-clip", o.ppo.obs_clip, "normalized observations are clamped to +-this (PPO trainer and its "
                 "evaluation; APPO and serving keep 5)")->capture_default_str();
  app.add_option("--value-normalizer-window", o.ppo.value_normalizer_window,
                 "samples the return normalizer weighs at most (older ones fade); 0: every sample")
      ->capture_default_str();
  // The PPO config's switches, spelled true/false (anything else: one line naming the flag).
  std::array<std::pair<bool*, std::string>, 9> normalize{{{&o.ppo.normalize_obs, "true"},
                                                          {&o.ppo.normalize_value, "true"},
                                                          {&o.ppo.normalize_advantage, "true"},
                                                          {&o.ppo.clip_value, "false"},
                                                          {&o.ppo.popart, "false"},
                                                          {&o.ppo.random_episode_start, "true"},
                                                          {&o.ppo.value_symlog, "false"},
                                                          {&o.ppo.reward_scaling, "false"},
                                                          {&o.ppo.value_scale_only, "false"}}};
  for (auto& [flag, text] : normalize) text = *flag ? "true" : "false";
  app.add_option("--normalize-obs", normalize[0].second, "running mean/std of observations")
      ->check(CLI::IsMember({"true", "false"}))->capture_default_str();
  app.add_option("--normalize-value", normalize[1].second,
                 "the value head predicts returns normalized by their running mean/std")
      ->check(CLI::IsMember({"true", "false"}))->capture_default_str();
  app.add_option("--normalize-advantage", normalize[2].second, "advantages normalized over the rollout")
      ->check(CLI::IsMember({"true", "false"}))->capture_default_str();
  app.add_option("--clip-value", normalize[3].second,
                 "PPO2-style clipped value loss: the new value kept within --value-clip of the rollout's (rl_games' clip_value)")
      ->check(CLI::IsMember({"true", "false"}))->capture_default_str();
  app.add_option("--popart", normalize[4].second,
                 "with --normalize-value: when the return statistics change, rescale the value head so its "
                 "predictions stay (PopArt)")
      ->check(CLI::IsMember({"true", "false"}))->capture_default_str();
  app.add_option("--random-episode-start", normalize[5].second,
                 "PPO trainer: the first reset starts each env's step counter at a uniform draw in [0, max_steps) so "
                 "time limits fall out of phase; those first episodes are left out of the mean return")
      ->check(CLI::IsMember({"true", "false"}))->capture_default_str();
  app.add_option("--value-symlog", normalize[6].second,
                 "PPO trainer, with --normalize-value true and --popart false: the value head predicts "
                 "sign(R) ln(1 + |R|) of the return R instead of the standardized return")
      ->check(CLI::IsMember({"true", "false"}))->capture_default_str();
  app.add_option("--reward-scaling", normalize[7].second,
                 "PPO trainer, with --normalize-value false: rewards divided by the running std of each env's "
                 "discounted return (no mean subtracted), clamped to +-(--reward-clip); SB3's and CleanRL's reward "
                 "normalization")
      ->check(CLI::IsMember({"true", "false"}))->capture_default_str();
  app.add_option("--value-scale-only", normalize[8].second,
                 "PPO trainer, with --normalize-value true: the value head predicts returns divided by their running "
                 "std, the mean not subtracted (rl_games' norm_only)")
      ->check(CLI::IsMember({"true", "false"}))->capture_default_str();
  app.add_option("--reward-clip", o.ppo.reward_clip, "--reward-scaling: scaled rewards are clamped to +-this")
      ->capture_default_str();
  app.add_option("--reward-scaling-window", o.ppo.reward_scaling_window,
                 "--reward-scaling: samples of the discounted return its std weighs at most; 0: every sample")
      ->capture_default_str();
  std::string schedule = rl::lr_schedule_name(o.ppo.schedule);
  app.add_option("--lr-schedule", schedule,
                 "learning-rate schedule: constant, adaptive (rl_games' KL rule, up to --max-lr), kl_capped (the KL rule "
                 "with --lr as its ceiling) or linear (from --lr down to 1e-6 over --lr-decay-env-steps)")
      ->check(CLI::IsMember({"constant", "adaptive", "linear", "kl_capped"}))->capture_default_str();
  app.add_option("--kl-target", o.ppo.kl_target,
                 "adaptive and kl_capped: the lr falls (/1.5) after a step whose KL passed 2x this and rises (x1.5) "
                 "below half of it")->capture_default_str();
  app.add_option("--max-lr", o.ppo.max_learning_rate, "adaptive: the ceiling of the lr")->capture_default_str();
  auto* lr_decay_flag = app.add_option("--lr-decay-env-steps", o.ppo.lr_decay_env_steps,
                                       "linear lr schedule: env steps of the whole training the decay spans "
                                       "(default: --max-env-steps)");
  app.add_option("--ppo-gradient", o.ppo_gradient,
                 "GPU trainer, for comparisons: form each minibatch's gradient by warps (one warp a sample), tiles "
                 "(a tile of samples a block) or threads (one thread a sample); default: the network's");
  app.add_option("--collection", o.collection,
                 "GPU trainer: collect by threads (one thread an env) or batched (cuBLASLt products over all envs); "
                 "default: batched for networks with a layer >= 129 units wide or >= 32 inputs, else threads");
  app.add_option("--net-precision", o.net_precision,
                 "GPU trainer: the precision of the cuBLASLt products (batched collection, gemm gradients): fp32, "
                 "tf32 or bf16; default fp32");
  app.add_option("--net-kernels", o.net_kernels,
                 "GPU trainer: the kernels of the wide layers at tf32/bf16: cublaslt (products, separate activation "
                 "passes), mma (gmi's tensor-core kernel with the activation fused), wholenet (the whole forward in "
                 "one kernel) or auto (the measured rule of rl/wide_rule.hpp); default auto");
  app.add_option("--net-backward", o.net_backward,
                 "GPU trainer: the wide backward's input-gradient chain at tf32/bf16: cublaslt (a product and a dz "
                 "pass per layer), wholenet (one kernel, dz kept on chip) or auto (cublaslt); default auto");
  app.add_option("--checkpoint", o.checkpoint_path, "save the training state here at the end (and <path>.safetensors)");
  app.add_option("--checkpoint-every", o.checkpoint_every, "also save every N iterations")->check(detail::non_negative_number());
  app.add_option("--resume", o.resume_path, "continue from a checkpoint saved by --checkpoint (over GMIs: its manifest)")
      ->check(CLI::ExistingFile);
  add_choice(app, after, "--gradient-allreduce", o.gradient_allreduce, allreduce_choice_names,
             "synchronous training over GMIs: gradients summed on the device (hierarchical: GMIs of a GPU, then "
             "NCCL), through host shared memory (cpu_staged, the paper's IP baseline), or automatic: both timed "
             "at the start, the faster kept");
  add_choice(app, after, "--synced-update", o.synced_update, update_choice_names,
             "synchronous training over GMIs: replay each GMI's update as a CUDA graph where the gradient sum "
             "allows it, with the group's sum inside each minibatch step's kernel where the GMIs of one GPU "
             "share their rows (fused) or as allreduce calls between kernels (graph), or enqueue it kernel by "
             "kernel (eager)");
  add_choice(app, after, "--minibatch-scope", o.minibatch_scope, scope_choice_names,
             "synchronous training over GMIs: --minibatch is the group's, split over its GMIs (group: an "
             "iteration makes as many steps as one GMI holding every env), or each GMI's (gmi: rl_games' "
             "multi-GPU rule, the paper's; a step averages GMIs x --minibatch samples); split: the trainer's "
             "minibatch is --minibatch (group) or serving GMIs x --minibatch (gmi)");
  add_choice(app, after, "--comm-clock", o.comm_clock, clock_choice_names,
             "synchronous training over GMIs: time each GMI's gradient sums and report the share of the time "
             "spent communicating: on (the step kernels' waits on the group when fused, else two one-thread "
             "stamp kernels around each sum), auto (only where free: fused, cpu_staged), off");
  add_choice(app, after, "--cross-host-sum", o.cross_host_sum, cross_sum_choice_names,
             "across hosts (mpirun/srun): the GPUs' leaders sum each minibatch's gradients with NCCL's allreduce, "
             "with one allgather and a sum of the rows in rank order (half the hops between hosts), or in two "
             "levels (two_level: each host's GPUs, then GPU k of every host; one hop between hosts), or each "
             "leader's row straight to every leader (direct: one group of sends and receives, one hop in all, the "
             "allgather's bits); auto: two_level with several GPUs a host, the allgather with 2 leaders, else the "
             "allreduce");
  add_choice(app, after, "--inbox-memory", o.inbox_memory, comm::inbox_memory_names,
             "synchronous training over the GPUs of one host: where the row exchange's inboxes live (automatic: "
             "peer device memory where every GMI reaches every GPU or, MPS GMIs seeing only their own GPU, where "
             "a probe maps the other GPUs' inboxes through CUDA IPC; else pinned host memory; host: the "
             "relay through host memory)");
  app.add_option("--restart-on-failure", o.restart_on_failure,
                 "synchronous training over GMIs: when a GMI is lost, relaunch the group from the last checkpoint, "
                 "at most N times (needs --checkpoint)")
      ->expected(0, 1)->default_str("3")->check(CLI::Range(1, 1000));
  app.add_flag("--autotune", o.autotune.on, "serving, colocated: find GMIs per GPU and envs per GMI (the paper's Algorithm 1 with "
               "trials of the layout), then serve or train with them");
  app.add_option("--autotune-budget", o.autotune.budget_seconds, "autotune: seconds for all trials")
      ->check(detail::positive_number())->capture_default_str();
  app.add_option("--autotune-max-gmis", o.autotune.max_gmis_per_gpu, "autotune: most GMIs per GPU to try")
      ->check(CLI::Range(1, 48))->capture_default_str();
  app.add_option("--autotune-partitions", o.autotune.partitions, "autotune: backends to search, comma list (default: --partition)");
  app.add_option("--autotune-trial-seconds", o.autotune.trial_seconds, "autotune: measured window of one trial")
      ->check(CLI::Range(0.05, 60.0))->capture_default_str();
  app.add_option("--plan", o.autotune.plan_path, "serving, colocated: use this saved plan (made for this machine and layout)")->check(CLI::ExistingFile);
  app.add_option("--save-plan", o.autotune.save_path, "autotune: save the plan here (JSON)");
  app.add_flag("!--autotune-no-mapping", o.autotune.mapping,
               "autotune, colocated: skip the split-layout trials (the mapping stays colocated, not measured)");
  app.add_option("--autotune-placement-threshold", o.autotune.placement_threshold,
                 "autotune, colocated: plan GPU simulation when its env steps/s >= T x the CPU actors' (else CPU actors)")
      ->check(detail::positive_number())->capture_default_str();
  app.add_option("--autotune-ratio-sweep", o.autotune.ratio_sweep,
                 "autotune, colocated: choose the CPU/GPU ratio from these sweep lines (gmi.bench.actors_ratio)")
      ->check(CLI::ExistingFile);
  app.add_option("--max-policy-lag", o.max_policy_lag, "split: drop rollouts acted with weights more updates old")
      ->check(CLI::Range(0, 1 << 20))->capture_default_str();
  app.add_option("--channel-slots", o.channel_slots,
                 "split: rollouts each serving GMI may have queued for the trainer, the back-pressure bound (a power "
                 "of two in 1..64)")
      ->capture_default_str();
  std::string learner_graph = o.learner_graph ? "on" : "off";
  app.add_option("--learner-graph", learner_graph,
                 "split: the trainer replays its update (epochs x minibatches of kernels) as one CUDA graph from the "
                 "second update on (on), or enqueues it kernel by kernel (off)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  add_choice(app, after, "--clip-against", o.clip_against, clip_choice_names,
             "split: PPO's ratio is pi over the serving GMI's policy that acted (behaviour: Sample Factory's "
             "APPO) or over the learner's policy at the start of the update (learner: decoupled PPO)");
  add_choice(app, after, "--normalize-advantages", o.normalize_advantages, advantages_choice_names,
             "split: normalize V-trace's advantages before its rho weights them (before_rho), or the weighted ones "
             "(after_rho, Sample Factory's way)");
  app.add_option("--rho-bar", o.rho_bar, "split: V-trace truncation of the TD-error weights")->capture_default_str();
  app.add_option("--c-bar", o.c_bar, "split: V-trace truncation of the traces (<= --rho-bar)")->capture_default_str();
  app.add_flag("--population", o.population, "independent trainings, one per GMI (seeds --seed, --seed + 1, ...)");
  bool split_roles_flag = false;
  app.add_flag("--split-roles", split_roles_flag,
               "colocated training: run the split layout instead (slice 0 trains, slices 1.. serve: asynchronous PPO "
               "with V-trace), for side-by-side runs of the same task");
  app.add_option("--sweep", o.sweep_path, "population settings: a JSON array, one object per GMI (implies --population)");
  if (const auto code = runtime::parse_flags(app, argc, argv)) return *code;
  o.ppo.schedule = *rl::parse_lr_schedule(schedule);
  o.ppo.entropy_decay = *rl::parse_entropy_schedule(entropy_schedule);
  for (const auto& fill : after) fill();
  // The linear schedule spans the run's step limit unless told otherwise (a sweep's members may ask for it too).
  if (lr_decay_flag->count() == 0) o.ppo.lr_decay_env_steps = std::isfinite(o.max_env_steps) ? o.max_env_steps : 0;
  if (entropy_decay_flag->count() == 0)
    o.ppo.entropy_decay_env_steps = std::isfinite(o.max_env_steps) ? o.max_env_steps : 0;
  for (const auto& [flag, text] : normalize) *flag = text == "true";
  o.learner_graph = learner_graph == "on";
  if (!o.sweep_path.empty()) o.population = true;
  o.split_roles = o.split_roles || split_roles_flag;
  return detail::check_target_flags(app, target_return_flag, o);
}

}  // namespace gmi

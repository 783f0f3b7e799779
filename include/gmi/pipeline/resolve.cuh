#pragma once
// From a config to where the run goes: validate() checks the options against each other and the pipeline type
// (config_error, one line each), whoever filled them in; place() settles a plan (--autotune searches one, --plan
// loads one) and picks host threads, one GPU, or GMIs over GPUs (runtime::gmis_config) for the run.

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/cuda/device.hpp>
#include <gmi/layout/layouts.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/pipeline/autotune.cuh>
#include <gmi/pipeline/cpu_actors.hpp>
#include <gmi/pipeline/chosen_env.hpp>
#include <gmi/pipeline/report.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/plan/plan.hpp>
#include <gmi/rl/ppo.cuh>
#include <gmi/runtime/gmis.hpp>
#include <gmi/runtime/hosts.hpp>

namespace gmi::detail {

// A run over several hosts is synchronous PPO (layout colocated) with every host's GMIs as threads on its GPUs;
// anything else is one line naming the first option that is not.
template <class Pipeline>
void check_across_hosts(const train_config<Pipeline>& o, const runtime::host_info& job, bool gpu) {
  const std::string across = " across " + std::to_string(job.hosts) + " hosts (" + job.source + ")";
  const auto refuse = [&](const std::string& what, const std::string& got, const std::string& need) {
    throw gmi::config_error(gmi::got_need(what + across, got, need));
  };
  if (!gpu) {
    refuse("--device", "host threads", "gpu (each host's launcher trains on its GPUs; host GMIs across hosts: "
           "runtime::run_on_hosts, docs/multihost.md)");
  }
  if (std::string_view(Pipeline::layout_type::name) != "colocated") {
    refuse("layout", Pipeline::layout_type::name, "colocated (synchronous PPO)");
  }
  if (o.population) refuse("--population", "on", "one synchronous training");
  if (o.split_roles) refuse("--split-roles", "on", "one synchronous training (colocated roles)");
  if (o.autotune.on || !o.autotune.plan_path.empty()) {
    refuse(o.autotune.on ? "--autotune" : "--plan", "on", "--partition and --gmis-per-gpu given (search a plan on one host)");
  }
  if (o.restart_on_failure > 63) {
    refuse("--restart-on-failure", std::to_string(o.restart_on_failure), "at most 63 (the link between the hosts "
           "holds a communicator for each attempt)");
  }
  if (o.partition == "mps" || o.partition == "mig" || o.launch == runtime::launch_mode::processes) {
    refuse("--partition/--launch", o.partition + "/" + choice_name(o.launch, runtime::launch_mode_names),
           "GMIs as threads (partition none or green_context): only the launcher is joined to the other hosts");
  }
  if (o.gradient_allreduce == allreduce_choice::cpu_staged) {
    refuse("--gradient-allreduce", "cpu_staged", "hierarchical (host shared memory does not reach the other hosts)");
  }
}

// The GPUs a run uses: --gpus N from --gpu on, or every visible one.
inline std::vector<int> chosen_gpus(const run_options& o, int visible) {
  int count = 0;
  if (o.gpus == "all") {
    count = visible - o.gpu;
  } else {
    try {
      std::size_t used = 0;
      count = std::stoi(o.gpus, &used);
      if (used != o.gpus.size()) count = 0;
    } catch (const std::exception&) {
      count = 0;
    }
    gmi::require(count >= 1, "--gpus", o.gpus, "a positive count or \"all\"");
  }
  gmi::require(o.gpu + count <= visible, "--gpu + --gpus", std::to_string(o.gpu) + " + " + std::to_string(count),
               "<= " + std::to_string(visible) + " (visible CUDA devices)");
  std::vector<int> out;
  for (int g = 0; g < count; ++g) out.push_back(o.gpu + g);
  return out;
}

// Throws config_error naming the first option that can not work with the others or with the pipeline type; sets
// what follows from them (the task's optimum, and a target from --target-optimum-gap).
template <class Pipeline>
void validate(train_config<Pipeline>& o) {
  using Env = typename Pipeline::env;
  if constexpr (!Pipeline::layout_type::trains) {
    gmi::require(!o.population, "--population with layout", std::string(Pipeline::layout_type::name),
                 "a training layout (gmi::layout::colocated): the serving layout trains nothing");
  }
  if (o.ppo.schedule == rl::lr_schedule::linear) {
    gmi::require(std::isfinite(o.ppo.lr_decay_env_steps) && o.ppo.lr_decay_env_steps >= 1,
                 "--lr-decay-env-steps with --lr-schedule linear", o.ppo.lr_decay_env_steps,
                 ">= 1 and finite (default: --max-env-steps)");
  }
  if (o.ppo.entropy_decay == rl::entropy_schedule::linear) {
    gmi::require(std::isfinite(o.ppo.entropy_decay_env_steps) && o.ppo.entropy_decay_env_steps >= 1,
                 "--entropy-decay-env-steps with --entropy-schedule linear", o.ppo.entropy_decay_env_steps,
                 ">= 1 and finite (default: --max-env-steps)");
  }
  if (!o.net_precision.empty()) o.ppo.network.precision = nn::parse_precision(o.net_precision, "--net-precision");
  if (!o.net_kernels.empty()) o.ppo.network.kernels = nn::parse_layer_kernels(o.net_kernels, "--net-kernels");
  if (!o.net_backward.empty()) o.ppo.network.backward = nn::parse_backward_kernels(o.net_backward, "--net-backward");
  o.ppo.validate();
  rl::request_collection_path(o.collection);
  if constexpr (Pipeline::layout_type::trains) (void)rl::collection_path_name<typename Pipeline::network>(o.ppo.network);
  // --ppo-gradient (a comparison knob of the GPU trainer) holds for every trainer this process builds, and is
  // checked on every machine, so a typo is one line
  rl::request_gradient_path(o.ppo_gradient);
  if constexpr (Pipeline::layout_type::trains) (void)rl::minibatch_gradient_name<typename Pipeline::network>(o.ppo.network);
  if (const auto best = optimal_mean_return<Env>(o.env)) o.optimal_mean_return = *best;
  gmi::require(std::isnan(o.target_optimum_gap) || (std::isfinite(o.target_optimum_gap) && o.target_optimum_gap > 0),
               "--target-optimum-gap", o.target_optimum_gap, "> 0 (a fraction of |optimum|, e.g. 0.1)");
  if (std::isfinite(o.target_optimum_gap)) {
    gmi::require(std::isfinite(o.optimal_mean_return), "--target-optimum-gap for task", task_name<Env>(),
                 "a task with a known optimal mean return (the *_proxy tasks)");
    o.target_return = o.optimal_mean_return - o.target_optimum_gap * std::fabs(o.optimal_mean_return);
  }
  if (o.restart_on_failure > 0) {
    gmi::require(!o.checkpoint_path.empty(), "--restart-on-failure without --checkpoint", o.restart_on_failure,
                 "--checkpoint PATH as well (a restart resumes from the last checkpoint)");
    gmi::require(std::string_view(Pipeline::layout_type::name) == "colocated" && !o.population, "--restart-on-failure with",
                 o.population ? std::string("--population") : std::string("layout ") + Pipeline::layout_type::name,
                 "synchronous training (layout colocated, no --population)");
  }
  // Only synchronous training (one GMI or a group) saves and resumes: population members and the split layout would
  // ignore the checkpoint and start from scratch, counting env steps from 0.
  if (!o.checkpoint_path.empty() || !o.resume_path.empty()) {
    const bool split = o.split_roles || std::string_view(Pipeline::layout_type::name) == "split";
    gmi::require(!o.population && !split, "--checkpoint/--resume with",
                 o.population ? std::string("--population") : std::string("the split layout"),
                 "synchronous training (layout colocated without --population or --split-roles): population members and "
                 "the split layout save and resume nothing");
  }
  if constexpr (actors::is_on_cpu<Env>) {
    // CPU actors (actors::on_cpu): one GMI, a synchronous group of GMIs or a population, each GMI with its own
    // actor cores; their checkpoints hold the actors' environments, so --resume and --restart-on-failure work. What
    // can not: split roles (the serving GMIs step environments on the GPU, and there would be no actors to feed).
    static_assert(!std::is_same_v<typename Pipeline::layout_type, layout::split>,
                  "gmi: actors::on_cpu<Env> trains colocated; the split layout needs serving GMIs on the GPU");
    const auto refuse = [](const char* flag, const auto& value, const char* need) {
      throw gmi::config_error(gmi::got_need(std::string(flag) + " with CPU actors (actors::on_cpu)", value, need));
    };
    if (o.split_roles) {
      refuse("--split-roles", o.split_roles, "colocated roles (serving GMIs step environments on the GPU; the actors "
                                             "step them on host cores)");
    }
  } else {
    gmi::require(o.actor_cores_per_gmi == 0, "--actor-cores-per-gmi with env " + std::string(task_name<Env>()),
                 o.actor_cores_per_gmi, "0 (it sets CPU actors: actors::on_cpu<Env> in the env slot)");
  }
  gmi::require(o.actor_cores_per_gmi >= 0, "--actor-cores-per-gmi", o.actor_cores_per_gmi, ">= 0");
  if (o.partition == "cpu_cores") {
    gmi::require(actors::is_on_cpu<Env> && o.device == device_choice::host, "--partition", o.partition,
                 "none, mps, green_context or mig (cpu_cores: CPU actors, actors::on_cpu in the env slot, with --device host)");
  }
  gmi::require(std::isfinite(o.autotune.placement_threshold) && o.autotune.placement_threshold > 0,
               "--autotune-placement-threshold", o.autotune.placement_threshold,
               "a finite value > 0 (GPU simulation when its env steps/s >= T x the CPU actors')");
  if (!o.autotune.save_path.empty()) {  // before a search of minutes, not after it
    gmi::require(o.autotune.on, "--save-plan without --autotune", o.autotune.save_path,
                 "--autotune as well (--save-plan saves the plan the search chose)");
    plan::check_writable(o.autotune.save_path, "--save-plan");
  }
  if (o.autotune.on || !o.autotune.plan_path.empty()) check_plan_flags<Pipeline>(o);
  if (o.split_roles) {
    gmi::require(std::string_view(Pipeline::layout_type::name) == "colocated", "--split-roles with layout",
                 std::string(Pipeline::layout_type::name), "colocated (whose roles it splits)");
    gmi::require(!o.population && !o.autotune.on && o.autotune.plan_path.empty() && o.restart_on_failure == 0,
                 "--split-roles with",
                 o.population ? "--population" : o.autotune.on ? "--autotune" : o.restart_on_failure ? "--restart-on-failure" : "--plan",
                 "none of --population, --autotune, --plan, --restart-on-failure");
    gmi::require(o.gmis_per_gpu >= 2, "--gmis-per-gpu with --split-roles", o.gmis_per_gpu,
                 ">= 2 (slice 0 trains, slices 1.. serve)");
  }
  if constexpr (std::is_same_v<typename Pipeline::layout_type, layout::split>) {
    gmi::require(o.gmis_per_gpu >= 2, "--gmis-per-gpu for layout split", o.gmis_per_gpu,
                 ">= 2 (slice 0 trains, slices 1.. serve)");
    gmi::require(std::isfinite(o.rho_bar) && o.rho_bar > 0, "--rho-bar", o.rho_bar, "> 0");
    gmi::require(std::isfinite(o.c_bar) && o.c_bar > 0 && o.c_bar <= o.rho_bar, "--c-bar", o.c_bar,
                 "<= --rho-bar (" + metrics::si(o.rho_bar) + ") and > 0");
  }
  gmi::require(o.channel_slots >= 1 && o.channel_slots <= 64 && (o.channel_slots & (o.channel_slots - 1)) == 0,
               "--channel-slots", o.channel_slots, "a power of two in 1..64");
}

// The GPUs a run over GMIs uses; in a GMI process only their number matters (NCCL among the GPUs' leaders): its
// identity's. Across hosts, --gpu and --gpus count within this host's share of the visible GPUs
// (runtime::host_gpus: all of them with one launcher a machine).
inline std::vector<int> gpus_of_run(const run_options& o, int visible, const runtime::host_info& job = {}) {
  if (const auto id = runtime::this_gmi()) return std::vector<int>(static_cast<std::size_t>(id->gpus), 0);
  if (job.hosts <= 1) return chosen_gpus(o, visible);
  const std::vector<int> share = runtime::host_gpus(visible, job);
  std::vector<int> chosen;
  for (const int k : chosen_gpus(o, static_cast<int>(share.size()))) chosen.push_back(share[static_cast<std::size_t>(k)]);
  return chosen;
}

// The GMIs of a run on `gpus` as the options ask for them (partition, GMIs per GPU, launch, slice sizes).
inline runtime::gmis_config gmis_config_of(const run_options& o, std::vector<int> gpus) {
  runtime::gmis_config cfg;
  cfg.partition = o.partition;
  cfg.gpus = std::move(gpus);
  cfg.gmis_per_gpu = o.gmis_per_gpu;
  cfg.launch = o.launch;
  cfg.mps_percentage = o.mps_percentage;
  cfg.sms_per_gmi = o.sms_per_gmi;
  return cfg;
}

// Where a validated config runs.
struct placement {
  enum class where { host, host_gmis, one_gpu, gmis } at = where::host;  // host_gmis: CPU actors' GMIs
  runtime::gmis_config cfg;  // where::gmis
  int gpu = -1;              // where::one_gpu
  std::string device_text;   // where::host and where::one_gpu: "NVIDIA H200 (132 SMs)", "host threads (...)"

  static placement on_host(std::string why) {
    placement p;
    p.device_text = std::move(why);
    return p;
  }
  static placement on_gpu(int gpu, std::string text) {
    placement p;
    p.at = where::one_gpu;
    p.gpu = gpu;
    p.device_text = std::move(text);
    return p;
  }
  static placement on_gmis(runtime::gmis_config cfg) {
    placement p;
    p.at = where::gmis;
    p.cfg = std::move(cfg);
    return p;
  }
};

// --plan PATH for CPU actors on host threads: the plan's CPU/GPU ratio (cpu_actor_ratio) sets actor cores per GMI,
// host GMIs (its GMIs per GPU) and environments per GMI; a plan without one is refused in one line.
template <class Pipeline>
void apply_host_plan(train_config<Pipeline>& o) {
  const plan::plan p = plan::load(o.autotune.plan_path);
  if (p.trials_of != trials_of<Pipeline>()) {
    throw gmi::config_error("plan " + o.autotune.plan_path + ": " +
                            gmi::got_need("trials of", p.trials_of, std::string(trials_of<Pipeline>()) + " (this run's layout)"));
  }
  if (!p.cpu_actor_ratio) {
    throw gmi::config_error(gmi::got_need("--plan " + o.autotune.plan_path + " on host threads: cpu_actor_ratio", "none",
                                          "a plan with the CPU/GPU ratio (--autotune --autotune-ratio-sweep FILE "
                                          "--save-plan PATH)"));
  }
  apply_actor_ratio(o, p.cpu_actor_ratio->chosen);
  std::printf("gmi: CPU actors from the plan's CPU/GPU ratio (%s): %d actor cores per GMI, %d envs per GMI, %d host "
              "GMIs\n", plan::ratio_goal_name(p.cpu_actor_ratio->goal), o.actor_cores_per_gmi, o.num_envs, o.gmis_per_gpu);
  std::fflush(stdout);
}

// Settles the plan (may run --autotune's trials) and the placement; o's partition, GMIs per GPU and envs per GMI
// become the plan's.
template <class Pipeline>
placement place(train_config<Pipeline>& o) {
  const auto gpus = cuda::device_count();
  const bool use_gpu = o.device == device_choice::gpu || (o.device == device_choice::automatic && gpus.has_value());
  const runtime::host_info job = runtime::job_host(o.host_id);
  if (job.hosts > 1) check_across_hosts(o, job, use_gpu);
  if (use_gpu) {
    if (!gpus) throw gmi::config_error(gmi::got_need("--device", "gpu", "a CUDA device (" + gpus.error().message() + ")"));
    // A GMI process takes its placement from its identity (under MPS and MIG it sees one device): the launcher
    // has checked --gpu and --gpus against every GPU already.
    const bool gmi_process = runtime::this_gmi().has_value();
    if (!gmi_process) gmi::require(o.gpu < *gpus, "--gpu", o.gpu, "< " + std::to_string(*gpus) + " (visible CUDA devices)");
    // A plan (searched now or saved before) sets partition, GMIs per GPU and envs per GMI; GMI processes get
    // their launcher's choice through the environment.
    bool planned = gmi_process && apply_chosen_from_env(o);
    runtime::env_list chosen_vars;
    if (!gmi_process && (o.autotune.on || !o.autotune.plan_path.empty())) {
      if constexpr (!std::is_same_v<typename Pipeline::layout_type, layout::split>) {  // refused above
        plan::plan p;
        if (o.autotune.on) {
          p = autotune<Pipeline>(o);
        } else {
          p = plan::load(o.autotune.plan_path);
          if (p.trials_of != trials_of<Pipeline>()) {
            throw gmi::config_error("plan " + o.autotune.plan_path + ": " +
                                    gmi::got_need("trials of", p.trials_of,
                                                  std::string(trials_of<Pipeline>()) + " (this run's layout; search "
                                                  "again with --autotune on it)"));
          }
          std::printf("gmi: plan %s: %s (%s %s per GPU when it was made)\n", o.autotune.plan_path.c_str(),
                      plan::describe(p.chosen).c_str(), metrics::si(p.gpu_throughput).c_str(),
                      Pipeline::layout_type::trains ? "training samples/s" : "steps/s");
        }
        const bool split = p.mapping && p.mapping->choice == plan::mapping_kind::split;
        const plan::candidate& use = split ? *p.split_chosen : p.chosen;
        if (split) {
          // The split layout saves no checkpoints and does not restart in this version.
          gmi::require(o.checkpoint_path.empty() && o.restart_on_failure == 0 && o.resume_path.empty(),
                       "--checkpoint/--resume/--restart-on-failure with a plan that maps the roles", "split",
                       "a colocated plan (the split layout saves no checkpoints; --autotune-no-mapping keeps "
                       "colocated)");
          std::printf("gmi: the plan maps the roles split (%s): %s\n", p.mapping->reason.c_str(),
                      plan::describe(use).c_str());
        }
        o.partition = use.partition;
        o.gmis_per_gpu = use.gmis_per_gpu;
        o.num_envs = use.envs_per_gmi;
        o.split_roles = split;
        chosen_vars = chosen_env(use, o.serve_seconds, false, false, split);
        if constexpr (actors::is_on_cpu<typename Pipeline::env>) {
          if (p.cpu_actor_ratio && !split) {  // the ratio sets the GMIs' shape; their processes get it too
            apply_actor_ratio(o, p.cpu_actor_ratio->chosen);
            plan::candidate shaped = use;
            shaped.gmis_per_gpu = o.gmis_per_gpu;
            shaped.envs_per_gmi = o.num_envs;
            chosen_vars = chosen_env(shaped, o.serve_seconds, false, false, split);
            add_to_chosen(chosen_vars, "actor_cores_per_gmi", o.actor_cores_per_gmi);
            std::printf("gmi: CPU actors from the plan's CPU/GPU ratio: %d actor cores per GMI, %d envs per GMI, %d GMIs "
                        "per GPU\n", o.actor_cores_per_gmi, o.num_envs, o.gmis_per_gpu);
          }
        }
        planned = true;
      }
    }
    const std::vector<int> chosen = gpus_of_run(o, *gpus, job);
    const bool several = chosen.size() > 1 || o.gmis_per_gpu > 1 || o.partition != "none" || o.launch == runtime::launch_mode::processes ||
                         gmi_process || o.population || planned || o.restart_on_failure > 0 || job.hosts > 1;
    if (several) {
      runtime::gmis_config cfg = gmis_config_of(o, chosen);
      cfg.env = chosen_vars;
      return placement::on_gmis(std::move(cfg));
    }
    const auto info = cuda::describe_device(o.gpu);
    return placement::on_gpu(o.gpu, info.name + " (" + std::to_string(info.sm_count) + " SMs)");
  }
  if constexpr (actors::is_on_cpu<typename Pipeline::env>) {
    // CPU actors on host threads: --gmis-per-gpu K host GMIs, each on its own cores (the cpu_cores backend); a
    // plan's CPU/GPU ratio sets K, the cores and the environments (its partition and trials are the GPU's).
    const bool planned = !o.autotune.plan_path.empty() && !o.autotune.on;
    if (planned) apply_host_plan<Pipeline>(o);
    if ((o.partition == "none" || o.partition == "cpu_cores") &&
        (o.gmis_per_gpu > 1 || o.restart_on_failure > 0 || planned || o.population)) {
      // What host GMIs do not do: the first such option, named with its value, in one line.
      const std::pair<const char*, std::string> unsupported[] = {{"--gpus", o.gpus != "1" ? o.gpus : ""},
                                                                 {"--autotune", o.autotune.on ? "true" : ""}};
      for (const auto& [flag, value] : unsupported) {
        if (value.empty()) continue;
        throw gmi::config_error(gmi::got_need(std::string(flag) + " with " + std::to_string(o.gmis_per_gpu) +
                                                  " host GMIs of CPU actors", value,
                                              "none (host GMIs run on this host's cores; --autotune measures GPU "
                                              "trials: search on a GPU, then --plan PATH here)"));
      }
      o.partition = "cpu_cores";
      placement p = placement::on_host("host GMIs of CPU actors (cpu_cores)");
      p.at = placement::where::host_gmis;
      return p;
    }
    if (o.partition == "cpu_cores") o.partition = "none";  // one host GMI
  }
  if (o.gmis_per_gpu > 1 || o.partition != "none" || o.gpus != "1" || o.population || o.autotune.on ||
      !o.autotune.plan_path.empty() || o.restart_on_failure > 0) {
    throw gmi::config_error(gmi::got_need("--gmis-per-gpu/--partition/--gpus/--population/--autotune/--plan/--restart-on-failure on", "host threads",
                                          "a GPU (several GMIs run on GPUs; the host runs one)"));
  }
  const std::string why = gpus ? std::string("host threads (asked for)") : "host threads (" + gpus.error().message() + ")";
  return placement::on_host(why);
}

}  // namespace gmi::detail

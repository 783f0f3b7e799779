#pragma once
// --autotune and --plan for the serving and the colocated layouts. The paper's Algorithm 1 (plan/explorer.hpp)
// runs real trials: each candidate (partition, GMIs per GPU, environments per GMI) runs the layout itself on one
// GPU for a short window through runtime::run_gmis and reports the GPU's total throughput (serving: environment
// steps/s; colocated: synchronous PPO's training samples/s, from the first group step on) and the largest GMI's
// device memory (what it allocated through cuda::device_buffer: CUDA contexts and library workspaces are not
// counted). The explorer's plan is printed, optionally saved (--save-plan) and then run on every GPU of the run;
// --plan runs a saved plan after checking it was made for this machine and with trials of this layout. The trials
// run the layouts' own runs (run_serving.cuh, run_colocated.cuh, run_split.cuh) quietly.
//
// GMI processes (MPS, MIG) re-run the binary with the launcher's flags; the candidate they belong to travels in
// their environment (pipeline/chosen_env.hpp).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/layout/layouts.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/pipeline/actor_placement.cuh>
#include <gmi/pipeline/chosen_env.hpp>
#include <gmi/pipeline/run_colocated.cuh>
#include <gmi/pipeline/run_serving.cuh>
#include <gmi/pipeline/run_split.cuh>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/pipeline/run_options.hpp>
#include <gmi/plan/explorer.hpp>
#include <gmi/plan/plan.hpp>
#include <gmi/plan/topology.hpp>
#include <gmi/runtime/gmis.hpp>
#include <gmi/runtime/trace.hpp>

namespace gmi {

// A pipeline's roles in the split layout (the mapping's other side), and its config for them.
template <class Pipeline>
using split_of = typename Pipeline::template with_layout<layout::split>;
template <class Pipeline>
train_config<split_of<Pipeline>> as_split(const train_config<Pipeline>& o) {
  train_config<split_of<Pipeline>> s;
  static_cast<run_options&>(s) = o;
  s.env = o.env;
  return s;
}

// Runs one trial: the GMIs of candidate `c` on GPU o.gpu (their processes get the candidate through `env`), and
// `measure(cfg)`, which runs the layout and returns {throughput, peak bytes of one GMI}. Never throws: a refused
// candidate, an exception or a GMI process that ran the launcher's part is a failed trial.
template <class Measure>
plan::trial_result run_trial(const run_options& o, const plan::candidate& c, runtime::env_list env, Measure&& measure) {
  runtime::gmis_config cfg;
  cfg.partition = c.partition;
  cfg.gpus = {o.gpu};
  cfg.gmis_per_gpu = c.gmis_per_gpu;
  cfg.launch = o.launch;
  cfg.env = std::move(env);
  if (const gmi::status st = runtime::can_implement(cfg); !st) return plan::trial_result::failed(st.message());
  try {
    const std::optional<std::pair<double, std::uint64_t>> m = measure(cfg);
    if (!m) return plan::trial_result::failed("a GMI process ran the launcher's trial");
    return plan::trial_result::measured(m->first, m->second);
  } catch (const std::exception& e) {
    return plan::trial_result::failed(e.what());
  }
}

// The run's options for a training trial of candidate c (the launcher's side of make_training_trial).
template <class Pipeline>
train_config<Pipeline> training_trial_options(const train_config<Pipeline>& o, const plan::candidate& c, double seconds,
                                              bool split) {
  train_config<Pipeline> t = o;
  t.partition = c.partition;
  t.gmis_per_gpu = c.gmis_per_gpu;
  t.num_envs = c.envs_per_gmi;
  t.split_roles = split;
  make_training_trial(t, seconds);
  return t;
}

// One trial of Algorithm 1: `c` serving on GPU o.gpu for `seconds`: the GPU's total steps/s.
template <class Pipeline>
plan::trial_result serving_trial(const train_config<Pipeline>& o, const plan::candidate& c, double seconds) {
  train_config<Pipeline> t = o;
  t.num_envs = c.envs_per_gmi;
  t.serve_seconds = seconds;
  t.quiet = true;
  return run_trial(o, c, chosen_env(c, seconds, true),
                   [&](const runtime::gmis_config& cfg) -> std::optional<std::pair<double, std::uint64_t>> {
                     const auto outcome = runtime::run_gmis(cfg, detail::serving_gmi_work<Pipeline>(t));
                     if (!outcome.report) return std::nullopt;
                     const gmi_serving_total total = collect_serving(*outcome.report);
                     return std::pair{total.steps_per_s, total.max_device_bytes};
                   });
}

// One training trial: `c` trains (the colocated layout, synchronous PPO) on GPU o.gpu for about `seconds` after
// its first group step: the GPU's training samples/s over that window.
template <class Pipeline>
plan::trial_result training_trial(const train_config<Pipeline>& o, const plan::candidate& c, double seconds) {
  const train_config<Pipeline> t = training_trial_options(o, c, seconds, false);
  return run_trial(o, c, chosen_env(c, seconds, true, true),
                   [&](const runtime::gmis_config& cfg) -> std::optional<std::pair<double, std::uint64_t>> {
                     gmi_training_total total;
                     detail::train_on_gmis<Pipeline>(t, cfg, &total);
                     if (total.per_gmi.empty()) return std::nullopt;
                     return std::pair{total.warm_samples_per_s, total.max_device_bytes};
                   });
}

// One trial of the mapping: the pipeline's roles split on GPU o.gpu (a trainer GMI and c.gmis_per_gpu - 1 serving
// GMIs of c.envs_per_gmi environments, asynchronous PPO with V-trace) for about `seconds` after the trainer's first
// update: the trainer's samples/s over that window (samples trained, not served).
template <class Pipeline>
plan::trial_result split_trial(const train_config<Pipeline>& o, const plan::candidate& c, double seconds) {
  const train_config<split_of<Pipeline>> t = as_split(training_trial_options(o, c, seconds, true));
  return run_trial(o, c, chosen_env(c, seconds, true, true, true),
                   [&](const runtime::gmis_config& cfg) -> std::optional<std::pair<double, std::uint64_t>> {
                     split_total total;
                     detail::split_on_gmis<split_of<Pipeline>>(t, cfg, &total);
                     if (total.per_gmi.empty()) return std::nullopt;
                     return std::pair{total.warm_train_samples_per_s, std::uint64_t{0}};
                   });
}

// The mapping (colocated or split) of a colocated plan, measured: split trials with the chosen partition and
// environments per GMI for 2, 4, 8, ... GMIs per GPU up to --autotune-max-gmis, the fastest against the plan's
// colocated throughput (plan::decide_mapping). Like the colocated trials, a split trial runs on one GPU and its
// rate is per GPU (with several GPUs the trainers then sum their gradients, as the colocated GMIs do). Prints a
// line per trial and the decision; leaves the mapping "not measured" (and says why) when no split trial ran or
// the budget is spent.
template <class Pipeline>
void measure_mapping(const train_config<Pipeline>& o, plan::plan& p, double seconds, double estimated_trial_seconds) {
  std::optional<plan::candidate> best;
  double best_rate = 0;
  std::string why_none = "no split trial: --autotune-max-gmis " + std::to_string(o.autotune.max_gmis_per_gpu) + " < 2";
  double spent = p.explore_seconds;
  for (int k = 2; k <= o.autotune.max_gmis_per_gpu; k *= 2) {
    if (spent + estimated_trial_seconds > o.autotune.budget_seconds) {
      why_none = best ? why_none : "the budget was spent before a split trial";
      std::printf("plan: mapping trials stop: %.1f s spent of the %.0f s budget\n", spent, o.autotune.budget_seconds);
      break;
    }
    const plan::candidate c{p.chosen.partition, k, p.chosen.envs_per_gmi};
    const auto start = std::chrono::steady_clock::now();
    const plan::trial_result r = split_trial<Pipeline>(o, c, seconds);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    spent += took;
    if (!r.ok) {
      std::printf("plan: split %s: failed: %s [%.1f s]\n", plan::describe(c).c_str(), r.failure.c_str(), took);
      if (!best) why_none = "every split trial failed";
    } else {
      std::printf("plan: split %s: %s training samples/s/GPU (1 trainer + %d serving GMIs) [%.1f s]\n",
                  plan::describe(c).c_str(), metrics::si(r.throughput).c_str(), k - 1, took);
      if (r.throughput > best_rate) {
        best = c;
        best_rate = r.throughput;
      }
    }
    std::fflush(stdout);
  }
  p.explore_seconds = spent;
  if (!best || best_rate <= 0) {
    std::printf("gmi: autotune mapping not measured (%s): colocated\n", why_none.c_str());
    return;
  }
  p.mapping = plan::decide_mapping(p.gpu_throughput, best_rate);
  p.split_chosen = *best;
  std::printf("gmi: autotune mapping %s (split at its best: %s)\n", p.mapping->reason.c_str(),
              plan::describe(*best).c_str());
}

// The comma list of --autotune-partitions, or the run's partition.
inline std::vector<std::string> autotune_partitions(const run_options& o) {
  std::vector<std::string> out;
  std::stringstream in(o.autotune.partitions.empty() ? o.partition : o.autotune.partitions);
  for (std::string p; std::getline(in, p, ',');) {
    if (!p.empty()) out.push_back(p);
  }
  return out;
}

// What the trials of a layout run: "serving" (serving_trial) or "colocated" (training_trial); a plan records it.
template <class Pipeline>
constexpr const char* trials_of() {
  return Pipeline::layout_type::trains ? "colocated" : "serving";
}

// --autotune / --plan against the rest of the flags and the pipeline type, before any device work: config_error
// with one line for a combination that can not work.
template <class Pipeline>
void check_plan_flags(const run_options& o) {
  const std::string flag = o.autotune.on ? "--autotune" : "--plan";
  if constexpr (std::is_same_v<typename Pipeline::layout_type, layout::split>) {
    throw gmi::config_error(gmi::got_need(flag + " with layout", Pipeline::layout_type::name,
                                          "gmi::layout::serving or gmi::layout::colocated (trials measure serving or "
                                          "synchronous training)"));
  } else {
    if (o.autotune.on && !o.autotune.plan_path.empty()) {
      throw gmi::config_error(gmi::got_need("--autotune with --plan", o.autotune.plan_path, "one of the two"));
    }
    gmi::require(!o.population, flag + " with", "--population",
                 "one training over the GMIs (population members train alone, one per GMI)");
    // A restart attempt and a resumed run train the configuration they saved; a search would choose again.
    gmi::require(!o.autotune.on || (o.restart_on_failure == 0 && o.resume_path.empty()), "--autotune with",
                 o.restart_on_failure > 0 ? "--restart-on-failure" : "--resume",
                 "--plan PATH (search once with --autotune --save-plan PATH, then train with --plan PATH)");
    if constexpr (Pipeline::layout_type::trains && !Pipeline::comm_type::reduces) {  // every trial would fail on this
      throw gmi::config_error(gmi::got_need(flag + " for layout colocated: communicator", Pipeline::comm_type::name,
                                            "one that reduces gradients: gmi::comm::hierarchical<gmi::comm::nccl> in "
                                            "the pipeline type"));
    }
  }
}

// --autotune: Algorithm 1 on this machine with trials of the pipeline's layout (serving, or colocated training);
// prints a line per trial and the choice, saves the plan when asked. Throws config_error for bad options or a
// budget too small for one trial.
template <class Pipeline>
plan::plan autotune(const train_config<Pipeline>& o) {
  constexpr bool trains = Pipeline::layout_type::trains;
  static_assert(!std::is_same_v<typename Pipeline::layout_type, layout::split>,
                "autotune: trials measure the serving or the colocated layout");
  const plan::topology t = plan::discover();
  plan::explore_options e;
  e.partitions = autotune_partitions(o);
  e.max_gmis_per_gpu = o.autotune.max_gmis_per_gpu;
  e.budget_seconds = o.autotune.budget_seconds;
  // the window plus start-up and warm-up
  e.estimated_trial_seconds = o.autotune.trial_seconds + (trains ? 0.5 + training_trial_warmup_seconds : 0.5);
  e.progress = plan::print_progress(stdout);
  const char* unit = trains ? "training samples/s" : "steps/s";
  std::printf("gmi: autotune (%s trials) | partitions %s | up to %d GMIs per GPU | %d..%d envs per GMI | budget %.0f s | "
              "trials of %.2f s on GPU %d\n",
              trials_of<Pipeline>(), o.autotune.partitions.empty() ? o.partition.c_str() : o.autotune.partitions.c_str(),
              e.max_gmis_per_gpu, e.min_envs, e.max_envs, e.budget_seconds, o.autotune.trial_seconds, o.gpu);
  std::fflush(stdout);
  const double seconds = o.autotune.trial_seconds;
  plan::plan p = plan::explore(
      t,
      [&](const plan::candidate& c) {
        if constexpr (trains) {
          return training_trial<Pipeline>(o, c, seconds);
        } else {
          return serving_trial<Pipeline>(o, c, seconds);
        }
      },
      e);
  p.trials_of = trials_of<Pipeline>();
  std::printf("gmi: autotune chose %s: %s %s on one GPU, %s projected over %zu GPU(s) (%s; %zu trials in %.1f s, %s)\n",
              plan::describe(p.chosen).c_str(), metrics::si(p.gpu_throughput).c_str(), unit,
              metrics::si(p.projected_throughput).c_str(), t.gpus.size(), p.selection.c_str(), p.trials.size(),
              p.explore_seconds, p.stopped_by.c_str());
  if constexpr (trains) {
    if (o.autotune.mapping) measure_mapping<Pipeline>(o, p, seconds, e.estimated_trial_seconds);
    choose_actor_settings<Pipeline>(o, p);  // CPU actors or GPU simulation, and the CPU/GPU ratio, in the plan
  }
  if (!o.autotune.save_path.empty()) {
    plan::save(p, o.autotune.save_path);
    std::printf("gmi: plan saved to %s (run with it: --plan %s)\n", o.autotune.save_path.c_str(),
                o.autotune.save_path.c_str());
  }
  std::fflush(stdout);
  return p;
}

}  // namespace gmi

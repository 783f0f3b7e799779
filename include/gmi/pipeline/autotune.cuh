#pragma once
// --autotune and --plan for the serving layout. The paper's Algorithm 1 (plan/explorer.hpp) runs real trials:
// each candidate (partition, GMIs per GPU, environments per GMI) serves on one GPU for a short window through
// runtime::run_gmis, and reports the GPU's total steps/s and the largest GMI's device memory (what it allocated
// through cuda::device_buffer: CUDA contexts and library workspaces are not counted). The explorer's plan is
// printed, optionally saved (--save-plan) and then served on every GPU of the run; --plan serves a saved plan
// after checking it was made for this machine. Also here: the work one serving GMI does (serving_gmi_work), used
// by the serving layout and by the trials alike.
//
// GMI processes (MPS, MIG) re-run the binary with the launcher's flags; the candidate they belong to travels in
// GMI_CHOSEN_PARTITION, GMI_CHOSEN_GMIS, GMI_CHOSEN_ENVS, GMI_CHOSEN_SECONDS and GMI_CHOSEN_QUIET
// (apply_chosen_from_env).

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/pipeline/run_options.hpp>
#include <gmi/pipeline/serving_gmis.hpp>
#include <gmi/plan/explorer.hpp>
#include <gmi/plan/plan.hpp>
#include <gmi/plan/topology.hpp>
#include <gmi/runtime/gmis.hpp>
#include <gmi/runtime/trace.hpp>

namespace gmi {

// What one serving GMI does: build the pipeline's engine with o.num_envs environments (seed per rank) on the
// GMI's stream, then serve_and_report.
template <class Pipeline>
runtime::gmi_work serving_gmi_work(const run_options& o) {
  return [o](runtime::context& ctx, runtime::binding& b) {
    using Env = typename Pipeline::env;
    using engine = typename Pipeline::template engine<exec::cuda>;
    runtime::trace(ctx.id(), "building the engine (" + std::to_string(o.num_envs) + " envs)");
    engine e(o.num_envs, o.seed + 1000003ull * static_cast<std::uint64_t>(ctx.rank()), o.ppo, typename Env::params{},
             exec::cuda{.stream = b.stream()});
    runtime::trace(ctx.id(), "engine built");
    serve_and_report(ctx, b, e, o.serve_seconds, o.serve_steps_per_launch, &detail::stop_signal, 1, o.quiet);
  };
}

// The candidate a GMI process belongs to (set by the launcher of a trial or of a planned run).
inline runtime::env_list chosen_env(const plan::candidate& c, double seconds, bool quiet = false) {
  return {{"GMI_CHOSEN_PARTITION", c.partition},
          {"GMI_CHOSEN_GMIS", std::to_string(c.gmis_per_gpu)},
          {"GMI_CHOSEN_ENVS", std::to_string(c.envs_per_gmi)},
          {"GMI_CHOSEN_SECONDS", std::to_string(seconds)},
          {"GMI_CHOSEN_QUIET", quiet ? "1" : "0"}};
}
// In a GMI process: takes the launcher's candidate over the flags (returns false when there is none).
inline bool apply_chosen_from_env(run_options& o) {
  const char* p = std::getenv("GMI_CHOSEN_PARTITION");
  const char* k = std::getenv("GMI_CHOSEN_GMIS");
  const char* n = std::getenv("GMI_CHOSEN_ENVS");
  const char* s = std::getenv("GMI_CHOSEN_SECONDS");
  if (!p || !k || !n || !s) return false;
  o.partition = p;
  o.gmis_per_gpu = std::atoi(k);
  o.num_envs = std::atoi(n);
  o.serve_seconds = std::atof(s);
  if (const char* q = std::getenv("GMI_CHOSEN_QUIET"); q && std::string(q) == "1") o.quiet = true;
  o.autotune.on = false;
  o.autotune.plan_path.clear();
  return true;
}

// One trial of Algorithm 1: `c` serving on GPU o.gpu for `seconds`. Never throws (a failure is a failed trial).
template <class Pipeline>
plan::trial_result serving_trial(const run_options& o, const plan::candidate& c, double seconds) {
  runtime::gmis_config cfg;
  cfg.partition = c.partition;
  cfg.gpus = {o.gpu};
  cfg.gmis_per_gpu = c.gmis_per_gpu;
  cfg.env = chosen_env(c, seconds, true);
  if (const gmi::status st = runtime::can_implement(cfg); !st) return plan::trial_result::failed(st.message());
  run_options t = o;
  t.num_envs = c.envs_per_gmi;
  t.serve_seconds = seconds;
  t.quiet = true;
  try {
    const auto outcome = runtime::run_gmis(cfg, serving_gmi_work<Pipeline>(t));
    if (!outcome.report) return plan::trial_result::failed("a GMI process ran the launcher's trial");
    const gmi_serving_total total = collect_serving(*outcome.report);
    return plan::trial_result::measured(total.steps_per_s, total.max_device_bytes);
  } catch (const std::exception& e) {
    return plan::trial_result::failed(e.what());
  }
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

// --autotune: Algorithm 1 on this machine with serving trials; prints a line per trial and the choice, saves the
// plan when asked. Throws config_error for bad options or a budget too small for one trial.
template <class Pipeline>
plan::plan autotune_serving(const run_options& o) {
  const plan::topology t = plan::discover();
  plan::explore_options e;
  e.partitions = autotune_partitions(o);
  e.max_gmis_per_gpu = o.autotune.max_gmis_per_gpu;
  e.budget_seconds = o.autotune.budget_seconds;
  e.estimated_trial_seconds = o.autotune.trial_seconds + 0.5;  // the window plus start-up and warm-up
  e.progress = plan::print_progress(stdout);
  std::printf("gmi: autotune | partitions %s | up to %d GMIs per GPU | %d..%d envs per GMI | budget %.0f s | "
              "trials of %.2f s on GPU %d\n",
              o.autotune.partitions.empty() ? o.partition.c_str() : o.autotune.partitions.c_str(), e.max_gmis_per_gpu,
              e.min_envs, e.max_envs, e.budget_seconds, o.autotune.trial_seconds, o.gpu);
  std::fflush(stdout);
  const double seconds = o.autotune.trial_seconds;
  const plan::plan p = plan::explore(t, [&](const plan::candidate& c) { return serving_trial<Pipeline>(o, c, seconds); }, e);
  std::printf("gmi: autotune chose %s: %s steps/s on one GPU, %s projected over %zu GPU(s) (%s; %zu trials in %.1f s, %s)\n",
              plan::describe(p.chosen).c_str(), metrics::si(p.gpu_throughput).c_str(),
              metrics::si(p.projected_throughput).c_str(), t.gpus.size(), p.selection.c_str(), p.trials.size(),
              p.explore_seconds, p.stopped_by.c_str());
  if (!o.autotune.save_path.empty()) {
    plan::save(p, o.autotune.save_path);
    std::printf("gmi: plan saved to %s (serve with it: --plan %s)\n", o.autotune.save_path.c_str(),
                o.autotune.save_path.c_str());
  }
  std::fflush(stdout);
  return p;
}

}  // namespace gmi

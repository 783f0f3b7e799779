#pragma once
// The candidate a GMI process belongs to, through its environment: a launcher running an autotune trial or a
// planned run (pipeline/autotune.cuh, run.cuh) sets GMI_CHOSEN_PARTITION, GMI_CHOSEN_GMIS, GMI_CHOSEN_ENVS,
// GMI_CHOSEN_SECONDS, GMI_CHOSEN_QUIET and, for a training trial, GMI_CHOSEN_TRIAL=1, for the split layout
// GMI_CHOSEN_LAYOUT=split; the GMI process re-runs the binary with the launcher's flags and takes these over them
// (apply_chosen_from_env). What a training trial changes in the options is here too, for both sides alike.

#include <cstdlib>
#include <limits>
#include <string>

#include <gmi/pipeline/run_options.hpp>
#include <gmi/plan/profiler.hpp>
#include <gmi/runtime/launcher.hpp>

namespace gmi {

// A training trial runs this long before its first group step could be measured (trainer built, update captured,
// five iterations): the explorer's estimate of a trial's overhead, and time the trial trains beyond its window.
inline constexpr double training_trial_warmup_seconds = 1.0;

// What a training trial changes in the run's options, in the launcher and (GMI_CHOSEN_TRIAL) in its GMI
// processes alike: trains `seconds` past the warm-up, stops on time only, saves and resumes nothing, says nothing.
inline void make_training_trial(run_options& o, double seconds) {
  o.max_seconds = seconds + training_trial_warmup_seconds;
  o.max_env_steps = std::numeric_limits<double>::infinity();
  o.target_return = std::numeric_limits<double>::quiet_NaN();
  o.quiet = true;
  o.metrics_path.clear();
  o.checkpoint_path.clear();
  o.checkpoint_every = 0;
  o.resume_path.clear();
  o.restart_on_failure = 0;
  o.population = false;
}

// The candidate a GMI process belongs to (set by the launcher of a trial or of a planned run).
inline runtime::env_list chosen_env(const plan::candidate& c, double seconds, bool quiet = false,
                                    bool training_trial = false, bool split_roles = false) {
  runtime::env_list vars = {{"GMI_CHOSEN_PARTITION", c.partition},
                            {"GMI_CHOSEN_GMIS", std::to_string(c.gmis_per_gpu)},
                            {"GMI_CHOSEN_ENVS", std::to_string(c.envs_per_gmi)},
                            {"GMI_CHOSEN_SECONDS", std::to_string(seconds)},
                            {"GMI_CHOSEN_QUIET", quiet ? "1" : "0"}};
  if (training_trial) vars.emplace_back("GMI_CHOSEN_TRIAL", "1");
  if (split_roles) vars.emplace_back("GMI_CHOSEN_LAYOUT", "split");
  return vars;
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
  if (const char* t = std::getenv("GMI_CHOSEN_TRIAL"); t && std::string(t) == "1") make_training_trial(o, o.serve_seconds);
  if (const char* l = std::getenv("GMI_CHOSEN_LAYOUT"); l && std::string(l) == "split") o.split_roles = true;
  o.autotune.on = false;
  o.autotune.plan_path.clear();
  return true;
}

}  // namespace gmi

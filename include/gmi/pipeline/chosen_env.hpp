#pragma once
// What a process of ours tells the process it re-executes, through one variable, GMI_CHOSEN (a JSON object):
//   the candidate a GMI process belongs to: a launcher running an autotune trial or a planned run (autotune.cuh,
//   resolve.cuh) sets partition, GMIs per GPU, envs per GMI, seconds, quiet, whether a training trial, whether the
//   roles run split; the GMI process re-runs the binary with the launcher's flags and takes these over them
//   (apply_chosen_from_env);
//   "restart": an attempt's place in a restart loop (restart.hpp), which the attempt passes on to its GMIs.
// What a training trial changes in the options is here too, for both sides alike.

#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <gmi/core/error.hpp>
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

inline constexpr const char* chosen_variable = "GMI_CHOSEN";

// GMI_CHOSEN of this process (nullopt: unset). Throws config_error when it is not a JSON object.
[[nodiscard]] inline std::optional<nlohmann::json> chosen_json() {
  const char* text = std::getenv(chosen_variable);
  if (!text) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) throw gmi::config_error(gmi::got_need(chosen_variable, text, "a JSON object set by the gmi launcher"));
  return j;
}

// `j[key]` into `out`; config_error naming GMI_CHOSEN.<where><key> when it is missing or of another type.
template <class T>
void chosen_field(const nlohmann::json& j, const std::string& where, const char* key, T& out) {
  try {
    out = j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw gmi::config_error(gmi::got_need(std::string(chosen_variable) + "." + where + key,
                                          j.contains(key) ? j[key].dump() : "<missing>", "the value the gmi launcher sets"));
  }
}

// Adds `key: value` to the GMI_CHOSEN in `env` (made when missing), so one variable carries every part.
inline void add_to_chosen(runtime::env_list& env, const std::string& key, const nlohmann::json& value) {
  for (auto& [name, text] : env) {
    if (name != chosen_variable) continue;
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object()) j = nlohmann::json::object();
    j[key] = value;
    text = j.dump();
    return;
  }
  env.emplace_back(chosen_variable, nlohmann::json{{key, value}}.dump());
}

// The candidate a GMI process belongs to (set by the launcher of a trial or of a planned run).
inline runtime::env_list chosen_env(const plan::candidate& c, double seconds, bool quiet = false,
                                    bool training_trial = false, bool split_roles = false) {
  const nlohmann::json j = {{"partition", c.partition}, {"gmis_per_gpu", c.gmis_per_gpu},
                            {"envs_per_gmi", c.envs_per_gmi}, {"seconds", seconds},
                            {"quiet", quiet}, {"training_trial", training_trial}, {"split_roles", split_roles}};
  return {{chosen_variable, j.dump()}};
}
// In a GMI process: takes the launcher's candidate over the flags (returns false when there is none: GMI_CHOSEN
// unset or without a candidate). Throws config_error naming the field when GMI_CHOSEN is malformed.
inline bool apply_chosen_from_env(run_options& o) {
  const auto j = chosen_json();
  if (!j || !j->contains("partition")) return false;
  bool quiet = false, trial = false, split = false;
  chosen_field(*j, "", "partition", o.partition);
  chosen_field(*j, "", "gmis_per_gpu", o.gmis_per_gpu);
  chosen_field(*j, "", "envs_per_gmi", o.num_envs);
  chosen_field(*j, "", "seconds", o.serve_seconds);
  chosen_field(*j, "", "quiet", quiet);
  chosen_field(*j, "", "training_trial", trial);
  chosen_field(*j, "", "split_roles", split);
  if (quiet) o.quiet = true;
  if (trial) make_training_trial(o, o.serve_seconds);
  if (split) o.split_roles = true;
  // CPU actors: the plan's ratio (resolve.cuh) sets each GMI's actor cores
  if (j->contains("actor_cores_per_gmi")) chosen_field(*j, "", "actor_cores_per_gmi", o.actor_cores_per_gmi);
  o.autotune.on = false;
  o.autotune.plan_path.clear();
  return true;
}

}  // namespace gmi

#pragma once
// The fields of a training run's own metrics lines, shared by one GMI (run_one_gmi.cuh) and each member of a
// population (population_gmis.cuh, which writes them to a file of its own): a progress line's at each log time,
// the end line's at the stop (its learning curves against env steps and against wall-clock seconds).

#include <cmath>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <gmi/metrics/jsonl.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/pipeline/population.hpp>
#include <gmi/pipeline/report.hpp>
#include <gmi/pipeline/train_loop.hpp>

namespace gmi::detail {

// A progress line's fields from what the loop's progress hook sees (no mean return yet: null).
inline nlohmann::json progress_fields(const loop_view& v) {
  return {{"iteration", v.iteration},
          {"env_steps", v.steps},
          {"wall_s", v.seconds},
          {"train_samples_per_s", v.run_steps / v.seconds},
          {"mean_return", std::isfinite(v.mean_return) ? nlohmann::json(v.mean_return) : nlohmann::json()},
          {"policy_loss", v.losses.policy_loss},
          {"value_loss", v.losses.value_loss},
          {"entropy", v.losses.entropy},
          {"approx_kl", v.losses.approx_kl},
          {"clip_fraction", v.losses.clip_fraction},
          {"learning_rate", v.losses.learning_rate}};
}

// The end line's fields from the loop's end: the reason, the counts (env steps since training began, the
// iteration it resumed at: 0 for a fresh run), and the curves (those env steps, or seconds since the loop began,
// against the mean return), whose points are the same statistics rounds.
inline nlohmann::json end_fields(const loop_end& e, const std::string& reason) {
  return {{"event", "end"},  {"reason", reason},   {"iteration", e.iterations}, {"resumed_at", e.resumed_at},
          {"env_steps", e.steps}, {"wall_s", e.seconds}, {"curve", e.curve},    {"wall_curve", e.wall_curve}};
}

// A population member's metrics file: `path` with ".gmi<rank>" before its ".jsonl" ending, or after it when it
// has none (runs.jsonl -> runs.gmi2.jsonl, runs -> runs.gmi2).
inline std::string member_metrics_path(const std::string& path, int rank) {
  const std::string tag = ".gmi" + std::to_string(rank);
  const std::string ext = ".jsonl";
  if (path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0)
    return path.substr(0, path.size() - ext.size()) + tag + ext;
  return path + tag;
}

// A population member's own metrics lines (population mode with --metrics): `base` (its seed, rank and settings)
// with a progress line's fields at each log time and the end line's at the stop, so each member's curves are its own.
struct member_log {
  metrics::jsonl_log log;
  nlohmann::json base;
  double log_interval = 1.0;
};

// Member `rank` of `world`'s log under the run's options `o` (a train_config): nothing without --metrics.
template <class Pipeline, class Options>
std::optional<member_log> member_log_of(const Options& o, const metrics::run_info& run, const char* task,
                                        const population_member& m, int rank, int world, const std::string& partition) {
  if (o.metrics_path.empty()) return std::nullopt;
  member_log l{.log = metrics::jsonl_log(member_metrics_path(o.metrics_path, rank)),
               .base = {{"run_id", run.run_id}, {"task", task}, {"impl", "gmi"}, {"device", run.device},
                        {"num_envs", o.num_envs}, {"seed", m.seed}, {"rank", rank}, {"population", world},
                        {"layout", Pipeline::layout_type::name}, {"partition", partition}, {"git", run.git},
                        {"ppo", ppo_settings_json(m.ppo)}, {"overrides", m.overrides}},
               .log_interval = o.log_interval};
  if (std::isfinite(o.optimal_mean_return)) l.base["optimal_mean_return"] = o.optimal_mean_return;
  if constexpr (requires { typename Pipeline::network::net::layers; }) l.base["network"] = network_text<Pipeline>();
  return l;
}

}  // namespace gmi::detail

#pragma once
// What a run's lines say about it: the task's name and known optimum, a mean return next to that optimum, the
// network's widths, and the fields every end line of a run over GMIs starts with.

#include <cmath>
#include <concepts>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <gmi/metrics/progress.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/pipeline/run_options.hpp>
#include <gmi/runtime/gmis.hpp>

namespace gmi::detail {

template <class Env>
const char* task_name() {
  if constexpr (requires { Env::name; }) return static_cast<const char*>(Env::name);
  else return "custom";
}

// The task's best reachable mean episode return, where it is known (gmi::env's optional optimal_mean_return).
template <class Env>
std::optional<double> optimal_mean_return(const typename Env::params& p) {
  if constexpr (requires(const typename Env::params& p) {
                  { Env::optimal_mean_return(p) } -> std::convertible_to<double>;
                }) {
    return Env::optimal_mean_return(p);
  } else {
    return std::nullopt;
  }
}

// "-36.2" or, where the task's optimum is known, "-36.2 (1.10x the optimum -32.9)".
inline std::string return_text(double mean, const run_options& o) {
  if (!std::isfinite(mean)) return "-";
  std::string t = metrics::si(mean);
  if (std::isfinite(o.optimal_mean_return) && o.optimal_mean_return != 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " (%.2fx the optimum %s)", mean / o.optimal_mean_return,
                  metrics::si(o.optimal_mean_return).c_str());
    t += buf;
  }
  return t;
}

// The fields every end line of a run over GMIs starts with (bench/plot and the runs/ files read them).
inline nlohmann::json gmis_end_line(const metrics::run_info& run, const char* task, const char* layout,
                                    const runtime::gmis_config& cfg, const run_options& o) {
  nlohmann::json j = {{"run_id", run.run_id},     {"task", task},
                      {"impl", "gmi"},            {"device", run.device},
                      {"event", "end"},           {"layout", layout},
                      {"partition", cfg.partition}, {"gmi_processes", cfg.processes()},
                      {"gpus", cfg.gpus.size()},  {"gmis_per_gpu", cfg.gmis_per_gpu},
                      {"num_envs", o.num_envs},   {"seed", o.seed},
                      {"git", run.git}};
  if (std::isfinite(o.optimal_mean_return)) j["optimal_mean_return"] = o.optimal_mean_return;
  if (cfg.partition == "mps") {  // the active-thread percentages the GMIs ran with
    const gmi::partition::mps::config m = runtime::mps_config_of(cfg);
    j["mps_percentage"] = m.percentage();
    if (m.first_slice_percentage) j["mps_first_slice_percentage"] = *m.first_slice_percentage;
  }
  return j;
}

// The network's layer widths, e.g. "60-256-128-64-9" (inputs, hidden layers, the heads' outputs), for result lines.
template <class Pipeline>
std::string network_text() {
  using shape = typename Pipeline::network::net::layers;
  std::string t;
  for (int l = 0; l <= shape::count; ++l) t += (l ? "-" : "") + std::to_string(shape::width(l));
  return t;
}
}  // namespace gmi::detail

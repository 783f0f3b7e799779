#pragma once
// Population mode on GMIs: every GMI trains its own policy (population.hpp: its seed and settings), nothing is
// exchanged, every member stops on its own (solved, step or time limit) and reports; the launcher prints the
// members side by side and how many solved.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/metrics/progress.hpp>
#include <gmi/pipeline/population.hpp>
#include <gmi/pipeline/run_lines.hpp>
#include <gmi/pipeline/sm_activity.hpp>
#include <gmi/pipeline/train_loop.hpp>
#include <gmi/rl/episode_window.hpp>
#include <gmi/runtime/context.hpp>
#include <gmi/runtime/gmis.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace gmi {

struct population_result {
  int rank = 0, gpu = 0, slice = 0;
  std::uint64_t seed = 0;
  nlohmann::json overrides = nlohmann::json::object();
  std::string reason;
  std::uint64_t iterations = 0;
  double samples = 0, seconds = 0;
  double mean_return = std::numeric_limits<double>::quiet_NaN();
  std::optional<double> solved_steps, solved_seconds;
};

inline void to_json(nlohmann::json& j, const population_result& r) {
  j = {{"rank", r.rank},       {"gpu", r.gpu},           {"slice", r.slice},           {"seed", r.seed},
       {"overrides", r.overrides}, {"reason", r.reason}, {"iterations", r.iterations}, {"samples", r.samples},
       {"seconds", r.seconds}};
  if (std::isfinite(r.mean_return)) j["mean_return"] = r.mean_return;
  if (r.solved_steps) j["solved_steps"] = *r.solved_steps;
  if (r.solved_seconds) j["solved_seconds"] = *r.solved_seconds;
}
inline void from_json(const nlohmann::json& j, population_result& r) {
  r.rank = j.at("rank");
  r.gpu = j.at("gpu");
  r.slice = j.at("slice");
  r.seed = j.at("seed");
  r.overrides = j.at("overrides");
  r.reason = j.at("reason");
  r.iterations = j.at("iterations");
  r.samples = j.at("samples");
  r.seconds = j.at("seconds");
  if (j.contains("mean_return")) r.mean_return = j["mean_return"].get<double>();
  if (j.contains("solved_steps")) r.solved_steps = j["solved_steps"].get<double>();
  if (j.contains("solved_seconds")) r.solved_seconds = j["solved_seconds"].get<double>();
}

// Inside a GMI: trains `trainer` in train_loop.hpp's loop as a group of one (its own window, limits and signal;
// it looks at its loss terms at each log time, about once a second without `lines`: non-finite ones end it, the
// others go on) and returns what to report. With `lines`, it writes its progress and end lines there; `finish`
// (when set and the run did not diverge) adds fields to the end line after the clock stopped (an evaluation).
template <class Trainer>
population_result train_member(runtime::context& ctx, Trainer& trainer, const population_member& m, double target,
                               int min_episodes, double max_env_steps, double max_seconds, detail::member_log* lines = nullptr,
                               const std::function<void(nlohmann::json&)>& finish = {}) {
  population_result r;
  r.rank = ctx.rank();
  r.gpu = ctx.gpu();
  r.slice = ctx.slice();
  r.seed = m.seed;
  r.overrides = m.overrides;
  detail::loop_settings s;
  s.max_env_steps = max_env_steps;
  s.max_seconds = max_seconds;
  s.target_return = target;
  s.log_interval = lines ? lines->log_interval : 1.0;
  s.min_episodes = min_episodes;
  sm_activity_window gpm(-1, -1);  // members sample no GPU activity
  const auto progress = [&](const detail::loop_view& v) {
    if (!lines) return;
    nlohmann::json line = lines->base;
    line.update(detail::progress_fields(v));
    lines->log.write(line);
  };
  const detail::loop_end e = detail::train_loop(trainer, detail::solo_group{&ctx}, s, gpm, [&] { ctx.heartbeat(); },
                                                progress, [] {});
  const auto ended = std::chrono::steady_clock::now();
  r.reason = stop_reason_text(e.reason, e.signal_number);
  if (e.reason == stop_reason::solved) {
    r.solved_steps = e.steps;
    r.solved_seconds = e.seconds;
  }
  trainer.synchronize();
  if (e.reason != stop_reason::diverged && !trainer.losses().finite()) r.reason = "diverged";
  r.iterations = trainer.iteration();
  r.samples = static_cast<double>(trainer.iteration()) * trainer.samples_per_iteration();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - e.started).count();
  r.mean_return = e.mean_return;
  if (lines) {
    nlohmann::json end = lines->base;
    end.update(detail::end_fields(e, r.reason));
    end["mean_return"] = std::isfinite(e.mean_return) ? nlohmann::json(e.mean_return) : nlohmann::json();
    end["train_samples_per_s"] = e.rate();
    // From the first round on (the first iteration's module loading and the graph capture left out), as one GMI's.
    const double warm = e.warm_rate(trainer.samples_per_iteration(), ended);
    if (std::isfinite(warm)) end["warm_samples_per_s"] = warm;
    if (finish && r.reason != "diverged") finish(end);
    lines->log.write(end);
  }
  return r;
}

// In the launcher: the members' reports, by rank. Throws gmi::error when a GMI reported nothing.
inline std::vector<population_result> collect_population(const runtime::run_report& report) {
  std::vector<population_result> out;
  for (std::size_t r = 0; r < report.results.size(); ++r) {
    if (report.results[r].empty()) throw gmi::error("GMI " + std::to_string(r) + " ended without a population report");
    out.push_back(nlohmann::json::parse(report.results[r]).get<population_result>());
  }
  return out;
}

// The side-by-side table and the summary line ("12 of 16 solved, median 3.1 M env steps / 0.9 s to solve").
inline void print_population(const std::vector<population_result>& members) {
  std::printf("  %-4s %-9s %-40s %-10s %9s %9s %8s\n", "GMI", "GPU/slice", "settings", "result", "steps", "seconds",
              "return");
  std::vector<double> steps, seconds;
  for (const auto& m : members) {
    std::string where = std::to_string(m.gpu) + "/" + std::to_string(m.slice);
    std::string settings = m.overrides.dump();
    if (settings.size() > 40) settings = settings.substr(0, 37) + "...";
    const double s = m.solved_steps.value_or(m.samples), t = m.solved_seconds.value_or(m.seconds);
    std::printf("  %-4d %-9s %-40s %-10s %9s %9.2f %8s\n", m.rank, where.c_str(), settings.c_str(), m.reason.c_str(),
                metrics::si(s).c_str(), t, std::isfinite(m.mean_return) ? metrics::si(m.mean_return).c_str() : "-");
    if (m.solved_steps) {
      steps.push_back(*m.solved_steps);
      seconds.push_back(*m.solved_seconds);
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? std::numeric_limits<double>::quiet_NaN() : v[v.size() / 2];
  };
  if (steps.empty()) {
    std::printf("gmi: population of %zu | 0 of %zu solved\n", members.size(), members.size());
  } else {
    std::printf("gmi: population of %zu | %zu of %zu solved | median %s env steps, %.2f s to solve\n", members.size(),
                steps.size(), members.size(), metrics::si(median(steps)).c_str(), median(seconds));
  }
}

}  // namespace gmi

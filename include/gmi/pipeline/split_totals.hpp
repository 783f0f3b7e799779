#pragma once
// What the GMIs of a split run report (split_gmis.cuh) and the launcher's totals of those reports: throughput of
// the trainers and the serving GMIs, policy lag, dropped rollouts, and whether the trainers of several GPUs ended
// with the same weights. Host code only.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/core/error.hpp>
#include <gmi/pipeline/sm_activity.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace gmi {

// What one GMI of the split layout reports (short: a report holds 1023 bytes).
struct split_gmi_result {
  int rank = 0, gpu = 0, slice = 0, num_envs = 0;
  bool trainer = false;
  double seconds = 0;
  double steps = 0;                 // serving: environment steps; trainer: samples trained on
  std::uint64_t rollouts = 0;       // serving: sent; trainer: trained on
  std::uint64_t dropped = 0;        // trainer: rollouts older than the lag bound
  std::uint64_t updates = 0;        // trainer: updates; serving: weight versions picked up
  double lag_mean = 0;              // trainer: mean policy lag (updates) of the rollouts received
  std::uint64_t lag_max = 0;
  double mean_return = std::numeric_limits<double>::quiet_NaN();  // trainer: last window over every server
  // trainer: samples trained from its first update to the stop decision, and that time (an autotune trial's
  // window: start-up and the drain left out); zero when it stopped before a second update
  double warm_steps = 0, warm_seconds = 0;
  std::uint64_t replayed = 0;       // trainer: updates that ran as one CUDA graph launch (--learner-graph)
  double waited = 0;                // trainer: seconds waiting for rollouts (the serving GMIs were behind)
  sm_activity gpm;                  // trainer (slice 0): GPM from its first update to the stop decision
  std::uint64_t weights_hash = 0;   // trainer: FNV-1a of its final weights snapshot (the same on every trainer)
  std::string reason, binding;
};

inline void to_json(nlohmann::json& j, const split_gmi_result& r) {
  j = {{"rank", r.rank},   {"gpu", r.gpu},         {"slice", r.slice},       {"num_envs", r.num_envs},
       {"trainer", r.trainer}, {"seconds", r.seconds}, {"steps", r.steps},   {"rollouts", r.rollouts},
       {"dropped", r.dropped}, {"updates", r.updates}, {"lag_mean", r.lag_mean}, {"lag_max", r.lag_max},
       {"reason", r.reason}, {"binding", r.binding}};
  if (std::isfinite(r.mean_return)) j["mean_return"] = r.mean_return;
  if (r.warm_seconds > 0) j.update({{"warm_steps", r.warm_steps}, {"warm_seconds", r.warm_seconds}});
  if (r.trainer) j.update({{"replayed", r.replayed}, {"waited", r.waited}, {"weights_hash", r.weights_hash}});
  put_sm_activity(j, r.gpm);
}
inline void from_json(const nlohmann::json& j, split_gmi_result& r) {
  r.rank = j.at("rank");
  r.gpu = j.at("gpu");
  r.slice = j.at("slice");
  r.num_envs = j.at("num_envs");
  r.trainer = j.at("trainer");
  r.seconds = j.at("seconds");
  r.steps = j.at("steps");
  r.rollouts = j.at("rollouts");
  r.dropped = j.at("dropped");
  r.updates = j.at("updates");
  r.lag_mean = j.at("lag_mean");
  r.lag_max = j.at("lag_max");
  r.reason = j.at("reason");
  r.binding = j.at("binding");
  if (j.contains("mean_return")) r.mean_return = j["mean_return"].get<double>();
  if (j.contains("replayed")) r.replayed = j["replayed"].get<std::uint64_t>();
  if (j.contains("waited")) r.waited = j["waited"].get<double>();
  if (j.contains("weights_hash")) r.weights_hash = j["weights_hash"].get<std::uint64_t>();
  r.gpm = get_sm_activity(j);
  if (j.contains("warm_seconds")) {
    r.warm_steps = j.at("warm_steps");
    r.warm_seconds = j.at("warm_seconds");
  }
}

struct split_total {
  std::vector<split_gmi_result> per_gmi;
  double train_samples_per_s = 0;  // every trainer's samples over its time, added up
  double serve_steps_per_s = 0;    // every serving GMI's steps over its time, added up
  double warm_train_samples_per_s = 0;  // the trainers' from their first update on; train_samples_per_s without
  std::uint64_t updates = 0, rollouts = 0, dropped = 0, lag_max = 0;
  double lag_mean = 0;             // over the trainers' received rollouts
  double mean_return = std::numeric_limits<double>::quiet_NaN();
  sm_activity gpm;  // the trainers' GPM figures (one a GPU), their mean
  int trainers = 0;
  bool weights_identical = true;  // every trainer ended with the same weights (one trainer: trivially)
  std::string reason;
};

// In the launcher: the GMIs' reports added up. Throws gmi::error when a GMI reported nothing.
inline split_total collect_split(const runtime::run_report& report) {
  split_total t;
  double lag_weighted = 0, received = 0;
  bool warm = true;
  for (std::size_t r = 0; r < report.results.size(); ++r) {
    if (report.results[r].empty()) throw gmi::error("GMI " + std::to_string(r) + " ended without a split-layout report");
    auto one = nlohmann::json::parse(report.results[r]).get<split_gmi_result>();
    const double rate = one.seconds > 0 ? one.steps / one.seconds : 0.0;
    if (one.trainer) {
      if (t.trainers++ > 0)
        for (const auto& g : t.per_gmi)
          if (g.trainer && g.weights_hash != one.weights_hash) t.weights_identical = false;
      t.train_samples_per_s += rate;
      warm = warm && one.warm_seconds > 0;
      if (one.warm_seconds > 0) t.warm_train_samples_per_s += one.warm_steps / one.warm_seconds;
      t.updates = std::max(t.updates, one.updates);  // the trainers of a group update in step
      t.rollouts += one.rollouts;
      t.dropped += one.dropped;
      t.lag_max = std::max(t.lag_max, one.lag_max);
      const double n = static_cast<double>(one.rollouts + one.dropped);
      lag_weighted += one.lag_mean * n;
      received += n;
      if (std::isfinite(one.mean_return)) t.mean_return = one.mean_return;
      if (t.reason.empty()) t.reason = one.reason;
    } else {
      t.serve_steps_per_s += rate;
    }
    t.per_gmi.push_back(std::move(one));
  }
  t.lag_mean = received > 0 ? lag_weighted / received : 0.0;
  sm_activity_mean gpm;
  for (const auto& g : t.per_gmi) gpm.add(g.gpm);
  t.gpm = gpm.mean();
  if (!warm) t.warm_train_samples_per_s = t.train_samples_per_s;
  return t;
}

}  // namespace gmi

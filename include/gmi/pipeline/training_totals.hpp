#pragma once
// What a synchronous group's GMIs report and what the launcher makes of it: gmi_training_result (one GMI's
// iterations, time, weights checksum, communication time; JSON both ways, since it travels as a report string)
// and collect_training (the totals: samples/s, identical weights, the stop reason, the communication shares).
// Host code: the launcher reads reports, and a test can feed it some.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/core/error.hpp>
#include <gmi/pipeline/sm_activity.hpp>
#include <gmi/pipeline/stop_reason.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace gmi {

// What one training GMI reports to its launcher.
struct gmi_training_result {
  int rank = 0, gpu = 0, slice = 0, num_envs = 0;
  std::uint64_t iterations = 0;
  double samples = 0;        // this GMI's environment steps in this run (a resumed checkpoint's left out)
  double seconds = 0;        // from the first iteration to the end (every GMI ends after the same iteration)
  double mean_return = std::numeric_limits<double>::quiet_NaN();  // the group's last window (same on every GMI)
  std::uint64_t weights_hash = 0;  // FNV-1a of the final weights' bytes
  std::string reason;
  std::string binding;
  std::string gradients;  // the gradient allreduce in use (gmi_gradient_sync::description)
  std::string update;     // "fused" (replayed, the group's sum inside each step kernel), "graph" or "eager"
  std::string statistics;  // where the group's rollout statistics meet: "kernel" (the row exchange) or "host"
  std::string collection;  // how the rollout is collected: "batched" or "threads" (rl::ppo_trainer::collection_name)
  std::vector<std::array<double, 2>> curve;  // rank 0 only: (group env steps, mean return) at every group step
  // Rank 0 only: the final policy's deterministic return (rl/ppo_eval.hpp) over eval_episodes, NaN where not run.
  double eval_return = std::numeric_limits<double>::quiet_NaN();
  double eval_length = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t eval_episodes = 0;
  // From the first group step (iteration 5) to the end: start-up, graph capture and the first iterations left
  // out, as an autotune trial measures (pipeline/autotune.cuh). Zero when the run ended at its first group step.
  double warm_samples = 0, warm_seconds = 0;
  std::uint64_t device_bytes = 0;  // peak device memory this GMI's thread allocated through cuda::device_buffer
  // From the first iteration to the end (as `seconds`), with --comm-clock on (else NaN): the device's time inside
  // the gradient sums (gmi_gradient_sync::comm_seconds), and the host's inside the group's shared-memory sums of
  // rollout statistics and stop decisions.
  double comm_seconds = std::numeric_limits<double>::quiet_NaN();
  double host_sync_seconds = std::numeric_limits<double>::quiet_NaN();
  // Of comm_seconds, the step kernels' waits for the other GPUs' sums (fused across GPUs; else NaN).
  double comm_across_seconds = std::numeric_limits<double>::quiet_NaN();
  sm_activity gpm;  // slice 0 of each GPU: GPM from the first group step to the end
};

inline void to_json(nlohmann::json& j, const gmi_training_result& r) {
  j = {{"rank", r.rank},         {"gpu", r.gpu},         {"slice", r.slice},     {"num_envs", r.num_envs},
       {"iterations", r.iterations}, {"samples", r.samples}, {"seconds", r.seconds},
       {"weights_hash", r.weights_hash}, {"reason", r.reason}, {"binding", r.binding}};
  if (std::isfinite(r.mean_return)) j["mean_return"] = r.mean_return;
  if (!r.curve.empty()) j["curve"] = r.curve;
  if (std::isfinite(r.eval_return)) {
    j.update({{"eval_return", r.eval_return}, {"eval_length", r.eval_length}, {"eval_episodes", r.eval_episodes}});
  }
  if (!r.gradients.empty()) j["gradients"] = r.gradients;
  if (!r.update.empty()) j["update"] = r.update;
  if (!r.statistics.empty()) j["statistics"] = r.statistics;
  if (!r.collection.empty()) j["collection"] = r.collection;
  if (r.warm_seconds > 0) j.update({{"warm_samples", r.warm_samples}, {"warm_seconds", r.warm_seconds}});
  j["device_bytes"] = r.device_bytes;
  if (std::isfinite(r.comm_seconds)) j.update({{"comm_seconds", r.comm_seconds}, {"host_sync_seconds", r.host_sync_seconds}});
  if (std::isfinite(r.comm_across_seconds)) j["comm_across_seconds"] = r.comm_across_seconds;
  put_sm_activity(j, r.gpm);
}
inline void from_json(const nlohmann::json& j, gmi_training_result& r) {
  r.rank = j.at("rank");
  r.gpu = j.at("gpu");
  r.slice = j.at("slice");
  r.num_envs = j.at("num_envs");
  r.iterations = j.at("iterations");
  r.samples = j.at("samples");
  r.seconds = j.at("seconds");
  r.weights_hash = j.at("weights_hash");
  r.reason = j.at("reason");
  r.binding = j.at("binding");
  if (j.contains("mean_return")) r.mean_return = j["mean_return"].get<double>();
  if (j.contains("curve")) r.curve = j["curve"].get<std::vector<std::array<double, 2>>>();
  if (j.contains("eval_return")) {
    r.eval_return = j.at("eval_return");
    r.eval_length = j.at("eval_length");
    r.eval_episodes = j.at("eval_episodes");
  }
  if (j.contains("gradients")) r.gradients = j["gradients"].get<std::string>();
  if (j.contains("update")) r.update = j["update"].get<std::string>();
  if (j.contains("statistics")) r.statistics = j["statistics"].get<std::string>();
  if (j.contains("collection")) r.collection = j["collection"].get<std::string>();
  if (j.contains("warm_seconds")) {
    r.warm_samples = j.at("warm_samples");
    r.warm_seconds = j.at("warm_seconds");
  }
  if (j.contains("device_bytes")) r.device_bytes = j.at("device_bytes");
  if (j.contains("comm_seconds")) {
    r.comm_seconds = j.at("comm_seconds");
    r.host_sync_seconds = j.at("host_sync_seconds");
  }
  if (j.contains("comm_across_seconds")) r.comm_across_seconds = j.at("comm_across_seconds");
  r.gpm = get_sm_activity(j);
}


struct gmi_training_total {
  std::vector<gmi_training_result> per_gmi;
  double samples_per_s = 0;  // every GMI's samples over the longest GMI's time
  // The same from the first group step on (start-up left out); samples_per_s when no GMI got past it.
  double warm_samples_per_s = 0;
  std::uint64_t max_device_bytes = 0;  // the largest GMI's peak device memory (cuda::device_buffer)
  bool weights_identical = true;
  std::uint64_t iterations = 0;
  std::string reason;  // why the group stopped (pipeline/stop_reason.hpp)
  // With --comm-clock on (else NaN): each GMI's comm_seconds / seconds, their mean and largest; host_sync_seconds /
  // seconds, their mean.
  double comm_share = std::numeric_limits<double>::quiet_NaN();
  double comm_share_max = std::numeric_limits<double>::quiet_NaN();
  double host_sync_share = std::numeric_limits<double>::quiet_NaN();
  // Of comm_share, the step kernels' waits for the other GPUs' sums: comm_across_seconds / seconds, the mean (NaN
  // unless every GMI has it).
  double comm_share_across = std::numeric_limits<double>::quiet_NaN();
  sm_activity gpm;   // the mean over the GPUs with a GPM figure (else the first note)
  int gpm_gpus = 0;  // GPUs with a figure
};

// "GPU utilization: SM activity 80%, occupancy 40% (GPM, mean over 4 GPUs, from the first group step)".
inline std::string utilization_text(const gmi_training_total& t) {
  std::string s = "GPU utilization: " + sm_activity_text(t.gpm);
  if (t.gpm.active) {
    s.pop_back();  // ")"
    s += ", mean over " + std::to_string(t.gpm_gpus) + (t.gpm_gpus == 1 ? " GPU" : " GPUs") + ", from the first group step)";
  }
  return s;
}

// "communication: 12.3% of the time on the device (gradient sums; mean over 8 GMIs, largest 15.0%) | host syncs 1.2%",
// fused across GPUs followed by " | waiting for other GPUs 4.5%" (a part of the 12.3%).
inline std::string comm_share_text(const gmi_training_total& t) {
  char text[240];
  const int n = std::snprintf(text, sizeof text,
                              "communication: %.1f%% of the time on the device (gradient sums; mean over %zu GMIs, "
                              "largest %.1f%%) | host syncs %.1f%%",
                              100.0 * t.comm_share, t.per_gmi.size(), 100.0 * t.comm_share_max, 100.0 * t.host_sync_share);
  if (std::isfinite(t.comm_share_across) && n > 0 && static_cast<std::size_t>(n) < sizeof text)
    std::snprintf(text + n, sizeof text - static_cast<std::size_t>(n), " | waiting for other GPUs %.1f%%",
                  100.0 * t.comm_share_across);
  return text;
}

// In the launcher: the GMIs' reports added up. Throws gmi::error when a GMI reported nothing.
inline gmi_training_total collect_training(const runtime::run_report& report) {
  gmi_training_total t;
  double samples = 0, longest = 0, warm_samples = 0, warm_longest = 0;
  bool warm = true;
  for (std::size_t r = 0; r < report.results.size(); ++r) {
    if (report.results[r].empty()) throw gmi::error("GMI " + std::to_string(r) + " ended without a training report");
    auto one = nlohmann::json::parse(report.results[r]).get<gmi_training_result>();
    samples += one.samples;
    longest = std::max(longest, one.seconds);
    warm = warm && one.warm_seconds > 0;
    warm_samples += one.warm_samples;
    warm_longest = std::max(warm_longest, one.warm_seconds);
    t.max_device_bytes = std::max(t.max_device_bytes, one.device_bytes);
    t.per_gmi.push_back(std::move(one));
  }
  if (!t.per_gmi.empty()) {
    t.iterations = t.per_gmi.front().iterations;
    for (const auto& g : t.per_gmi) {
      t.weights_identical = t.weights_identical && g.weights_hash == t.per_gmi.front().weights_hash &&
                            g.iterations == t.iterations;
    }
  }
  t.samples_per_s = longest > 0 ? samples / longest : 0;
  double share = 0, largest = 0, host = 0, across = 0;
  bool clocked = !t.per_gmi.empty(), clocked_across = clocked;
  for (const auto& g : t.per_gmi) {
    clocked = clocked && std::isfinite(g.comm_seconds) && g.seconds > 0;
    if (!clocked) break;
    share += g.comm_seconds / g.seconds;
    largest = std::max(largest, g.comm_seconds / g.seconds);
    host += g.host_sync_seconds / g.seconds;
    clocked_across = clocked_across && std::isfinite(g.comm_across_seconds);
    if (clocked_across) across += g.comm_across_seconds / g.seconds;
  }
  if (clocked) {
    const double n = static_cast<double>(t.per_gmi.size());
    t.comm_share = share / n;
    t.comm_share_max = largest;
    t.host_sync_share = host / n;
    if (clocked_across) t.comm_share_across = across / n;
  }
  t.warm_samples_per_s = warm && warm_longest > 0 ? warm_samples / warm_longest : t.samples_per_s;
  sm_activity_mean gpm;
  for (const auto& g : t.per_gmi) gpm.add(g.gpm);
  t.gpm = gpm.mean();
  t.gpm_gpus = gpm.gpus();
  std::vector<std::string> reasons;
  for (const auto& g : t.per_gmi) reasons.push_back(g.reason);
  t.reason = group_stop_reason(reasons);
  return t;
}


}  // namespace gmi

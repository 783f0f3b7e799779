#pragma once
// The serving layout on many GMIs: what each GMI does (serve_and_report: warm up, wait for every GMI at a
// barrier, serve for a fixed time, report its steps) and how the launcher adds the reports up
// (collect_serving: per-GMI rates, total = all steps / the longest GMI window, since every window starts at
// the same barrier). Several windows (repetitions) run back to back in one launch, each behind its own barrier,
// so a benchmark pays process and daemon start-up once. The GMI of slice 0 on each GPU also samples GPM SM
// activity over its windows, the utilization figure that tells a busy GPU from one that merely runs a kernel.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/pipeline/sm_activity.hpp>
#include <gmi/runtime/context.hpp>
#include <gmi/runtime/gmis.hpp>
#include <gmi/runtime/supervisor.hpp>
#include <gmi/runtime/trace.hpp>

namespace gmi {

struct gmi_serving_result {
  int rank = 0, gpu = 0, slice = 0, num_envs = 0, sm_count = 0;
  std::vector<std::uint64_t> steps;  // per environment, one entry per window
  std::vector<double> seconds;       // this GMI's windows, each from a common barrier
  double steps_per_s = 0;            // median window: steps * num_envs / seconds
  std::string binding;       // "MPS client, 12% = 16 SMs"
  sm_activity gpm;           // over the windows (slice 0 of each GPU)
  std::uint64_t device_bytes = 0;  // peak device memory this GMI's thread allocated through cuda::device_buffer
};

inline void to_json(nlohmann::json& j, const gmi_serving_result& r) {
  j = {{"rank", r.rank},   {"gpu", r.gpu},         {"slice", r.slice},     {"num_envs", r.num_envs},
       {"sms", r.sm_count}, {"steps", r.steps},     {"seconds", r.seconds}, {"steps_per_s", r.steps_per_s},
       {"binding", r.binding}, {"device_bytes", r.device_bytes}};
  put_sm_activity(j, r.gpm);
}
inline void from_json(const nlohmann::json& j, gmi_serving_result& r) {
  r.rank = j.at("rank");
  r.gpu = j.at("gpu");
  r.slice = j.at("slice");
  r.num_envs = j.at("num_envs");
  r.sm_count = j.at("sms");
  r.steps = j.at("steps").get<std::vector<std::uint64_t>>();
  r.seconds = j.at("seconds").get<std::vector<double>>();
  r.steps_per_s = j.at("steps_per_s");
  r.binding = j.at("binding");
  r.gpm = get_sm_activity(j);
  if (j.contains("device_bytes")) r.device_bytes = j["device_bytes"];
}

// Inside a GMI: `engine` (anything with serve(steps), synchronize(), num_envs()) serves `windows` times for
// `seconds`, each window after a barrier with every GMI of the run, heartbeating; `stop` (optional) ends it
// early; rank 0 prints when every GMI is ready unless `quiet`. Reports the result.
template <class Engine>
gmi_serving_result serve_and_report(runtime::context& ctx, const runtime::binding& b, Engine& engine, double seconds,
                                    int steps_per_launch, const std::atomic<int>* stop = nullptr, int windows = 1,
                                    bool quiet = false) {
  gmi::require(windows >= 1 && windows <= 20, "serving windows", windows, "1..20 (the report holds 20)");
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  runtime::trace(ctx.id(), "warming up");
  engine.serve(20);  // warm-up: graph capture, module loading
  engine.synchronize();
  runtime::trace(ctx.id(), "warm");
  const auto w0 = clock::now();
  engine.serve(20);  // what 20 steps cost
  engine.synchronize();
  ctx.heartbeat();
  // A window checks the clock after every 4 launches; an engine slow enough that 4 launches take more than a
  // tenth of the window gets shorter launches (multiples of 20 steps, one serving graph's worth), so a window
  // lasts about `seconds` whatever the task costs.
  const double per20 = std::chrono::duration<double>(clock::now() - w0).count();
  if (4 * per20 * steps_per_launch / 20 > seconds / 10 && steps_per_launch > 20) {
    steps_per_launch = std::max(20, static_cast<int>(seconds / 40 / per20) * 20);
  }
  gmi_serving_result r;
  r.rank = ctx.rank();
  r.gpu = ctx.gpu();
  r.slice = ctx.slice();
  r.num_envs = engine.num_envs();
  r.sm_count = b.sm_count();
  r.binding = b.describe();
  sm_activity_window gpm(ctx.slice(), b.nvml_index());
  std::vector<double> rates;
  for (int w = 0; w < windows; ++w) {
    ctx.barrier(ctx.all());
    runtime::trace(ctx.id(), "window " + std::to_string(w) + " starts");
    if (w == 0 && ctx.rank() == 0 && !quiet) {  // progress: the slow part (start-up) is over
      std::printf("gmi: %d GMIs ready after %.1f s; measuring %d window(s) of %.1f s\n", ctx.world(),
                  std::chrono::duration<double>(clock::now() - started).count(), windows, seconds);
      std::fflush(stdout);
    }
    if (w == 0) gpm.start();
    std::uint64_t steps = 0;
    const auto t0 = clock::now();
    double elapsed = 0;
    bool stopped = false;
    while (elapsed < seconds) {
      for (int k = 0; k < 4; ++k) engine.serve(steps_per_launch);
      engine.synchronize();
      steps += 4ull * static_cast<std::uint64_t>(steps_per_launch);
      ctx.heartbeat();
      elapsed = std::chrono::duration<double>(clock::now() - t0).count();
      stopped = ctx.stop_requested() || (stop && stop->load() != 0);
      if (stopped) break;
    }
    r.steps.push_back(steps);
    r.seconds.push_back(elapsed);
    rates.push_back(static_cast<double>(steps) * r.num_envs / elapsed);
    runtime::trace(ctx.id(), "window " + std::to_string(w) + " done: " + std::to_string(steps) + " steps");
    if (stopped) break;
  }
  std::sort(rates.begin(), rates.end());
  r.steps_per_s = rates[rates.size() / 2];
  r.gpm = gpm.finish();
  r.device_bytes = cuda::device_bytes_of_this_thread().peak;
  ctx.report(nlohmann::json(r).dump());
  return r;
}

struct gmi_serving_total {
  std::vector<gmi_serving_result> per_gmi;  // by rank
  std::vector<double> window_steps_per_s;   // per window: every GMI's steps over the longest GMI's time
  double steps_per_s = 0;                   // the median window
  long long total_envs = 0;
  std::uint64_t max_device_bytes = 0;  // the largest GMI's peak device memory (cuda::device_buffer)
  sm_activity gpm;  // mean over the GPUs that have a GPM figure
};

// In the launcher, after the run: the GMIs' reports added up. Throws gmi::error when a GMI reported nothing.
inline gmi_serving_total collect_serving(const runtime::run_report& report) {
  gmi_serving_total t;
  sm_activity_mean gpm;
  std::size_t windows = SIZE_MAX;
  for (std::size_t r = 0; r < report.results.size(); ++r) {
    if (report.results[r].empty()) throw gmi::error("GMI " + std::to_string(r) + " ended without a serving report");
    auto one = nlohmann::json::parse(report.results[r]).get<gmi_serving_result>();
    windows = std::min(windows, one.steps.size());
    t.total_envs += one.num_envs;
    t.max_device_bytes = std::max(t.max_device_bytes, one.device_bytes);
    gpm.add(one.gpm);
    t.per_gmi.push_back(std::move(one));
  }
  for (std::size_t w = 0; w < windows && !t.per_gmi.empty(); ++w) {
    double longest = 0, env_steps = 0;
    for (const auto& g : t.per_gmi) {
      longest = std::max(longest, g.seconds[w]);
      env_steps += static_cast<double>(g.steps[w]) * g.num_envs;
    }
    t.window_steps_per_s.push_back(longest > 0 ? env_steps / longest : 0);
  }
  if (!t.window_steps_per_s.empty()) {
    std::vector<double> sorted = t.window_steps_per_s;
    std::sort(sorted.begin(), sorted.end());
    t.steps_per_s = sorted[sorted.size() / 2];
  }
  t.gpm = gpm.mean();
  return t;
}

}  // namespace gmi

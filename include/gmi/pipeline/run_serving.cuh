#pragma once
// The serving layout's run on every GMI of every GPU (or, in a GMI process, this GMI's part of it): each GMI builds
// the pipeline's engine on its stream and serves for --serve-seconds (serving_gmis.hpp's serve_and_report); the
// launcher adds the GMIs' steps up, prints them and writes the metrics line.

#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include <gmi/exec/cuda.cuh>
#include <gmi/metrics/jsonl.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/pipeline/report.hpp>
#include <gmi/pipeline/serving_gmis.hpp>
#include <gmi/pipeline/sm_activity.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/rl/policy_server.cuh>
#include <gmi/runtime/gmis.hpp>
#include <gmi/runtime/trace.hpp>

namespace gmi::detail {

// What one serving GMI does: build the pipeline's engine with o.num_envs environments (seed per rank) on the
// GMI's stream, then serve_and_report.
template <class Pipeline>
runtime::gmi_work serving_gmi_work(const train_config<Pipeline>& o) {
  return [o](runtime::context& ctx, runtime::binding& b) {
    using engine = typename Pipeline::template engine<exec::cuda>;
    runtime::trace(ctx.id(), "building the engine (" + std::to_string(o.num_envs) + " envs)");
    engine e(o.num_envs, o.seed + 1000003ull * static_cast<std::uint64_t>(ctx.rank()), o.ppo, o.env,
             exec::cuda{.stream = b.stream()});
    runtime::trace(ctx.id(), "engine built");
    serve_and_report(ctx, b, e, o.serve_seconds, o.serve_steps_per_launch, &stop_signal, 1, o.quiet);
  };
}

template <class Pipeline>
train_result serve_on_gmis(const train_config<Pipeline>& o, const runtime::gmis_config& cfg) {
  using Env = typename Pipeline::env;
  const bool launcher = !runtime::this_gmi().has_value();
  const metrics::run_info run = metrics::describe_run();
  const char* task = task_name<Env>();
  if (launcher) {
    gmi::throw_unless_ok(runtime::can_implement(cfg));  // one clear line before anything is printed or started
    std::printf("gmi: %s | serving | partition %s (%s) | %d GMIs = %zu GPU(s) x %d | %d envs per GMI | seed %llu\n",
                task, cfg.partition.c_str(), cfg.processes() ? "processes" : "threads", cfg.world(),
                cfg.gpus.size(), cfg.gmis_per_gpu, o.num_envs, static_cast<unsigned long long>(o.seed));
    std::fflush(stdout);
  }
  const auto outcome = runtime::run_gmis(cfg, serving_gmi_work<Pipeline>(o));
  if (!outcome.report) return ended_elsewhere(outcome.exit_code, false);  // a GMI process: its launcher reports
  const gmi_serving_total t = collect_serving(*outcome.report);
  if (!o.quiet) {
    for (const auto& g : t.per_gmi) {
      std::printf("  GMI %d (GPU %d, slice %d) | %s | %s steps/s\n", g.rank, g.gpu, g.slice, g.binding.c_str(),
                  metrics::si(g.steps_per_s).c_str());
    }
  }
  std::printf("gmi: total %s steps/s over %zu GMIs (%lld envs) | %s\n", metrics::si(t.steps_per_s).c_str(),
              t.per_gmi.size(), t.total_envs, sm_activity_text(t.gpm).c_str());
  if (!o.metrics_path.empty()) {
    nlohmann::json per = nlohmann::json::array();
    for (const auto& g : t.per_gmi) per.push_back(g);
    nlohmann::json line = {{"run_id", run.run_id},       {"task", task},
                           {"impl", "gmi"},              {"device", run.device},
                           {"event", "serving"},         {"layout", "serving"},
                           {"partition", cfg.partition}, {"gmi_processes", cfg.processes()},
                           {"gpus", cfg.gpus.size()},    {"gmis_per_gpu", cfg.gmis_per_gpu},
                           {"num_envs", o.num_envs},     {"seed", o.seed},
                           {"git", run.git},             {"serve_steps_per_s", t.steps_per_s},
                           {"per_gmi", per}};
    put_sm_activity(line, t.gpm);
    metrics::jsonl_log(o.metrics_path).write(line);
  }
train_result result;
  result.reason = stop_reason::served;
  result.gmis = static_cast<int>(t.per_gmi.size());
  result.rates.serve_steps_per_s = t.steps_per_s;
  result.exit_code = stop_signal.load() ? 128 + stop_signal.load() : 0;
  return result;
}

}  // namespace gmi::detail

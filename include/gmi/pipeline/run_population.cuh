#pragma once
// The population run: every GMI trains its own policy with its member's seed and settings (a seed list, or a
// sweep file); the launcher prints the members side by side (population_gmis.cuh does each GMI's part).

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/metrics/jsonl.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/pipeline/cpu_actors.hpp>
#include <gmi/pipeline/population.hpp>
#include <gmi/pipeline/population_gmis.cuh>
#include <gmi/pipeline/report.hpp>
#include <gmi/pipeline/run_lines.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/rl/ppo.cuh>
#include <gmi/rl/ppo_eval.hpp>
#include <gmi/runtime/gmis.hpp>

namespace gmi::detail {

// Population mode: every GMI of cfg trains its own policy with its member's seed and settings; the launcher
// prints the members side by side.
template <class Pipeline>
train_result population_on_gmis(const train_config<Pipeline>& o, const runtime::gmis_config& cfg) {
  using Env = typename Pipeline::env;
  using engine = typename Pipeline::template engine<exec::cuda>;
  const std::vector<population_member> members = population_from(
      o.sweep_path.empty() ? nlohmann::json() : read_sweep_file(o.sweep_path), o.ppo, o.seed, cfg.world());
  const bool launcher = !runtime::this_gmi().has_value();
  const metrics::run_info run = metrics::describe_run();
  const char* task = task_name<Env>();
  if (launcher) {
    gmi::throw_unless_ok(runtime::can_implement(cfg));
    std::printf("gmi: %s | population of %d (%s) | partition %s (%s) | %zu GPU(s) x %d GMIs | %d envs per GMI\n", task,
                cfg.world(), o.sweep_path.empty() ? "seeds from --seed on" : o.sweep_path.c_str(), cfg.partition.c_str(),
                cfg.processes() ? "processes" : "threads", cfg.gpus.size(), cfg.gmis_per_gpu, o.num_envs);
    std::fflush(stdout);
  }
  const auto outcome = runtime::run_gmis(cfg, [&](runtime::context& ctx, runtime::binding& b) {
    const population_member& m = members[static_cast<std::size_t>(ctx.rank())];
    // CPU actors (actors::on_cpu): this member's own actor cores among this host's GMIs.
    const int on_host = ctx.id().gpus * ctx.id().gmis_per_gpu, index = ctx.id().gpu_index() * ctx.id().gmis_per_gpu + ctx.slice();
    engine trainer = actors::make_gmi_engine<engine, Env>(index, on_host, o.actor_cores_per_gmi, o.num_envs, m.seed, m.ppo,
                                                          o.env, exec::cuda{.stream = b.stream(), .sm_count = b.sm_count()});
    // With --metrics, each member's own lines (its curves, seed and settings) in a file of its own.
    std::optional<member_log> lines = member_log_of<Pipeline>(o, run, task, m, ctx.rank(), cfg.world(), cfg.partition);
    // The final policy without exploration noise, on host threads after this member's clock stopped.
    const auto evaluate = [&](nlohmann::json& end) {
      if constexpr (requires { rl::evaluate_mode(trainer, 1, o.env); }) {
        const rl::eval_result ev = rl::evaluate_mode(trainer, rl::default_eval_episodes, o.env);
        end.update({{"eval_return", ev.mean_return}, {"eval_episodes", ev.episodes}, {"eval_length", ev.mean_length}});
      }
    };
    const population_result r = train_member(ctx, trainer, m, o.target_return, o.min_episodes, o.max_env_steps,
                                             o.max_seconds, lines ? &*lines : nullptr, evaluate);
    ctx.report(nlohmann::json(r).dump());
  });
  if (!outcome.report) return ended_elsewhere(outcome.exit_code, false);
  const std::vector<population_result> results = collect_population(*outcome.report);
  print_population(results);
  if (!o.metrics_path.empty()) {
    nlohmann::json per = nlohmann::json::array();
    for (const auto& r : results) per.push_back(r);
    metrics::jsonl_log(o.metrics_path)
        .write({{"run_id", run.run_id}, {"task", task}, {"impl", "gmi"}, {"device", run.device},
                {"event", "population"}, {"partition", cfg.partition}, {"gpus", cfg.gpus.size()},
                {"gmis_per_gpu", cfg.gmis_per_gpu}, {"num_envs", o.num_envs}, {"git", run.git},
                {"sweep", o.sweep_path}, {"members", per}});
  }
  train_result result;
  result.gmis = static_cast<int>(results.size());
  result.signal_number = detail::stop_signal.load();
  result.reason = result.signal_number ? stop_reason::signal : stop_reason::stopped;
  result.exit_code = exit_code_of(result.reason, result.signal_number);
  return result;
}

}  // namespace gmi::detail

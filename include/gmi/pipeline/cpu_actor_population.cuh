#pragma once
// Population mode with CPU actors on host threads (actors::on_cpu<Env>, --population --gmis-per-gpu K, --device
// host): K host GMIs, each with its own disjoint actor cores (on_cpu_cores), train their own policies with their
// member's seed and settings (population.hpp: a seed list or a sweep file), exchange nothing and stop on their own;
// the launcher prints them side by side, as the population run on GPUs does (train_member, print_population).

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/actors/cores.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/metrics/jsonl.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/pipeline/cpu_actors.hpp>
#include <gmi/pipeline/population.hpp>
#include <gmi/pipeline/population_gmis.cuh>
#include <gmi/pipeline/report.hpp>
#include <gmi/pipeline/run_lines.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/runtime/launcher.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace gmi::detail {

template <class Pipeline>
train_result population_on_cpu_gmis(const train_config<Pipeline>& o) {
  using Env = typename Pipeline::env;
  using engine = typename Pipeline::template engine<exec::host>;
  static_assert(actors::is_on_cpu<Env>, "gmi: host population members of CPU actors need actors::on_cpu<Env>");
  const int k = o.gmis_per_gpu;
  for (int r = 0; r < k; ++r) (void)actors::on_cpu_cores<Env::actor_cores>(r, k, o.actor_cores_per_gmi);
  const std::vector<population_member> members = population_from(
      o.sweep_path.empty() ? nlohmann::json() : read_sweep_file(o.sweep_path), o.ppo, o.seed, k);
  const char* task = task_name<Env>();
  const metrics::run_info run = metrics::describe_run();
  std::printf("gmi: %s | population of %d (%s) | partition cpu_cores (threads) | %d host GMIs of CPU actors | %d envs "
              "per GMI\n", task, k, o.sweep_path.empty() ? "seeds from --seed on" : o.sweep_path.c_str(), k, o.num_envs);
  std::fflush(stdout);
  runtime::launch_spec spec = runtime::launch_spec::uniform(0, k);
  spec.heartbeat_timeout = std::chrono::milliseconds(120000);  // an iteration on a loaded host may take seconds
  std::vector<population_result> results(static_cast<std::size_t>(k));
  std::vector<std::vector<int>> cores(static_cast<std::size_t>(k));
  runtime::thread_group group(std::move(spec), [&](runtime::context& ctx) {
    const population_member& m = members[static_cast<std::size_t>(ctx.rank())];
    engine trainer = actors::make_gmi_engine<engine, Env>(ctx.rank(), k, o.actor_cores_per_gmi, o.num_envs, m.seed,
                                                          m.ppo, o.env, exec::host{.threads = 1});
    cores[static_cast<std::size_t>(ctx.rank())] = trainer.cores();
    // With --metrics, each member's own lines in a file of its own (run_lines.hpp).
    std::optional<member_log> lines = member_log_of<Pipeline>(o, run, task, m, ctx.rank(), k, "cpu_cores");
    results[static_cast<std::size_t>(ctx.rank())] = train_member(ctx, trainer, m, o.target_return, o.min_episodes,
                                                                 o.max_env_steps, o.max_seconds, lines ? &*lines : nullptr);
  });
  (void)group.wait_or_throw();
  print_population(results);
  if (!o.metrics_path.empty()) {
    nlohmann::json per = nlohmann::json::array();
    for (std::size_t r = 0; r < results.size(); ++r) {
      per.push_back(results[r]);
      per.back()["actor_cores"] = cores[r];
    }
    metrics::jsonl_log(o.metrics_path)
        .write({{"run_id", run.run_id}, {"task", task}, {"impl", "gmi"}, {"device", run.device},
                {"event", "population"}, {"partition", "cpu_cores"}, {"gpus", 0}, {"gmis_per_gpu", k},
                {"actor_cores_per_gmi", o.actor_cores_per_gmi}, {"num_envs", o.num_envs}, {"git", run.git},
                {"sweep", o.sweep_path}, {"members", per}});
  }
  train_result result;
  result.gmis = k;
  result.signal_number = detail::stop_signal.load();
  result.reason = result.signal_number ? stop_reason::signal : stop_reason::stopped;
  result.exit_code = exit_code_of(result.reason, result.signal_number);
  return result;
}

}  // namespace gmi::detail

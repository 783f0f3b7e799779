#pragma once
// The split layout's run (split_gmis.cuh does each GMI's part): per GPU, slice 0 trains with V-trace, slices
// 1..k-1 serve and stream rollouts to it; with several GPUs the trainers are one data-parallel group
// (split_trainer_group.hpp). The launcher prints every GMI's line and the totals, and writes the metrics line.
// With `trial` (an autotune trial of the mapping, autotune.cuh) the launcher prints nothing and writes no metrics
// line: the totals go to *trial.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include <gmi/metrics/jsonl.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/pipeline/report.hpp>
#include <gmi/pipeline/restart.hpp>
#include <gmi/pipeline/sm_activity.hpp>
#include <gmi/pipeline/split_gmis.cuh>
#include <gmi/pipeline/split_totals.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/runtime/gmis.hpp>

namespace gmi::detail {

template <class Pipeline>
train_result split_on_gmis(const train_config<Pipeline>& o, const runtime::gmis_config& cfg_in,
                           split_total* trial = nullptr) {
  using Env = typename Pipeline::env;
  using Net = typename Pipeline::network;
  runtime::gmis_config cfg = cfg_in;
  // Under MPS the trainer (slice 0) may use every SM unless --mps-percentage sets one share for all: the serving
  // GMIs' share would make it the bottleneck (docs/training.md has the trained samples/s of both).
  if (cfg.partition == "mps" && !cfg.mps_percentage && !cfg.mps_first_slice_percentage) cfg.mps_first_slice_percentage = 100;
  gmi::require(cfg.gmis_per_gpu >= 2, "--gmis-per-gpu for layout split", cfg.gmis_per_gpu,
               ">= 2 (slice 0 trains, slices 1.. serve)");
  split_settings s;
  s.appo.ppo = o.ppo;
  s.appo.rho_bar = o.rho_bar;
  s.appo.c_bar = o.c_bar;
  s.appo.rollouts = cfg.gmis_per_gpu - 1;
  // --minibatch-scope gmi: each serving GMI's rollout brings its own --minibatch (rl_games' multi-GPU rule, as in
  // the colocated layout), so an update makes as many Adam steps as one process training on one rollout.
  if (o.minibatch_scope == scope_choice::gmi) s.appo.ppo.minibatch = o.ppo.minibatch * s.appo.rollouts;
  s.appo.replay_updates = o.learner_graph;
  s.appo.clip_against_behaviour = o.clip_against == clip_choice::behaviour;
  s.appo.normalize_before_weights = o.normalize_advantages == advantages_choice::before_rho;
  s.appo.validate();
  gmi::require(o.max_policy_lag >= 0, "--max-policy-lag", o.max_policy_lag, ">= 0 (updates)");
  s.max_policy_lag = o.max_policy_lag;
  s.channel_slots = static_cast<std::uint32_t>(o.channel_slots);
  s.num_envs = o.num_envs;
  s.seed = o.seed;
  s.limits = loop_settings::of(o);
  s.quiet = o.quiet;
  s.kill = test_kill_from_env();
  const bool launcher = !runtime::this_gmi().has_value();
  const metrics::run_info run = metrics::describe_run();
  const char* task = task_name<Env>();
  if (launcher && s.kill) {
    gmi::require(s.kill->rank < cfg.world() && s.kill->rank % cfg.gmis_per_gpu == 0, test_kill_var,
                 std::getenv(test_kill_var), "a trainer's rank (a multiple of --gmis-per-gpu) below " + std::to_string(cfg.world()));
    cfg.env.emplace_back(test_kill_var, std::getenv(test_kill_var));  // GMI processes get no GMI_* of ours unasked
  }
  if (launcher) gmi::throw_unless_ok(runtime::can_implement(cfg));
  if (launcher && !trial) {
    std::printf("gmi: %s | split (asynchronous PPO, V-trace) | partition %s (%s) | %zu GPU(s) x %d GMIs: 1 trainer + %d serving "
                "%s| %d envs per serving GMI | minibatch %d (--minibatch-scope %s) | max policy lag %d | %d channel slots | clip against %s | advantages normalized %s | seed %llu%s\n",
                task, cfg.partition.c_str(), cfg.processes() ? "processes" : "threads", cfg.gpus.size(), cfg.gmis_per_gpu,
                cfg.gmis_per_gpu - 1, cfg.gpus.size() > 1 ? "(the trainers synced over NCCL) " : "", o.num_envs, s.appo.ppo.minibatch, choice_name(o.minibatch_scope, scope_choice_names), o.max_policy_lag, o.channel_slots,
                choice_name(o.clip_against, clip_choice_names),
                o.normalize_advantages == advantages_choice::before_rho ? "before rho" : "after rho",
                static_cast<unsigned long long>(o.seed),
                cfg.mps_first_slice_percentage
                    ? (" | MPS: trainer " + std::to_string(*cfg.mps_first_slice_percentage) + "% of the SMs, serving " +
                       std::to_string(runtime::mps_config_of(cfg).percentage()) + "% each").c_str()
                    : "");
    std::fflush(stdout);
  }
  const auto outcome = runtime::run_gmis(cfg, split_gmi_work<Env, Net>(s, cfg.gmis_per_gpu, o.env));
  if (!outcome.report) return ended_elsewhere(outcome.exit_code, false);  // a GMI process: its launcher reports
  const split_total t = collect_split(*outcome.report);
  if (trial) {
    *trial = t;
    return {};
  }
  if (!o.quiet) {
    for (const auto& g : t.per_gmi) {
      const double rate = g.seconds > 0 ? g.steps / g.seconds : 0.0;
      if (g.trainer) {
        std::printf("  GMI %d (GPU %d, slice %d) trainer | %s | %s samples/s | %llu updates (%llu as one graph) | lag mean "
                    "%.2f max %llu | dropped %llu of %llu rollouts | waited %.0f%% of its time for rollouts\n",
                    g.rank, g.gpu, g.slice, g.binding.c_str(), metrics::si(rate).c_str(),
                    static_cast<unsigned long long>(g.updates), static_cast<unsigned long long>(g.replayed), g.lag_mean, static_cast<unsigned long long>(g.lag_max),
                    static_cast<unsigned long long>(g.dropped), static_cast<unsigned long long>(g.dropped + g.rollouts),
                    g.seconds > 0 ? 100.0 * g.waited / g.seconds : 0.0);
      } else {
        std::printf("  GMI %d (GPU %d, slice %d) serving | %s | %s steps/s | %llu rollouts | %llu weight versions\n",
                    g.rank, g.gpu, g.slice, g.binding.c_str(), metrics::si(rate).c_str(),
                    static_cast<unsigned long long>(g.rollouts), static_cast<unsigned long long>(g.updates));
      }
    }
  }
  std::printf("gmi: %s after %llu updates: train %s samples/s | serve %s steps/s | lag mean %.2f max %llu | dropped "
              "%llu | mean return %s\n",
              t.reason.c_str(), static_cast<unsigned long long>(t.updates), metrics::si(t.train_samples_per_s).c_str(),
              metrics::si(t.serve_steps_per_s).c_str(), t.lag_mean, static_cast<unsigned long long>(t.lag_max),
              static_cast<unsigned long long>(t.dropped),
              std::isfinite(t.mean_return) ? metrics::si(t.mean_return).c_str() : "-");
  std::printf("gmi: GPU utilization: %s, from the trainer's first update\n", sm_activity_text(t.gpm).c_str());
  if (t.trainers > 1) {
    std::printf("gmi: weights %s on every trainer (%d trainers, FNV-1a %016llx)\n",
                t.weights_identical ? "identical" : "DIFFER", t.trainers,
                static_cast<unsigned long long>(t.per_gmi.front().weights_hash));
  }
  if (!o.metrics_path.empty()) {
    nlohmann::json per = nlohmann::json::array();
    for (const auto& g : t.per_gmi) per.push_back(g);
    nlohmann::json line = gmis_end_line(run, task, "split", cfg, o);
    line.update({{"reason", t.reason},
                 {"updates", t.updates},
                 {"train_samples_per_s", t.train_samples_per_s},
                 {"serve_steps_per_s", t.serve_steps_per_s},
                 {"max_policy_lag", o.max_policy_lag},
                 {"channel_slots", o.channel_slots},
                 {"learner_graph", o.learner_graph ? "on" : "off"},
                 {"clip_against", choice_name(o.clip_against, clip_choice_names)},
                 {"normalize_advantages", choice_name(o.normalize_advantages, advantages_choice_names)},
                 {"minibatch_scope", choice_name(o.minibatch_scope, scope_choice_names)},
                 {"lag_mean", t.lag_mean},
                 {"lag_max", t.lag_max},
                 {"dropped_rollouts", t.dropped},
                 {"trainers", t.trainers},
                 {"weights_identical", t.weights_identical},
                 {"per_gmi", per},
                 {"ppo", ppo_settings_json(s.appo.ppo)}});
    if (std::isfinite(t.mean_return)) line["mean_return"] = t.mean_return;
    put_sm_activity(line, t.gpm);
    metrics::jsonl_log(o.metrics_path).write(line);
  }
  train_result result;
  result.set_reason(t.reason);
  result.gmis = static_cast<int>(t.per_gmi.size());
  result.iterations = t.updates;
  result.mean_return = t.mean_return;
  result.rates.serve_steps_per_s = t.serve_steps_per_s;
  result.rates.train_samples_per_s = t.train_samples_per_s;
  for (const auto& g : t.per_gmi) {
    if (g.trainer) result.env_steps += g.steps;
    result.wall_seconds = std::max(result.wall_seconds, g.seconds);
  }
  if (!t.weights_identical) {
    std::fprintf(stderr, "gmi: the trainers ended with different weights: the split layout's gradient sync is broken\n");
    result.exit_code = 1;
  } else {
    result.exit_code = exit_code_of(result.reason, detail::stop_signal.load());  // diverged: the trainer said why
  }
  return result;
}

}  // namespace gmi::detail

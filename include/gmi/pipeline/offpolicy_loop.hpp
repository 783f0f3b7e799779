#pragma once
// The off-policy layout's training loop over one engine (rl::sac_trainer on host threads, rl::sac_device_trainer
// on a GPU), alone or as one of a group of data-parallel learners (one per GMI, train_loop.hpp's solo_group or
// context_group): collect a step of every environment into the replay, run the gradient steps that are due (their
// gradients averaged over the group inside the engine), fold in the finished episodes, print a progress line and
// write a JSON-lines metrics line every --log-interval (rank 0: the group's env steps and wall clock beside the mean
// return, the learning-curve points), and stop when solved, at the step or time limit, on SIGINT/SIGTERM, on the
// supervisor's teardown, or when the losses stop being finite. The group decides together (train_loop.hpp's
// group_stop_check) every offpolicy_group_steps steps, so every learner stops after the same update; alone it
// decides every step. Host-compilable: run_offpolicy.cuh picks the engine.

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include <nlohmann/json.hpp>

#include <gmi/metrics/jsonl.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/pipeline/report.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/pipeline/train_loop.hpp>
#include <gmi/rl/episode_window.hpp>
#include <gmi/rl/sac_config.hpp>
#include <gmi/rl/sac_shard_layout.hpp>

namespace gmi::detail {

// The SAC settings a result line records, with the replay ratio of a learner stepping num_envs environments.
inline nlohmann::json sac_settings_json(const rl::sac_config& c, int hidden, int num_envs) {
  return {{"batch", c.batch},
          {"gamma", c.gamma},
          {"tau", c.tau},
          {"actor_lr", c.actor_lr},
          {"critic_lr", c.critic_lr},
          {"alpha_lr", c.alpha_lr},
          {"initial_alpha", c.initial_alpha},
          {"tune_alpha", c.tune_alpha},
          {"replay_capacity", c.replay_capacity},
          {"warmup_steps", c.warmup_steps},
          {"updates_per_step", c.updates_for(std::size_t(num_envs), std::size_t(num_envs)) / double(num_envs)},
          {"updates_per_vector_step", c.updates_for(std::size_t(num_envs), std::size_t(num_envs))},
          {"replay_ratio", c.replay_ratio(std::size_t(num_envs))},
          {"cuda_graph", c.cuda_graph},
          {"n_step", c.n_step},
          {"replay_shards", c.replay_shards},
          {"placement_every", c.placement_every},
          {"replay_device_mib", c.replay_device_mib ? nlohmann::json(*c.replay_device_mib) : nlohmann::json()},
          {"target_entropy", c.target_entropy ? nlohmann::json(*c.target_entropy) : nlohmann::json()},
          {"hidden", hidden}};
}

// A sharded replay's state for a metrics line: per shard its environments, memory, draws and share of all draws;
// the placement steps, moves and the budget in shards (null: none).
inline nlohmann::json shard_report_json(const rl::sac_shard_report& r) {
  std::uint64_t all = 0;
  for (const std::uint64_t d : r.drawn) all += d;
  nlohmann::json shards = nlohmann::json::array();
  for (std::size_t k = 0; k < r.memory.size(); ++k)
    shards.push_back({{"shard", k},
                      {"envs", r.envs[k]},
                      {"memory", replay::name_of(r.memory[k])},
                      {"drawn", r.drawn[k]},
                      {"drawn_share", all ? double(r.drawn[k]) / double(all) : 0.0}});
  return {{"shards", shards},
          {"placement_steps", r.placement_steps},
          {"decided_steps", r.decided_steps},
          {"moves", r.moves},
          {"device_shards", r.device_shards == std::numeric_limits<std::size_t>::max() ? nlohmann::json()
                                                                                       : nlohmann::json(r.device_shards)}};
}
// The same as a few words for the progress line: "shards device 412k, pinned_host 380k".
inline std::string shard_report_text(const rl::sac_shard_report& r) {
  std::string t = "shards";
  for (std::size_t k = 0; k < r.memory.size(); ++k)
    t += std::string(k ? ", " : " ") + (r.memory[k] == replay::shard_memory::device ? "dev " : "host ") +
         metrics::si(double(r.drawn[k]));
  return t;
}

// Alone, episodes are read at most this often: a read on the device waits for the stream.
inline constexpr double offpolicy_stats_seconds = 0.05;
// A group decides (one host allreduce of the episode statistics and votes) every this many steps.
inline constexpr std::uint64_t offpolicy_group_steps = 8;

// `who`: the GMIs the start line names (default: "K GMI(s) on <device_text>"); `layout`: the metrics' layout field.
template <class Pipeline, class Engine, class Group = solo_group>
train_result offpolicy_loop(Engine& eng, const train_config<Pipeline>& o, const std::string& device_text,
                            const char* impl, const Group& group = {}, std::string who = {},
                            const char* layout = "off_policy") {
  using Env = typename Pipeline::env;
  using Trainer = typename Pipeline::trainer;
  const metrics::run_info run = metrics::describe_run();
  const bool lead = group.rank() == 0, solo = group.world() == 1;
  const double world = group.world();
  metrics::jsonl_log log = o.metrics_path.empty() || !lead ? metrics::jsonl_log{} : metrics::jsonl_log(o.metrics_path);
  const char* task = task_name<Env>();
  if (lead) {
    if (who.empty()) who = std::to_string(group.world()) + (solo ? " GMI on " : " GMIs on ") + device_text;
    const auto n = std::size_t(o.num_envs);
    constexpr bool graphs = requires { eng.graph_updates(); };  // the device trainer (the host one has no graph)
    std::printf("gmi: %s | off-policy (SAC, replay %zu transitions%s, batch %d%s, %g updates per vector step = %g per "
                "env step, replay ratio %g%s%s) | %s | %d envs%s | seed %llu\n",
                task, o.sac.replay_capacity, solo ? "" : " per GMI", o.sac.batch, solo ? "" : " per GMI, gradients averaged",
                o.sac.updates_for(n, n), o.sac.updates_for(n, n) / double(n), o.sac.replay_ratio(n),
                o.sac.cuda_graph && solo && graphs && o.sac.replay_shards == 1 ? ", update as a CUDA graph" : "",
                o.sac.n_step > 1 ? (", " + std::to_string(o.sac.n_step) + "-step returns").c_str() : "", who.c_str(),
                o.num_envs,
                solo ? "" : " per GMI", static_cast<unsigned long long>(o.seed));
    if (o.sac.replay_shards > 1) {
      char budget[160] = "";
      if (o.sac.replay_device_mib)
        std::snprintf(budget, sizeof budget, ", device budget %g MiB (every shard in pinned host memory until the "
                      "first step)", *o.sac.replay_device_mib);
      std::printf("gmi: replay in %d shards (one a group of environments) sampled as one table; placement %s%s\n",
                  o.sac.replay_shards,
                  o.sac.placement_every ? ("every " + std::to_string(o.sac.placement_every) + " vector steps").c_str()
                                        : "off",
                  budget);
    }
    std::fflush(stdout);
  }
  nlohmann::json base = {{"run_id", run.run_id}, {"task", task},           {"impl", impl},
                         {"algo", "sac"},        {"device", run.device},  {"num_envs", o.num_envs},
                         {"seed", o.seed},       {"layout", layout},       {"git", run.git},
                         {"gmis", group.world()}, {"sac", sac_settings_json(o.sac, Trainer::hidden, o.num_envs)}};
  if (!solo) base["partition"] = o.partition;
  // The device trainer's env step path (a physics task's "warp_per_env" tile path or "thread_per_env").
  if constexpr (requires { eng.env_step_path(); }) base["env_step_path"] = std::string(eng.env_step_path());
  if (std::isfinite(o.optimal_mean_return)) base["optimal_mean_return"] = o.optimal_mean_return;
  train_result result;
  result.gmis = group.world();
  const double target = o.target_return;
  const auto t0 = std::chrono::steady_clock::now();
  const auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  double last_log = -std::numeric_limits<double>::infinity(), last_read = 0;
  group_stop_check stop(static_cast<std::uint64_t>(o.min_episodes));
  std::uint64_t steps_taken = 0;
  using update_stats = std::decay_t<decltype(eng.last_update())>;  // rl::sac_update_stats
  const auto finite = [](const update_stats& u) {
    return std::isfinite(u.critic_loss) && std::isfinite(u.actor_loss) && std::isfinite(u.alpha);
  };
  for (;;) {
    eng.step();
    ++steps_taken;
    if (!solo && steps_taken % offpolicy_group_steps != 0) continue;
    const double steps = static_cast<double>(eng.env_steps()) * world;  // the group's: every learner steps alike
    const double elapsed = seconds();
    const int sig = detail::stop_signal.load();
    const bool time_up = elapsed >= o.max_seconds, steps_up = steps >= o.max_env_steps;
    const bool vote = time_up || steps_up || sig != 0 || group.stop_requested();
    std::optional<rl::episode_stats> mine;
    if (!solo || elapsed - last_read >= offpolicy_stats_seconds || vote) {
      mine = eng.read_stats();
      last_read = elapsed;
    }
    const bool log_due = lead && elapsed - last_log >= o.log_interval;
    // The look at the losses waits for the queued updates on the device: alone at log times and at the stop; in a
    // group at every decision (its gradient sums wait on the host anyway).
    std::optional<update_stats> u;
    if (!solo || log_due || vote) u = eng.last_update();
    const bool stop_now = stop(group, mine, vote, target, steps, u && !finite(*u));
    if (!(log_due || stop_now)) continue;
    if (!u) u = eng.last_update();
    const double now = seconds();
    const double last_mean = stop.window.last_mean().value_or(std::numeric_limits<double>::quiet_NaN());
    const double updates = static_cast<double>(eng.updates());
    const auto mean_json = [](double m) { return std::isfinite(m) ? nlohmann::json(m) : nlohmann::json(); };
    if (lead) {
      std::optional<rl::sac_shard_report> shards;
      if constexpr (requires { eng.replay_shards(); }) shards = eng.replay_shards();
      if (!o.quiet) {
        std::printf("step %6llu | steps %s | updates %s | env %s steps/s | return %s | critic %.4g | actor %.4g | "
                    "alpha %.3g%s%s | %s\n",
                    static_cast<unsigned long long>(steps_taken), metrics::si(steps).c_str(), metrics::si(updates).c_str(),
                    metrics::si(steps / now).c_str(), std::isfinite(last_mean) ? metrics::si(last_mean).c_str() : "-",
                    u->critic_loss, u->actor_loss, u->alpha, shards ? " | " : "",
                    shards ? shard_report_text(*shards).c_str() : "", metrics::clock_text(now).c_str());
        std::fflush(stdout);
      }
      nlohmann::json line = base;
      line.update({{"env_steps", steps},           {"wall_s", now},
                   {"updates", eng.updates()},     {"mean_return", mean_json(last_mean)},
                   {"critic_loss", u->critic_loss}, {"actor_loss", u->actor_loss},
                   {"alpha", u->alpha},            {"env_steps_per_s", steps / now},
                   {"updates_per_s", updates / now}});
      if (shards) line["replay"] = shard_report_json(*shards);
      log.write(line);
      last_log = now;
    }
    result.iterations = steps_taken;
    result.env_steps = steps;
    result.wall_seconds = now;
    result.mean_return = last_mean;
    result.curve = stop.curve.points();
    result.rates.train_samples_per_s = updates * double(o.sac.batch) * world / now;
    if (stop.diverged) {
      if (lead) {
        nlohmann::json end = base;
        end.update({{"event", "end"}, {"reason", "diverged"}, {"env_steps", steps}, {"wall_s", now},
                    {"curve", stop.curve.points()}});
        log.write(end);
        std::fprintf(stderr, "gmi: training diverged by %s env steps: critic loss %g, actor loss %g, alpha %g (try smaller "
                             "learning rates or --sac-max-grad-norm)%s\n",
                     metrics::si(steps).c_str(), u->critic_loss, u->actor_loss, u->alpha,
                     solo ? "" : "; the group stops");
      }
      result.reason = stop_reason::diverged;
      result.exit_code = 1;
      return result;
    }
    if (!stop_now) continue;
    // Another learner's vote (its clock) may stop the group before this one's limit: a time limit all the same.
    const bool other_vote = !vote && !stop.solved;
    result.reason = first_stop_reason({.solved = stop.solved, .signal = sig, .time_up = time_up || other_vote,
                                       .steps_up = steps_up});
    result.signal_number = sig;
    result.exit_code = sig ? 128 + sig : 0;
    const std::string reason = result.reason_text();
    // The deterministic policy (tanh of the mean) on fresh environments, seeded apart from training; the
    // learners' weights are equal, so rank 0 evaluates for the group.
    const double eval = o.sac_eval_episodes > 0 && lead ? eng.evaluate(o.sac_eval_episodes, o.seed + 0x5EED)
                                                        : std::numeric_limits<double>::quiet_NaN();
    result.eval_return = eval;
    if (!lead) return result;
    nlohmann::json end = base;
    end.update({{"event", "end"}, {"reason", reason}, {"env_steps", steps}, {"wall_s", now},
                {"updates", eng.updates()}, {"mean_return", mean_json(last_mean)},
                {"env_steps_per_s", steps / now}, {"updates_per_s", updates / now},
                {"eval_return", mean_json(eval)}, {"eval_episodes", o.sac_eval_episodes},
                {"curve", stop.curve.points()}});
    if constexpr (requires { eng.graph_updates(); }) end["graph_updates"] = eng.graph_updates();
    if constexpr (requires { eng.replay_shards(); })
      if (const auto shards = eng.replay_shards()) end["replay"] = shard_report_json(*shards);
    if constexpr (requires { eng.global_draws(); }) {
      if (eng.sync().global()) {
        const auto& g = eng.global_draws();
        end["global_sampling"] = {{"drawn", g.drawn}, {"expected", g.expected}, {"updates", g.updates},
                                  {"empty_updates", g.empty_updates}};
        std::printf("gmi: global sampling: learner 0 drew %.0f of the group's draws (its tables' share: %.1f), "
                    "no draws in %llu of %llu updates\n", g.drawn, g.expected,
                    static_cast<unsigned long long>(g.empty_updates), static_cast<unsigned long long>(g.updates));
      }
    }
    log.write(end);
    std::printf("gmi: %s after %s env steps in %.2f s (mean return %s, target %s)\n", reason.c_str(),
                metrics::si(steps).c_str(), now, return_text(last_mean, o).c_str(),
                std::isfinite(target) ? metrics::si(target).c_str() : "none");
    if (o.sac_eval_episodes > 0) {
      std::printf("gmi: deterministic policy: mean return %s over %d fresh episodes\n", return_text(eval, o).c_str(),
                  o.sac_eval_episodes);
    }
    if constexpr (requires { eng.graph_updates(); }) {
      if (o.sac.cuda_graph && solo && o.sac.replay_shards == 1)
        std::printf("gmi: %llu of %llu updates replayed as one CUDA graph each\n",
                    static_cast<unsigned long long>(eng.graph_updates()), static_cast<unsigned long long>(eng.updates()));
    }
    std::fflush(stdout);
    return result;
  }
}

}  // namespace gmi::detail

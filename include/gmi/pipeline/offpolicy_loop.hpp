#pragma once
// The off-policy layout's training loop over one engine (rl::sac_trainer on host threads, rl::sac_device_trainer
// on a GPU): collect a step of every environment into the replay, run the gradient steps that are due, fold in the
// finished episodes, print a progress line and write a JSON-lines metrics line every --log-interval (env steps and
// wall clock beside the mean return: the learning-curve points), and stop when solved, at the step or time limit,
// on SIGINT/SIGTERM, or when the losses stop being finite. Host-compilable: run_offpolicy.cuh picks the engine.

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include <gmi/metrics/jsonl.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/pipeline/report.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/rl/episode_window.hpp>
#include <gmi/rl/sac_config.hpp>

namespace gmi::detail {

// The SAC settings a result line records.
inline nlohmann::json sac_settings_json(const rl::sac_config& c, int hidden) {
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
          {"updates_per_step", c.updates_per_step},
          {"hidden", hidden}};
}

// Episodes are read at most this often: a read on the device waits for the stream.
inline constexpr double offpolicy_stats_seconds = 0.05;

template <class Pipeline, class Engine>
train_result offpolicy_loop(Engine& eng, const train_config<Pipeline>& o, const std::string& device_text,
                            const char* impl) {
  using Env = typename Pipeline::env;
  using Trainer = typename Pipeline::trainer;
  const metrics::run_info run = metrics::describe_run();
  metrics::jsonl_log log = o.metrics_path.empty() ? metrics::jsonl_log{} : metrics::jsonl_log(o.metrics_path);
  const char* task = task_name<Env>();
  std::printf("gmi: %s | off-policy (SAC, replay %zu transitions, batch %d, %g updates per env step) | 1 GMI on %s | "
              "%d envs | seed %llu\n",
              task, o.sac.replay_capacity, o.sac.batch, double(o.sac.updates_per_step), device_text.c_str(),
              o.num_envs, static_cast<unsigned long long>(o.seed));
  nlohmann::json base = {{"run_id", run.run_id}, {"task", task},           {"impl", impl},
                         {"algo", "sac"},        {"device", run.device},  {"num_envs", o.num_envs},
                         {"seed", o.seed},       {"layout", "off_policy"}, {"git", run.git},
                         {"sac", sac_settings_json(o.sac, Trainer::hidden)}};
  if (std::isfinite(o.optimal_mean_return)) base["optimal_mean_return"] = o.optimal_mean_return;
  train_result result;
  const double target = o.target_return;
  const auto t0 = std::chrono::steady_clock::now();
  const auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  double last_log = -std::numeric_limits<double>::infinity(), last_read = 0;
  rl::episode_window window(static_cast<std::uint64_t>(o.min_episodes));
  rl::learning_curve curve;
  bool solved = false;
  std::uint64_t steps_taken = 0;
  for (;;) {
    eng.step();
    ++steps_taken;
    const double steps = static_cast<double>(eng.env_steps());
    const double elapsed = seconds();
    const bool limit = steps >= o.max_env_steps || elapsed >= o.max_seconds;
    const int sig = detail::stop_signal.load();
    if (elapsed - last_read >= offpolicy_stats_seconds || limit || sig) {
      if (const auto mean = window.add(eng.read_stats())) {
        solved = std::isfinite(target) && *mean >= target;
        curve.add(steps, *mean);
      }
      last_read = elapsed;
    }
    if (!(elapsed - last_log >= o.log_interval || limit || sig || solved)) continue;
    const auto u = eng.last_update();  // waits for the queued updates on the device
    const double now = seconds();
    const double last_mean = window.last_mean().value_or(std::numeric_limits<double>::quiet_NaN());
    const bool finite = std::isfinite(u.critic_loss) && std::isfinite(u.actor_loss) && std::isfinite(u.alpha);
    if (!o.quiet) {
      std::printf("step %6llu | steps %s | updates %s | env %s steps/s | return %s | critic %.4g | actor %.4g | "
                  "alpha %.3g | %s\n",
                  static_cast<unsigned long long>(steps_taken), metrics::si(steps).c_str(),
                  metrics::si(double(eng.updates())).c_str(), metrics::si(steps / now).c_str(),
                  std::isfinite(last_mean) ? metrics::si(last_mean).c_str() : "-", u.critic_loss, u.actor_loss,
                  u.alpha, metrics::clock_text(now).c_str());
      std::fflush(stdout);
    }
    const auto mean_json = [](double m) { return std::isfinite(m) ? nlohmann::json(m) : nlohmann::json(); };
    nlohmann::json line = base;
    line.update({{"env_steps", steps},          {"wall_s", now},
                 {"updates", eng.updates()},    {"mean_return", mean_json(last_mean)},
                 {"critic_loss", u.critic_loss}, {"actor_loss", u.actor_loss},
                 {"alpha", u.alpha},            {"env_steps_per_s", steps / now}});
    log.write(line);
    last_log = now;
    result.iterations = steps_taken;
    result.env_steps = steps;
    result.wall_seconds = now;
    result.mean_return = last_mean;
    result.curve = curve.points();
    result.rates.train_samples_per_s = double(eng.updates()) * double(o.sac.batch) / now;
    if (!finite) {
      nlohmann::json end = base;
      end.update({{"event", "end"}, {"reason", "diverged"}, {"env_steps", steps}, {"wall_s", now},
                  {"curve", curve.points()}});
      log.write(end);
      std::fprintf(stderr, "gmi: training diverged by %s env steps: critic loss %g, actor loss %g, alpha %g (try smaller "
                           "learning rates or --sac-max-grad-norm)\n",
                   metrics::si(steps).c_str(), u.critic_loss, u.actor_loss, u.alpha);
      result.reason = stop_reason::diverged;
      result.exit_code = 1;
      return result;
    }
    if (!(solved || limit || sig)) continue;
    result.reason = solved ? stop_reason::solved
                    : sig  ? stop_reason::signal
                    : elapsed >= o.max_seconds ? stop_reason::time_limit
                                               : stop_reason::step_limit;
    result.signal_number = sig;
    result.exit_code = sig ? 128 + sig : 0;
    const std::string reason = result.reason_text();
    // The deterministic policy (tanh of the mean) on fresh environments, seeded apart from training.
    const double eval = o.sac_eval_episodes > 0 ? eng.evaluate(o.sac_eval_episodes, o.seed + 0x5EED)
                                                : std::numeric_limits<double>::quiet_NaN();
    nlohmann::json end = base;
    end.update({{"event", "end"}, {"reason", reason}, {"env_steps", steps}, {"wall_s", now},
                {"updates", eng.updates()}, {"mean_return", mean_json(last_mean)},
                {"eval_return", mean_json(eval)}, {"eval_episodes", o.sac_eval_episodes},
                {"curve", curve.points()}});
    log.write(end);
    std::printf("gmi: %s after %s env steps in %.2f s (mean return %s, target %s)\n", reason.c_str(),
                metrics::si(steps).c_str(), now, return_text(last_mean, o).c_str(),
                std::isfinite(target) ? metrics::si(target).c_str() : "none");
    if (o.sac_eval_episodes > 0) {
      std::printf("gmi: deterministic policy: mean return %s over %d fresh episodes\n", return_text(eval, o).c_str(),
                  o.sac_eval_episodes);
    }
    result.eval_return = eval;
    return result;
  }
}

}  // namespace gmi::detail

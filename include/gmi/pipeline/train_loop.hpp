#pragma once
// The one training loop of every synchronous layout: one GMI alone (run_one_gmi.cuh) is a group of one, the
// colocated layout (run_colocated.cuh) a group of every GMI. Each iteration: iterate, the caller's per-iteration
// hook; every 5 iterations (a round) the episode statistics asked for 5 iterations ago are folded in and asked
// for again (the device is 5 iterations ahead, so this wait costs it nothing). At a decision (every round; every
// iteration for a group of one, which decides without a collective) the group agrees on whether to stop: the
// solved window, the step and time limits, SIGINT/SIGTERM, the supervisor's teardown and non-finite loss terms
// (rank 0 looks at them at each log time, before each save and when it votes to stop). Saves happen at decisions, the first at or after
// each multiple of checkpoint_every, and at the stop, never with non-finite loss terms. Host syncs: the round's
// statistics wait, rank 0's look at the loss terms at log times, and one synchronize at the first round.
// Env steps count from iteration 0 in every layout, a resumed checkpoint's included: --max-env-steps is the
// training's budget in total, and a run resumed at or past it ends before its first iteration (resumed_past_limit).

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gmi/io/checkpoint.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/pipeline/run_options.hpp>
#include <gmi/pipeline/sm_activity.hpp>
#include <gmi/pipeline/stop_reason.hpp>
#include <gmi/rl/episode_window.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/runtime/context.hpp>

namespace gmi::detail {

// One GMI alone: its own numbers are the group's, nothing to exchange; inside a run over GMIs (a population
// member) it also stops when the supervisor tears the run down.
struct solo_group {
  const runtime::context* ctx = nullptr;
  [[nodiscard]] static int rank() noexcept { return 0; }
  [[nodiscard]] static int world() noexcept { return 1; }
  static void sum(std::span<double>) noexcept {}
  [[nodiscard]] bool stop_requested() const noexcept { return ctx && ctx->stop_requested(); }
};

// The GMIs of a synchronous group, agreeing through their runtime::context's host allreduce.
struct context_group {
  runtime::context& ctx;
  [[nodiscard]] int rank() const noexcept { return ctx.rank(); }
  [[nodiscard]] int world() const noexcept { return ctx.world(); }
  void sum(std::span<double> v) const { ctx.allreduce(v, ctx.all()); }
  [[nodiscard]] bool stop_requested() const noexcept { return ctx.stop_requested(); }
};

// The group's stop decision: every GMI's episode statistics, stop vote and divergence summed over the group, so
// every GMI decides the same; the window and the learning curve are the group's.
struct group_stop_check {
  rl::episode_window window;
  bool solved = false;
  bool diverged = false;  // some GMI saw non-finite loss terms
  bool returns_not_finite = false;  // a window of finished episodes summed to a non-finite return
  rl::learning_curve curve{128};  // (group env steps, mean return) whenever the window gives a mean
  // (seconds since the loop began, mean return) at the same points, kept with the same stride: the wall-clock
  // curve at the resolution of the statistics (every round), not of the log interval, and no host read more.
  rl::learning_curve wall_curve{128};

  explicit group_stop_check(std::uint64_t min_episodes = 32) : window(min_episodes) {}

  // Returns true when the group stops now; `vote` is this GMI's own reason to stop; `steps`: the group's env
  // steps that the statistics cover (for the curve).
  template <class Group>
  bool operator()(const Group& group, const std::optional<rl::episode_stats>& mine, bool vote, double target,
                  double steps, bool diverged_here = false,
                  double seconds = std::numeric_limits<double>::quiet_NaN()) {
    double v[5] = {mine ? static_cast<double>(mine->episodes) : 0.0, mine ? mine->return_sum : 0.0,
                   mine ? mine->length_sum : 0.0, vote ? 1.0 : 0.0, diverged_here ? 1.0 : 0.0};
    group.sum(std::span<double>(v));
    rl::episode_stats all;
    all.episodes = static_cast<std::uint64_t>(v[0]);
    all.return_sum = v[1];
    all.length_sum = v[2];
    if (all.episodes > 0) {
      returns_not_finite = returns_not_finite || !std::isfinite(all.return_sum);
      if (const auto mean = window.add(all)) {
        solved = std::isfinite(target) && *mean >= target;
        curve.add(steps, *mean);
        if (std::isfinite(seconds)) wall_curve.add(seconds, *mean);
      }
    }
    diverged = diverged || v[4] > 0;
    return solved || v[3] > 0 || diverged;
  }
};

// Why a diverged run's loss terms may have turned non-finite when the trainer can tell: the environment's own
// rewards (an episode's running return, `*env.returns` in the trainer's state, or a finished episode's) are not
// finite, so the task's step() returned a nan or infinite reward; "" when nothing points at the environment.
inline std::string env_reward_not_finite(const io::checkpoint* state, bool finished_returns_not_finite) {
  if (state) {
    for (const auto& t : state->tensors()) {
      const std::string_view name = t.name;
      if (!name.ends_with("env.returns") || t.type != io::dtype::f32) continue;
      const std::vector<float> v = state->get<float>(t.name);
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (!std::isfinite(v[i])) {
          return "the environment returned a non-finite reward (environment " + std::to_string(i) +
                 "'s episode return is " + (std::isnan(v[i]) ? "nan" : "inf") + ": check the task's step())";
        }
      }
    }
  }
  if (finished_returns_not_finite)
    return "the environment returned a non-finite reward (a finished episode's return is not finite: check the "
           "task's step())";
  return "";
}

struct loop_settings {
  double max_env_steps = 0, max_seconds = 0, target_return = 0, log_interval = 1;
  int checkpoint_every = 0;  // 0: saves only at the stop
  int min_episodes = 32;
  // A group decides (and logs) every iteration, as a GMI alone does: host GMIs, whose sum is a host allreduce.
  bool decide_every_iteration = false;

  // The limits, target, log interval and checkpoint period a run's options ask for.
  [[nodiscard]] static loop_settings of(const run_options& o) {
    loop_settings s;
    s.max_env_steps = o.max_env_steps;
    s.max_seconds = o.max_seconds;
    s.target_return = o.target_return;
    s.log_interval = o.log_interval;
    s.checkpoint_every = o.checkpoint_every;
    s.min_episodes = o.min_episodes;
    return s;
  }
};

// What the progress hook sees (rank 0, at each log time and at the stop).
struct loop_view {
  std::uint64_t iteration = 0;
  // steps: the group's env steps since training began (a resumed checkpoint's included); run_steps: those of this
  // run (since the loop began), which `seconds` took
  double steps = 0, run_steps = 0, seconds = 0, mean_return = 0;
  std::optional<double> mean_length;
  rl::ppo_losses losses;
};

struct loop_end {
  stop_reason reason = stop_reason::stopped;
  int signal_number = 0;
  std::uint64_t iterations = 0, resumed_at = 0;  // the last iteration; the one the loop began at
  double steps = 0, run_steps = 0, seconds = 0;  // as loop_view's
  double mean_return = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::array<double, 2>> curve;  // (env steps, mean return), at most 128 points
  // (seconds since `started`, mean return) at the same points: when each mean reached the host, which is after
  // the device had its statistics (so never early)
  std::vector<std::array<double, 2>> wall_curve;
  std::optional<rl::ppo_losses> losses;  // rank 0's last look (the non-finite ones when diverged)
  std::string diverged_cause;  // rank 0, diverged: env_reward_not_finite's sentence ("" when it cannot tell)
  // From the first round on (module loading and graph capture left out): when, at which iteration.
  std::optional<std::pair<std::chrono::steady_clock::time_point, std::uint64_t>> warm;
  std::chrono::steady_clock::time_point started;  // when the loop began
  double decide_seconds = 0;  // spent in the group's stop decisions (host syncs between GMIs)

  // Whether this run trained (false: resumed at or past its step limit, nothing to train or evaluate).
  [[nodiscard]] bool trained() const noexcept { return iterations > resumed_at; }
  // This run's samples per second (0 when it took no time: a run resumed at its limit).
  [[nodiscard]] double rate() const noexcept { return seconds > 0 ? run_steps / seconds : 0.0; }
  // Samples per second from the first round on (NaN when the run ended before it); `per_iteration`: samples.
  [[nodiscard]] double warm_rate(double per_iteration, std::chrono::steady_clock::time_point end) const {
    if (!warm || iterations <= warm->second) return std::numeric_limits<double>::quiet_NaN();
    return static_cast<double>(iterations - warm->second) * per_iteration /
           std::chrono::duration<double>(end - warm->first).count();
  }
};

// A run resumed at or past its step limit (`e`: where it resumed) has nothing to train: true, with the stop reason
// set and one line from rank 0, and the loop ends before its first iteration (no save: the checkpoint is the state).
// Every GMI of a group resumed at the same iteration, so all decide the same without a collective.
inline bool resumed_past_limit(loop_end& e, const loop_settings& s, int rank) {
  if (e.resumed_at == 0 || e.steps < s.max_env_steps) return false;
  e.reason = stop_reason::step_limit;
  if (rank == 0) {
    std::printf("gmi: nothing to train: resumed at iteration %llu, %.0f env steps, at or past --max-env-steps %.0f "
                "(need a limit above %.0f: it counts env steps since training began, the checkpoint's included)\n",
                static_cast<unsigned long long>(e.resumed_at), e.steps, s.max_env_steps, e.steps);
    std::fflush(stdout);
  }
  return true;
}

// Runs `trainer` until the group stops. after_iterate(): after every iteration (heartbeats, hooks);
// progress(const loop_view&): rank 0 at each log time and at the stop; save(): at due decisions and the stop.
template <class Trainer, class Group, class AfterIterate, class Progress, class Save>
loop_end train_loop(Trainer& trainer, const Group& group, const loop_settings& s, sm_activity_window& gpm,
                    AfterIterate&& after_iterate, Progress&& progress, Save&& save) {
  using clock = std::chrono::steady_clock;
  const bool every_iteration = group.world() == 1 || s.decide_every_iteration;
  const double per_iteration = static_cast<double>(trainer.samples_per_iteration()) * group.world();
  group_stop_check stop(static_cast<std::uint64_t>(s.min_episodes));
  loop_end out;
  std::uint64_t last_saved = trainer.iteration();
  const std::uint64_t every = static_cast<std::uint64_t>(std::max(0, s.checkpoint_every));
  const auto t0 = clock::now();
  out.started = t0;
  const auto seconds = [&] { return std::chrono::duration<double>(clock::now() - t0).count(); };
  double last_log = -std::numeric_limits<double>::infinity();  // the first line at the first decision
  const auto steps_at = [&](std::uint64_t it) { return static_cast<double>(it) * per_iteration; };
  const std::uint64_t began = trainer.iteration();  // 0, or where a resumed run's checkpoint was
  const double began_steps = steps_at(began);
  out.resumed_at = out.iterations = began;
  out.steps = began_steps;
  if (resumed_past_limit(out, s, group.rank())) return out;
  for (;;) {
    trainer.iterate();
    after_iterate();
    const std::uint64_t it = trainer.iteration();
    const bool round = it % 5 == 0;
    if (!round && !every_iteration) continue;
    std::optional<rl::episode_stats> mine;
    if (round) {
      if (!out.warm) {
        trainer.synchronize();
        out.warm.emplace(clock::now(), it);
        gpm.start();
      }
      mine = trainer.wait_episodes();
      trainer.request_episodes();
    }
    const double steps = steps_at(it);
    const double elapsed = seconds();
    const int sig = stop_signal.load();
    const bool time_up = elapsed >= s.max_seconds, steps_up = steps >= s.max_env_steps;
    const bool vote = sig != 0 || time_up || steps_up || group.stop_requested();
    const bool save_due = every > 0 && it / every > last_saved / every;
    const bool log_due = elapsed - last_log >= s.log_interval;
    std::optional<rl::ppo_losses> looked;
    // Rank 0 looks at the loss terms at log times, before saves and when it votes to stop (so a run that reaches
    // its limit with non-finite terms ends diverged, unsaved); the look waits for the queued iterations.
    if (group.rank() == 0 && (log_due || save_due || vote)) looked = trainer.losses();
    const auto voting = clock::now();
    // the statistics were asked for 5 iterations ago: the curve point is at the steps up to then
    bool stop_now = stop(group, mine, vote, s.target_return, steps - 5.0 * per_iteration, looked && !looked->finite(),
                         elapsed);
    if (stop_now && !stop.solved && !stop.diverged) {
      // The last iterations' episodes too (the pending request, then one for the rest), so the final mean
      // return covers the end of the run rather than lagging it by up to 10 iterations.
      const auto fold = [&](double at) {
        const auto e = trainer.wait_episodes();
        (void)stop(group, e, false, s.target_return, at, false, seconds());
      };
      fold(steps_at(it - it % 5));
      trainer.request_episodes();
      fold(steps);
    }
    out.decide_seconds += std::chrono::duration<double>(clock::now() - voting).count();
    double now = seconds();  // before any save: the run's rate leaves the checkpoint out
    if (group.rank() == 0 && (log_due || stop_now)) {
      if (!looked) looked = trainer.losses();
      now = seconds();
      progress(loop_view{.iteration = it, .steps = steps, .run_steps = steps - began_steps, .seconds = now,
                         .mean_return = stop.window.last_mean().value_or(std::numeric_limits<double>::quiet_NaN()),
                         .mean_length = stop.window.last_length(), .losses = *looked});
      last_log = now;
    }
    if (stop.diverged && group.rank() == 0) {
      std::optional<io::checkpoint> state;  // the environments' running returns, read once, only here
      if constexpr (requires { trainer.save_state(); }) state.emplace(trainer.save_state());
      out.diverged_cause = env_reward_not_finite(state ? &*state : nullptr, stop.returns_not_finite);
      std::fprintf(stderr, "gmi: training diverged by iteration %llu (%s env steps): %s%s%s; %s without saving%s\n",
                   static_cast<unsigned long long>(it), metrics::si(steps).c_str(), out.diverged_cause.c_str(),
                   out.diverged_cause.empty() ? "" : "; ",
                   looked && !looked->finite() ? looked->not_finite().c_str() : "loss terms not finite",
                   group.world() == 1 ? "stopped" : "the group stops",
                   out.diverged_cause.empty() ? " (try a smaller --lr or --max-grad-norm)" : "");
    }
    if (!stop.diverged && (stop_now || save_due)) {
      save();
      last_saved = it;
    }
    if (stop_now) {
      out.reason = first_stop_reason({.diverged = stop.diverged, .solved = stop.solved, .signal = sig,
                                      .time_up = time_up, .steps_up = steps_up});
      out.signal_number = sig;
      out.iterations = it;
      out.run_steps = steps - began_steps;
      out.steps = steps;
      out.seconds = now;
      out.mean_return = stop.window.last_mean().value_or(std::numeric_limits<double>::quiet_NaN());
      out.curve = stop.curve.points();
      out.wall_curve = stop.wall_curve.points();
      out.losses = looked;
      return out;
    }
  }
}

}  // namespace gmi::detail

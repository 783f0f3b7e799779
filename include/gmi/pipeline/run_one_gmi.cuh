#pragma once
// One GMI on one device (a GPU, or host threads): measures the env-step and serving tiers on engines of their own,
// then trains with a progress line and JSON-lines metrics (the first at the first iteration), stops when solved,
// at the step or time limit, on SIGINT/SIGTERM or when the loss terms stop being finite, and returns what it
// reached (gmi::train_result) with the final weights.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include <gmi/cuda/nvml.hpp>
#include <gmi/io/gmi_file.hpp>
#include <gmi/io/safetensors.hpp>
#include <gmi/metrics/jsonl.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/pipeline/report.hpp>
#include <gmi/pipeline/sm_activity.hpp>
#include <gmi/pipeline/tiers.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/rl/env_batch.cuh>
#include <gmi/rl/episode_window.hpp>
#include <gmi/rl/policy_server.cuh>
#include <gmi/rl/ppo.cuh>

namespace gmi::detail {

template <class Pipeline, class Policy>
train_result train_one_gmi(const train_config<Pipeline>& o, const Policy& policy, const std::string& device_text) {
  using Env = typename Pipeline::env;
  using engine = typename Pipeline::template engine<Policy>;
  const metrics::run_info run = metrics::describe_run();
  metrics::jsonl_log log = o.metrics_path.empty() ? metrics::jsonl_log{} : metrics::jsonl_log(o.metrics_path);
  const char* task = task_name<Env>();
  std::printf("gmi: %s | %s | partition %s | 1 GMI on %s | %d envs | seed %llu\n", task,
              Pipeline::layout_type::name, o.partition.c_str(), device_text.c_str(), o.num_envs,
              static_cast<unsigned long long>(o.seed));

  // The two lower tiers are measured on engines of their own, so the training run starts from the seed's state.
  const double tier_seconds = Pipeline::layout_type::trains ? 0.3 : o.serve_seconds;
  const double env_rate = measure_env_tier<Env>(o.num_envs, o.seed, o.env, policy, tier_seconds);
  const double serve_rate = [&] {
    engine tier(o.num_envs, o.seed, o.ppo, o.env, policy);
    return measure_serve_tier(tier, o.serve_steps_per_launch, tier_seconds);
  }();
  train_result result;
  result.rates.env_steps_per_s = env_rate;
  result.rates.serve_steps_per_s = serve_rate;
  nlohmann::json base = {{"run_id", run.run_id}, {"task", task},          {"impl", "gmi"},
                         {"device", run.device}, {"num_envs", o.num_envs}, {"seed", o.seed},
                         {"layout", Pipeline::layout_type::name}, {"partition", o.partition},
                         {"git", run.git}, {"ppo", ppo_settings_json(o.ppo)}};
  if (std::isfinite(o.optimal_mean_return)) base["optimal_mean_return"] = o.optimal_mean_return;
  if constexpr (Policy::on_device && Pipeline::layout_type::trains) {
    base["minibatch_gradient"] = rl::minibatch_gradient_name<typename Pipeline::network>(o.ppo.network);
    base["collection"] = rl::collection_path_name<typename Pipeline::network>(o.ppo.network);
  }
  if constexpr (requires { typename Pipeline::network::net::layers; }) base["network"] = network_text<Pipeline>();
  std::printf("gmi: env-step %s steps/s | serving %s steps/s (policy + sampling + env)\n", metrics::si(env_rate).c_str(),
              metrics::si(serve_rate).c_str());
  if constexpr (!Pipeline::layout_type::trains) {
    nlohmann::json line = base;
    line.update({{"event", "serving"}, {"env_steps_per_s", env_rate}, {"serve_steps_per_s", serve_rate}});
    log.write(line);
    result.reason = stop_reason::served;
    result.weights = engine(o.num_envs, o.seed, o.ppo, o.env, policy).policy_tensors();  // the weights served
    return result;
  } else {
    engine trainer(o.num_envs, o.seed, o.ppo, o.env, policy);
    std::uint64_t resumed_at = 0;
    if (!o.resume_path.empty()) {
      trainer.load_state(io::load(o.resume_path));
      resumed_at = trainer.iteration();
      std::printf("gmi: resumed from %s at iteration %llu\n", o.resume_path.c_str(),
                  static_cast<unsigned long long>(resumed_at));
    }
    auto save_checkpoint = [&] {
      if (o.checkpoint_path.empty()) return;
      io::checkpoint ck = trainer.save_state();
      ck.meta["git"] = run.git;
      ck.meta["run_id"] = run.run_id;
      io::save(ck, o.checkpoint_path);
      io::export_safetensors(trainer.policy_tensors(), o.checkpoint_path + ".safetensors");
      if (!o.quiet) {
        std::printf("gmi: checkpoint %s (+ .safetensors) at iteration %llu\n", o.checkpoint_path.c_str(),
                    static_cast<unsigned long long>(trainer.iteration()));
      }
    };
    const double target = o.target_return;
    const auto t0 = std::chrono::steady_clock::now();
    double last_log = -std::numeric_limits<double>::infinity();  // the first line at the first iteration
    rl::episode_window window(static_cast<std::uint64_t>(o.min_episodes));
    bool solved = false;
    rl::learning_curve curve;  // (env steps, mean return) whenever the window gives a mean
    // From iteration 5 on (module loading and graph capture left out): samples/s and, on a GPU, its GPM figure.
    std::optional<std::pair<std::chrono::steady_clock::time_point, std::uint64_t>> warm;
    int nvml_index = -1;
    if constexpr (Policy::on_device) {
      if (auto idx = cuda::nvml::index_of_cuda_device(o.gpu)) nvml_index = *idx;
    }
    sm_activity_window gpm(0, nvml_index);
    // Non-finite loss terms: the end line, one line naming them, exit 1; the diverged weights are not saved.
    const auto diverged = [&](const rl::ppo_losses& losses, double steps) {
      const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      nlohmann::json end = base;
      end.update({{"event", "end"}, {"reason", "diverged"}, {"iteration", trainer.iteration()},
                  {"env_steps", steps}, {"wall_s", now}, {"curve", curve.points()}});
      log.write(end);
      std::fprintf(stderr, "gmi: training diverged by iteration %llu (%s env steps): %s; stopped without saving "
                           "(try a smaller --lr or --max-grad-norm)\n",
                   static_cast<unsigned long long>(trainer.iteration()), metrics::si(steps).c_str(),
                   losses.not_finite().c_str());
      result.reason = stop_reason::diverged;
      result.exit_code = 1;
      result.iterations = trainer.iteration();
      result.env_steps = steps;
      result.wall_seconds = now;
      result.curve = curve.points();
      return result;
    };
    for (;;) {
      trainer.iterate();
      if (o.checkpoint_every > 0 && trainer.iteration() % static_cast<std::uint64_t>(o.checkpoint_every) == 0) {
        // A save waits for the queued work anyway: the loss terms are looked at first, so no save holds nan.
        const auto losses = trainer.losses();
        if (!losses.finite()) {
          return diverged(losses, static_cast<double>(trainer.iteration() - resumed_at) * trainer.samples_per_iteration());
        }
        save_checkpoint();
      }
      // Every 5 iterations: fold in the statistics asked for 5 iterations ago (the device is busy with the 5
      // queued since, so this wait costs it nothing and keeps the host at most 10 iterations ahead), ask again.
      if (trainer.iteration() % 5 == 0) {
        if (!warm) {
          trainer.synchronize();
          warm.emplace(std::chrono::steady_clock::now(), trainer.iteration());
          gpm.start();
        }
        if (const auto e = trainer.wait_episodes()) {
          if (const auto mean = window.add(*e)) {
            solved = std::isfinite(target) && *mean >= target;
            // the episodes of the request 5 iterations ago: the steps up to then
            curve.add(static_cast<double>(trainer.iteration() - 5 - resumed_at) * trainer.samples_per_iteration(), *mean);
          }
        }
        trainer.request_episodes();
      }
      const double steps = static_cast<double>(trainer.iteration() - resumed_at) * trainer.samples_per_iteration();
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const bool limit = steps >= o.max_env_steps || elapsed >= o.max_seconds;
      const int sig = detail::stop_signal.load();
      if (limit && !solved) {
        // The last iterations' episodes too (the pending request, then one for the rest), so the final mean
        // return covers the end of the run rather than lagging it by up to 10 iterations.
        const double asked = static_cast<double>(trainer.iteration() - trainer.iteration() % 5);
        const double asked_at = std::max(0.0, asked - static_cast<double>(resumed_at)) * trainer.samples_per_iteration();
        const auto fold = [&](double at) {
          if (const auto e = trainer.wait_episodes()) {
            if (const auto mean = window.add(*e)) {
              solved = std::isfinite(target) && *mean >= target;
              curve.add(at, *mean);
            }
          }
        };
        fold(asked_at);
        trainer.request_episodes();
        fold(steps);
      }
      if (elapsed - last_log >= o.log_interval || limit || sig || solved) {
        const auto losses = trainer.losses();  // waits for the queued iterations
        const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double last_mean = window.last_mean().value_or(std::numeric_limits<double>::quiet_NaN());
        if (window.last_length()) base["mean_length"] = *window.last_length();
        const double rate = steps / now;
        const double eta = metrics::eta_seconds(steps, o.max_env_steps, now);
        if (!o.quiet) {
          std::printf("iter %6llu | steps %s | env %s/s | serve %s/s | train %s samples/s | return %s | kl %.4f | lr %.1e | %s | ETA %s\n",
                      static_cast<unsigned long long>(trainer.iteration()), metrics::si(steps).c_str(),
                      metrics::si(env_rate).c_str(), metrics::si(serve_rate).c_str(), metrics::si(rate).c_str(),
                      std::isfinite(last_mean) ? metrics::si(last_mean).c_str() : "-", losses.approx_kl,
                      losses.learning_rate, metrics::clock_text(now).c_str(), metrics::clock_text(eta).c_str());
          std::fflush(stdout);
        }
        nlohmann::json line = base;
        line.update({{"iteration", trainer.iteration()},
                     {"env_steps", steps},
                     {"wall_s", now},
                     {"env_steps_per_s", env_rate},
                     {"serve_steps_per_s", serve_rate},
                     {"train_samples_per_s", rate},
                     {"mean_return", std::isfinite(last_mean) ? nlohmann::json(last_mean) : nlohmann::json()},
                     {"policy_loss", losses.policy_loss},
                     {"value_loss", losses.value_loss},
                     {"entropy", losses.entropy},
                     {"approx_kl", losses.approx_kl},
                     {"clip_fraction", losses.clip_fraction},
                     {"learning_rate", losses.learning_rate}});
        log.write(line);
        last_log = now;
        if (!losses.finite()) return diverged(losses, steps);
        if (solved || limit || sig) {
          result.reason = solved ? stop_reason::solved
                          : sig  ? stop_reason::signal
                          : elapsed >= o.max_seconds ? stop_reason::time_limit
                                                     : stop_reason::step_limit;
          result.signal_number = sig;
          const std::string reason = result.reason_text();
          nlohmann::json end = base;
          end.update({{"event", "end"}, {"reason", reason}, {"iteration", trainer.iteration()},
                      {"env_steps", steps}, {"wall_s", now}, {"mean_return", std::isfinite(last_mean) ? nlohmann::json(last_mean) : nlohmann::json()},
                      {"train_samples_per_s", rate}, {"curve", curve.points()}});
          if (warm && trainer.iteration() > warm->second) {
            const double warm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - warm->first).count();
            end["warm_samples_per_s"] = static_cast<double>(trainer.iteration() - warm->second) *
                                        trainer.samples_per_iteration() / warm_s;
          }
          const sm_activity util = gpm.finish();
          put_sm_activity(end, util);
          log.write(end);
          save_checkpoint();
          std::printf("gmi: %s after %s env steps in %.2f s (mean return %s, target %s)\n", reason.c_str(),
                      metrics::si(steps).c_str(), now, return_text(last_mean, o).c_str(),
                      std::isfinite(target) ? metrics::si(target).c_str() : "none");
          if constexpr (Policy::on_device) std::printf("gmi: GPU utilization: %s, from iteration 5\n", sm_activity_text(util).c_str());
          result.exit_code = sig ? 128 + sig : 0;
          result.iterations = trainer.iteration();
          result.env_steps = steps;
          result.wall_seconds = now;
          result.mean_return = last_mean;
          result.curve = curve.points();
          result.rates.train_samples_per_s = rate;
          result.weights = trainer.policy_tensors();
          return result;
        }
      }
    }
  }
}

}  // namespace gmi::detail

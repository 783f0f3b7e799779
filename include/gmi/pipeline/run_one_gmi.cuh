#pragma once
// One GMI on one device (a GPU, or host threads): measures the env-step and serving tiers on engines of their own,
// then trains in train_loop.hpp's loop as a group of one, with a progress line and JSON-lines metrics at each log
// time, and returns what it reached (gmi::train_result) with the final weights.

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
#include <gmi/pipeline/cpu_actors.hpp>
#include <gmi/pipeline/report.hpp>
#include <gmi/pipeline/run_lines.hpp>
#include <gmi/pipeline/sm_activity.hpp>
#include <gmi/pipeline/tiers.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/pipeline/train_loop.hpp>
#include <gmi/rl/env_batch.cuh>
#include <gmi/rl/episode_window.hpp>
#include <gmi/rl/policy_server.cuh>
#include <gmi/rl/ppo.cuh>
#include <gmi/rl/ppo_eval.hpp>

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
    engine tier = actors::make_gmi_engine<engine, Env>(0, 1, o.actor_cores_per_gmi, o.num_envs, o.seed, o.ppo, o.env, policy);
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
    engine trainer = actors::make_gmi_engine<engine, Env>(0, 1, o.actor_cores_per_gmi, o.num_envs, o.seed, o.ppo, o.env, policy);
    if constexpr (Policy::on_device && requires { trainer.collection_name(); }) base["collection"] = trainer.collection_name();
    if (!o.resume_path.empty()) {  // env steps count on from the checkpoint's (train_loop.hpp)
      trainer.load_state(io::load(o.resume_path));
      std::printf("gmi: resumed from %s at iteration %llu\n", o.resume_path.c_str(),
                  static_cast<unsigned long long>(trainer.iteration()));
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
    const loop_settings ls = loop_settings::of(o);
    int nvml_index = -1;
    if constexpr (Policy::on_device) {
      if (auto idx = cuda::nvml::index_of_cuda_device(o.gpu)) nvml_index = *idx;
    }
    sm_activity_window gpm(0, nvml_index);  // GPU utilization from the first round on
    // A progress line and a JSON line at each log time (the first at the first iteration).
    const auto progress = [&](const loop_view& v) {
      const double rate = v.run_steps / v.seconds;  // this run's: a resumed checkpoint's steps took none of it
      if (!o.quiet) {
        std::printf("iter %6llu | steps %s | env %s/s | serve %s/s | train %s samples/s | return %s | kl %.4f | lr %.1e | %s | ETA %s\n",
                    static_cast<unsigned long long>(v.iteration), metrics::si(v.steps).c_str(),
                    metrics::si(env_rate).c_str(), metrics::si(serve_rate).c_str(), metrics::si(rate).c_str(),
                    std::isfinite(v.mean_return) ? metrics::si(v.mean_return).c_str() : "-", v.losses.approx_kl,
                    v.losses.learning_rate, metrics::clock_text(v.seconds).c_str(),
                    metrics::clock_text(metrics::eta_seconds(v.steps, o.max_env_steps, v.seconds, v.steps - v.run_steps,
                                                             o.max_seconds)).c_str());
        std::fflush(stdout);
      }
      if (v.mean_length) base["mean_length"] = *v.mean_length;
      nlohmann::json line = base;
      line.update(progress_fields(v));
      line.update({{"env_steps_per_s", env_rate}, {"serve_steps_per_s", serve_rate}});
      log.write(line);
    };
    const loop_end e = train_loop(trainer, solo_group{}, ls, gpm, [] {}, progress, save_checkpoint);
    const auto ended = std::chrono::steady_clock::now();
    const double rate = e.rate();
    const std::string reason = stop_reason_text(e.reason, e.signal_number);
    nlohmann::json end = base;
    end.update(end_fields(e, reason));
    result.reason = e.reason;
    result.signal_number = e.signal_number;
    result.exit_code = exit_code_of(e.reason, e.signal_number);
    result.iterations = e.iterations;
    result.env_steps = e.steps;
    result.wall_seconds = e.seconds;
    result.curve = e.curve;
    if (e.reason == stop_reason::diverged) {  // the end line, the line naming the terms (train_loop's); no weights
      log.write(end);
      return result;
    }
    end.update({{"mean_return", std::isfinite(e.mean_return) ? nlohmann::json(e.mean_return) : nlohmann::json()},
                {"train_samples_per_s", rate}});
    // The final policy without exploration noise, on host threads after the clock stopped (when it trained).
    if constexpr (requires { rl::evaluate_mode(trainer, 1, o.env); }) {
      if (e.trained()) {
        const rl::eval_result ev = rl::evaluate_mode(trainer, rl::default_eval_episodes, o.env);
        result.eval_return = ev.mean_return;
        end.update({{"eval_return", ev.mean_return}, {"eval_episodes", ev.episodes}, {"eval_length", ev.mean_length}});
      }
    }
    if (const double warm = e.warm_rate(trainer.samples_per_iteration(), ended); std::isfinite(warm)) {
      end["warm_samples_per_s"] = warm;
    }
    const sm_activity util = gpm.finish();
    put_sm_activity(end, util);
    log.write(end);
    std::printf("gmi: %s after %s env steps in %.2f s (mean return %s, target %s)\n", reason.c_str(),
                metrics::si(e.steps).c_str(), e.seconds, return_text(e.mean_return, o).c_str(),
                std::isfinite(o.target_return) ? metrics::si(o.target_return).c_str() : "none");
    if (std::isfinite(result.eval_return)) {
      std::printf("gmi: deterministic evaluation: mean return %s over %d episodes\n",
                  return_text(result.eval_return, o).c_str(), rl::default_eval_episodes);
    }
    if constexpr (Policy::on_device) std::printf("gmi: GPU utilization: %s, from iteration 5\n", sm_activity_text(util).c_str());
    result.mean_return = e.mean_return;
    result.rates.train_samples_per_s = rate;
    result.weights = trainer.policy_tensors();
    return result;
  }
}

}  // namespace gmi::detail

#pragma once
// gmi::run<Pipeline>(argc, argv): the launcher a user's main() returns. Reads flags, picks the device (a GPU when
// present, host threads otherwise, or as told), measures the env-step and serving tiers once, then trains (or
// serves) with a progress line, JSON-lines metrics, stops when solved or at the step limit, and leaves cleanly
// on SIGINT/SIGTERM. With several GMIs (--gmis-per-gpu, --gpus) or a partition (--partition), the serving
// layout runs on every GMI of every GPU through runtime::run_gmis and reports per-GMI and total throughput.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <concepts>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gmi/cuda/device.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/registry.hpp>
#include <gmi/exec/cuda.cuh>
#include <gmi/metrics/jsonl.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/cuda/nvml.hpp>
#include <gmi/pipeline/autotune.cuh>
#include <gmi/comm/shm_segment.hpp>
#include <gmi/pipeline/pipeline.hpp>
#include <gmi/pipeline/run_options.hpp>
#include <gmi/pipeline/colocated_gmis.cuh>
#include <gmi/pipeline/gmis_checkpoint.hpp>
#include <gmi/pipeline/restart.hpp>
#include <gmi/pipeline/population_gmis.cuh>
#include <gmi/pipeline/serving_gmis.hpp>
#include <gmi/pipeline/sm_activity.hpp>
#include <gmi/pipeline/split_gmis.cuh>
#include <gmi/rl/env_batch.cuh>
#include <gmi/rl/episode_window.hpp>
#include <gmi/rl/ppo.cuh>
#include <gmi/runtime/crash_report.hpp>
#include <gmi/runtime/flags.hpp>
#include <gmi/runtime/gmis.hpp>
#include <gmi/trainers/ppo.hpp>

namespace gmi {


namespace detail {

// The task's best reachable mean episode return, where it is known (gmi::env's optional optimal_mean_return).
template <class Env>
std::optional<double> optimal_mean_return() {
  if constexpr (requires(const typename Env::params& p) {
                  { Env::optimal_mean_return(p) } -> std::convertible_to<double>;
                }) {
    return Env::optimal_mean_return(typename Env::params{});
  } else {
    return std::nullopt;
  }
}

// "-36.2" or, where the task's optimum is known, "-36.2 (1.10x the optimum -32.9)".
inline std::string return_text(double mean, const run_options& o) {
  if (!std::isfinite(mean)) return "-";
  std::string t = metrics::si(mean);
  if (std::isfinite(o.optimal_mean_return) && o.optimal_mean_return != 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " (%.2fx the optimum %s)", mean / o.optimal_mean_return,
                  metrics::si(o.optimal_mean_return).c_str());
    t += buf;
  }
  return t;
}

// The fields every end line of a run over GMIs starts with (bench/plot and the runs/ files read them).
inline nlohmann::json gmis_end_line(const metrics::run_info& run, const char* task, const char* layout,
                                    const runtime::gmis_config& cfg, const run_options& o) {
  nlohmann::json j = {{"run_id", run.run_id},     {"task", task},
                      {"impl", "gmi"},            {"device", run.device},
                      {"event", "end"},           {"layout", layout},
                      {"partition", cfg.partition}, {"gmi_processes", cfg.processes()},
                      {"gpus", cfg.gpus.size()},  {"gmis_per_gpu", cfg.gmis_per_gpu},
                      {"num_envs", o.num_envs},   {"seed", o.seed},
                      {"git", run.git}};
  if (std::isfinite(o.optimal_mean_return)) j["optimal_mean_return"] = o.optimal_mean_return;
  if (cfg.partition == "mps") {  // the active-thread percentages the GMIs ran with
    const gmi::partition::mps::config m = runtime::detail::mps_config_of(cfg);
    j["mps_percentage"] = m.percentage();
    if (m.first_slice_percentage) j["mps_first_slice_percentage"] = *m.first_slice_percentage;
  }
  return j;
}

template <class Env>
constexpr int default_num_envs() {
  if constexpr (requires { Env::name; }) return envs::paper_num_envs<Env>();
  else return 512;
}
template <class Env>
constexpr double default_target_return() {
  if constexpr (requires { Env::solved_return; }) return Env::solved_return;
  else return std::numeric_limits<double>::quiet_NaN();
}

struct random_actions_fn {
  float* actions;
  std::uint64_t seed;
  std::uint64_t round;
  GMI_HD void operator()(std::size_t k) const {
    gmi::rng r(seed, k, round);
    actions[k] = r.uniform(-1.0f, 1.0f);
  }
};

// Env-step tier: every environment stepped with uniform random actions in [-1, 1], no policy.
template <class Env, class Policy>
double measure_env_tier(int num_envs, std::uint64_t seed, const Policy& policy, double seconds) {
  rl::env_batch<Env, Policy> envs(num_envs, seed ^ 0xE5E5ull, typename Env::params{}, policy);
  using array = typename rl::env_batch<Env, Policy>::template span<float>;
  const std::size_t n = static_cast<std::size_t>(num_envs);
  auto make = [&](std::size_t count) {
    if constexpr (Policy::on_device) return cuda::device_buffer<float>(count);
    else return std::vector<float>(count);
  };
  auto actions = make(n * Env::act_dim), obs = make(n * Env::obs_dim), rewards = make(n);
  auto make_u8 = [&]() {
    if constexpr (Policy::on_device) return cuda::device_buffer<std::uint8_t>(n);
    else return std::vector<std::uint8_t>(n);
  };
  auto term = make_u8(), trunc = make_u8();
  CUstream_st* stream = nullptr;
  if constexpr (Policy::on_device) stream = policy.stream;
  using span_u8 = typename rl::env_batch<Env, Policy>::template span<std::uint8_t>;
  using span_cf = typename rl::env_batch<Env, Policy>::template span<const float>;
  envs.reset(array(obs.data(), obs.size()), stream);
  auto step_batch = [&](std::uint64_t round) {
    exec::for_each(policy, actions.size(), random_actions_fn{actions.data(), seed, round});
    envs.step(span_cf(actions.data(), actions.size()), array(obs.data(), obs.size()),
              array(rewards.data(), rewards.size()), span_u8(term.data(), n), span_u8(trunc.data(), n), stream);
  };
  for (int k = 0; k < 10; ++k) step_batch(k);
  exec::synchronize(policy);
  std::uint64_t steps = 0, round = 10;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int k = 0; k < 50; ++k) step_batch(round++);
    exec::synchronize(policy);
    steps += 50;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return static_cast<double>(steps) * num_envs / elapsed;
}

// Serving tier: policy inference + sampling + env step, nothing stored.
template <class Trainer>
double measure_serve_tier(Trainer& t, int steps_per_launch, double seconds) {
  t.serve(steps_per_launch);
  t.synchronize();
  std::uint64_t steps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int k = 0; k < 4; ++k) t.serve(steps_per_launch);
    t.synchronize();
    steps += 4ull * steps_per_launch;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return static_cast<double>(steps) * t.num_envs() / elapsed;
}

// How a GPU trainer of this pipeline forms its minibatch gradients (rl/ppo.cuh's minibatch_gradient; GMI_PPO_GRADIENT
// may ask for another way), for the result lines.
template <class Pipeline>
const char* minibatch_gradient_name() {
  return rl::detail::gradient_path_name(rl::detail::minibatch_gradient<typename Pipeline::network>::chosen_path());
}

// The network's layer widths, e.g. "60-256-128-64-9" (inputs, hidden layers, the heads' outputs), for result lines.
template <class Pipeline>
std::string network_text() {
  using shape = typename Pipeline::network::net::layers;
  std::string t;
  for (int l = 0; l <= shape::count; ++l) t += (l ? "-" : "") + std::to_string(shape::width(l));
  return t;
}

template <class Pipeline, class Policy>
int run_with(const run_options& o, const Policy& policy, const std::string& device_text) {
  using Env = typename Pipeline::env;
  using engine = typename Pipeline::template engine<Policy>;
  const metrics::run_info run = metrics::describe_run();
  metrics::jsonl_log log = o.metrics_path.empty() ? metrics::jsonl_log{} : metrics::jsonl_log(o.metrics_path);
  const char* task = [] {
    if constexpr (requires { Env::name; }) return static_cast<const char*>(Env::name);
    else return "custom";
  }();
  std::printf("gmi: %s | %s | partition %s | 1 GMI on %s | %d envs | seed %llu\n", task,
              Pipeline::layout_type::name, o.partition.c_str(), device_text.c_str(), o.num_envs,
              static_cast<unsigned long long>(o.seed));

  // The two lower tiers are measured on engines of their own, so the training run starts from the seed's state.
  const double tier_seconds = Pipeline::layout_type::trains ? 0.3 : o.serve_seconds;
  const double env_rate = measure_env_tier<Env>(o.num_envs, o.seed, policy, tier_seconds);
  const double serve_rate = [&] {
    engine tier(o.num_envs, o.seed, o.ppo, typename Env::params{}, policy);
    return measure_serve_tier(tier, o.serve_steps_per_launch, tier_seconds);
  }();
  engine trainer(o.num_envs, o.seed, o.ppo, typename Env::params{}, policy);
  std::uint64_t resumed_at = 0;
  if (!o.resume_path.empty()) {
    trainer.load_state(rl::load(o.resume_path));
    resumed_at = trainer.iteration();
    std::printf("gmi: resumed from %s at iteration %llu\n", o.resume_path.c_str(),
                static_cast<unsigned long long>(resumed_at));
  }
  auto save_checkpoint = [&] {
    if (o.checkpoint_path.empty()) return;
    rl::checkpoint ck = trainer.save_state();
    ck.meta["git"] = run.git;
    ck.meta["run_id"] = run.run_id;
    rl::save(ck, o.checkpoint_path);
    rl::export_safetensors(trainer.policy_tensors(), o.checkpoint_path + ".safetensors");
    if (!o.quiet) {
      std::printf("gmi: checkpoint %s (+ .safetensors) at iteration %llu\n", o.checkpoint_path.c_str(),
                  static_cast<unsigned long long>(trainer.iteration()));
    }
  };
  nlohmann::json base = {{"run_id", run.run_id}, {"task", task},          {"impl", "gmi"},
                         {"device", run.device}, {"num_envs", o.num_envs}, {"seed", o.seed},
                         {"layout", Pipeline::layout_type::name}, {"partition", o.partition},
                         {"git", run.git}, {"ppo", ppo_settings_json(o.ppo)}};
  if (std::isfinite(o.optimal_mean_return)) base["optimal_mean_return"] = o.optimal_mean_return;
  if constexpr (Policy::on_device && Pipeline::layout_type::trains) base["minibatch_gradient"] = minibatch_gradient_name<Pipeline>();
  if constexpr (requires { typename Pipeline::network::net::layers; }) base["network"] = network_text<Pipeline>();
  std::printf("gmi: env-step %s steps/s | serving %s steps/s (policy + sampling + env)\n", metrics::si(env_rate).c_str(),
              metrics::si(serve_rate).c_str());
  if constexpr (!Pipeline::layout_type::trains) {
    nlohmann::json line = base;
    line.update({{"event", "serving"}, {"env_steps_per_s", env_rate}, {"serve_steps_per_s", serve_rate}});
    log.write(line);
    return 0;
  } else {
    const double target = o.target_return;
    const auto t0 = std::chrono::steady_clock::now();
    double last_log = 0;
    rl::episode_window window(static_cast<std::uint64_t>(o.min_episodes));
    bool solved = false;
    rl::learning_curve curve;  // (env steps, mean return) whenever the window gives a mean
    std::string stop_reason = "step limit";
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
      return 1;
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
      const int sig = stop_signal.load();
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
          if (solved) stop_reason = "solved";
          else if (sig) stop_reason = std::string("signal ") + std::to_string(sig);
          else if (elapsed >= o.max_seconds) stop_reason = "time limit";
          nlohmann::json end = base;
          end.update({{"event", "end"}, {"reason", stop_reason}, {"iteration", trainer.iteration()},
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
          std::printf("gmi: %s after %s env steps in %.2f s (mean return %s, target %s)\n", stop_reason.c_str(),
                      metrics::si(steps).c_str(), now, return_text(last_mean, o).c_str(),
                      std::isfinite(target) ? metrics::si(target).c_str() : "none");
          if constexpr (Policy::on_device) std::printf("gmi: GPU utilization: %s, from iteration 5\n", sm_activity_text(util).c_str());
          return sig ? 128 + sig : 0;
        }
      }
    }
  }
}

template <class Env>
const char* task_name() {
  if constexpr (requires { Env::name; }) return static_cast<const char*>(Env::name);
  else return "custom";
}

// The GPUs a run uses: --gpus N from --gpu on, or every visible one.
inline std::vector<int> chosen_gpus(const run_options& o, int visible) {
  int count = 0;
  if (o.gpus == "all") {
    count = visible - o.gpu;
  } else {
    try {
      std::size_t used = 0;
      count = std::stoi(o.gpus, &used);
      if (used != o.gpus.size()) count = 0;
    } catch (const std::exception&) {
      count = 0;
    }
    gmi::require(count >= 1, "--gpus", o.gpus, "a positive count or \"all\"");
  }
  gmi::require(o.gpu + count <= visible, "--gpu + --gpus", std::to_string(o.gpu) + " + " + std::to_string(count),
               "<= " + std::to_string(visible) + " (visible CUDA devices)");
  std::vector<int> out;
  for (int g = 0; g < count; ++g) out.push_back(o.gpu + g);
  return out;
}

// The serving layout on every GMI of every GPU (or, in a GMI process, this GMI's part of it).
// The colocated layout on every GMI of cfg: synchronous data-parallel PPO (colocated_gmis.cuh). Every GMI
// trains on its own environments (seed + rank); rank 0's initial weights start the group; rank 0 prints the
// progress of the group; the launcher prints the total and checks that every GMI holds the same weights.
// --checkpoint saves every GMI at the same group step (gmis_checkpoint.hpp); --resume restores every GMI;
// --restart-on-failure makes the launcher a loop of attempts (restart.hpp).
// With `trial` (an autotune trial, pipeline/autotune.cuh) the launcher prints nothing and writes no metrics line:
// the totals go to *trial, and GMIs ending with different weights are an error.
template <class Pipeline>
int train_on_gmis(const run_options& o, const runtime::gmis_config& cfg_in, gmi_training_total* trial) {
  using Env = typename Pipeline::env;
  using engine = typename Pipeline::template engine<exec::cuda>;
  runtime::gmis_config cfg = cfg_in;  // the launcher adds the restart loop's variables for GMI processes
  if constexpr (!Pipeline::comm_type::reduces) {
    throw gmi::config_error(gmi::got_need("communicator for layout colocated over " + std::to_string(cfg.world()) + " GMIs",
                                          Pipeline::comm_type::name,
                                          "one that reduces gradients: gmi::comm::hierarchical<gmi::comm::nccl> in the "
                                          "pipeline type"));
  }
  // --minibatch-scope (run_options.hpp): the group's minibatch split over the GMIs, or each GMI's own.
  rl::ppo_config per_gmi = o.ppo;
  if (o.minibatch_scope == "group") per_gmi.minibatch = std::max(1, (o.ppo.minibatch + cfg.world() - 1) / cfg.world());
  // What a step averages (a GMI's minibatch is capped at its rollout, horizon x envs), for the start line.
  const long long gmi_minibatch = std::min<long long>(per_gmi.minibatch, static_cast<long long>(o.ppo.horizon) * o.num_envs);
  const long long group_minibatch = gmi_minibatch * cfg.world();
  const bool launcher = !runtime::this_gmi().has_value();
  // An attempt of a restart loop resumes where its parent says; otherwise from --resume.
  const char* attempt_resume = std::getenv(restart_resume_var);
  const std::string resume = is_restart_attempt() ? std::string(attempt_resume ? attempt_resume : "") : o.resume_path;
  const std::optional<kill_at> kill = test_kill_from_env();
  const double group_samples = static_cast<double>(o.num_envs) * o.ppo.horizon * cfg.world();
  if (launcher) {
    gmi::throw_unless_ok(runtime::can_implement(cfg));
    if (kill) gmi::require(kill->rank < cfg.world(), test_kill_var, std::getenv(test_kill_var), "a rank below " + std::to_string(cfg.world()));
    if (!resume.empty()) (void)manifest_for_resume(resume, cfg.world(), o.num_envs);  // one line before anything starts
    if (o.restart_on_failure > 0 && !is_restart_attempt()) {
      restart_loop_config rc;
      rc.restarts = o.restart_on_failure;
      rc.checkpoint_path = o.checkpoint_path;
      rc.first_resume = o.resume_path;
      rc.first_iteration = o.resume_path.empty() ? 0 : read_manifest(o.resume_path).iteration;
      rc.samples_per_iteration = group_samples;
      rc.attempt_bound = std::chrono::seconds(static_cast<long long>(std::min(o.max_seconds, 1e7)) + 600);
      rc.last_checkpoint = [&](std::optional<std::uint64_t> saved, std::string& why) -> std::optional<std::uint64_t> {
        if (!saved) {
          why = "no checkpoint saved in this run yet";
          return std::nullopt;
        }
        const auto m = last_complete_checkpoint(o.checkpoint_path, &why);
        if (m && m->iteration >= *saved && m->world == cfg.world()) return m->iteration;
        if (m) why = "the manifest at " + o.checkpoint_path + " is not the one this run saved";
        return std::nullopt;
      };
      rc.prune = [&] {
        const auto m = last_complete_checkpoint(o.checkpoint_path);
        remove_unreferenced(o.checkpoint_path, m ? &*m : nullptr);
      };
      rc.stop_signal = &stop_signal;
      std::printf("gmi: --restart-on-failure %d: each attempt runs as a child process; a lost GMI group restarts from "
                  "the last checkpoint at %s\n", o.restart_on_failure, o.checkpoint_path.c_str());
      std::fflush(stdout);
      return run_with_restarts(rc);
    }
    // GMI processes get their environment from the launcher (GMI_* of ours are not passed on): the attempt's
    // place in a restart loop and the test hook go along explicitly.
    for (const char* var : {restart_attempt_var, restart_fd_var, restart_resume_var, test_kill_var}) {
      if (const char* v = std::getenv(var)) cfg.env.emplace_back(var, v);
    }
  }
  const std::optional<restart_status> status = restart_status::from_env();
  const metrics::run_info run = metrics::describe_run();
  const char* task = task_name<Env>();
  if (launcher && !trial) {
    std::printf("gmi: %s | colocated (synchronous PPO) | partition %s (%s) | %d GMIs = %zu GPU(s) x %d | %d envs per "
                "GMI | minibatch %lld per GMI (%lld for the group, --minibatch-scope %s) | gradients %s | seed %llu\n",
                task, cfg.partition.c_str(), cfg.processes() ? "processes" : "threads", cfg.world(), cfg.gpus.size(),
                cfg.gmis_per_gpu, o.num_envs, gmi_minibatch, group_minibatch, o.minibatch_scope.c_str(),
                o.gradient_allreduce == "cpu_staged" ? "cpu_staged (host shared memory)" : o.gradient_allreduce.c_str(),
                static_cast<unsigned long long>(o.seed));
    std::fflush(stdout);
  }
  const runtime::gmi_work work = [&](runtime::context& ctx, runtime::binding& b) {
    runtime::trace(ctx.id(), "building the trainer");
    engine trainer(o.num_envs, o.seed + 1000003ull * static_cast<std::uint64_t>(ctx.rank()), per_gmi,
                   typename Env::params{}, exec::cuda{.stream = b.stream(), .sm_count = b.sm_count()});
    // Room for every GMI's rollout statistics in the exchanged row (32 Cartpole GMIs need 1440 floats, the row
    // is 1289), so the fused update gathers them in its kernels instead of through the host every iteration.
    // Before a resume too: a resumed trainer is past iteration 0, and the buffer holds no state a checkpoint keeps.
    trainer.widen_gradient_buffer(engine::gradient_words_for(ctx.world()));
    std::uint64_t start_iteration = 0;
    if (!resume.empty()) {  // each GMI from its own file, before set_sync (Adam and normalizers must agree)
      start_iteration = resume_gmi(ctx, trainer, resume);
      if (ctx.rank() == 0) {
        std::printf("gmi: resumed from %s at iteration %llu (%d GMIs)\n", resume.c_str(),
                    static_cast<unsigned long long>(start_iteration), ctx.world());
        std::fflush(stdout);
      }
    }
    const auto grads = trainer.gradient_buffer();
    gmi_gradient_sync sync(ctx, b, cfg, grads.data(), grads.size(), o.gradient_allreduce, o.synced_update,
                           o.comm_clock);
    const graph_released_first<engine> release_graph_first{trainer, ctx.timeout()};
    if (ctx.rank() == 0 && o.gradient_allreduce == "automatic" && !o.quiet) {
      std::printf("gmi: gradients %s\n", sync.description().c_str());
      std::fflush(stdout);
    }
    trainer.set_sync(sync.hook());  // rank 0's weights to every GMI
    if (ctx.rank() == 0 && !o.quiet && o.synced_update != "eager" && !sync.graph_update()) {
      std::printf("gmi: the update runs eagerly (kernel by kernel): the gradient sum (%s) waits on the host between "
                  "kernels\n", sync.description().c_str());
      std::fflush(stdout);
    }
    runtime::trace(ctx.id(), "trainer synced");
    const bool printer = ctx.rank() == 0 && !o.quiet;
    const double world = ctx.world();
    if (status && ctx.rank() == 0) {
      status->block().start_iteration.store(start_iteration);
      status->block().iteration.store(start_iteration);
      status->block().started_ns.store(steady_ns());
    }
    // Saves happen at group steps (every 5 iterations), so every GMI saves the same iteration: the first group
    // step at or after each multiple of --checkpoint-every, and the last one.
    std::uint64_t last_saved = start_iteration;
    const auto save = [&] {
      if (o.checkpoint_path.empty() || trainer.iteration() == last_saved) return;
      gmis_manifest base;
      base.gmis_per_gpu = cfg.gmis_per_gpu;
      base.gpus = ctx.world() / cfg.gmis_per_gpu;
      base.num_envs = trainer.num_envs();
      base.env_steps = static_cast<double>(trainer.iteration()) * trainer.samples_per_iteration() * world;
      base.task = task;
      base.run_id = run.run_id;
      base.git = run.git;
      const auto m = save_gmis_checkpoint(ctx, trainer, o.checkpoint_path, base, {{"git", run.git}, {"run_id", run.run_id}});
      last_saved = trainer.iteration();
      if (!m) return;
      rl::export_safetensors(trainer.policy_tensors(), o.checkpoint_path + ".safetensors");
      if (status) {
        status->block().checkpoint_ns.store(steady_ns());
        status->block().checkpoint_plus_1.store(m->iteration + 1);
      }
      if (!o.quiet) {
        std::printf("gmi: checkpoint %s (manifest + %d GMI files, + .safetensors) at iteration %llu\n",
                    o.checkpoint_path.c_str(), m->world, static_cast<unsigned long long>(m->iteration));
        std::fflush(stdout);
      }
    };
    group_stop_check stop;
    std::string reason = "step limit";
    // The communication clock's readings when the run starts (the automatic choice's timed sums left out).
    const double comm0 = sync.comm_seconds(b.stream()), host_sync0 = sync.host_sync_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    double last_log = 0;
    std::optional<std::pair<std::chrono::steady_clock::time_point, std::uint64_t>> warm;  // the first group step
    sm_activity_window gpm(ctx.slice(), b.nvml_index());  // GPU utilization from the first group step on
    for (;;) {
      trainer.iterate();
      ctx.heartbeat();
      if (status && ctx.rank() == 0) status->block().iteration.store(trainer.iteration(), std::memory_order_relaxed);
      if (kill && kill->rank == ctx.rank() && trainer.iteration() == kill->iteration) {
        const std::string line = ctx.id().describe() + " killed by the test hook " + test_kill_var + "=" +
                                 std::getenv(test_kill_var) + " after iteration " + std::to_string(kill->iteration);
        if (status) status->set_note(line);
        std::fprintf(stderr, "gmi: %s\n", line.c_str());
        std::fflush(stderr);
        ::raise(SIGKILL);
      }
      if (trainer.iteration() % 5 != 0) continue;
      // Every 5 iterations: the statistics asked for 5 iterations ago, then the group's decision.
      const auto mine = trainer.wait_episodes();
      if (!warm) {
        warm.emplace(std::chrono::steady_clock::now(), trainer.iteration());
        gpm.start();
      }
      trainer.request_episodes();
      const double steps = static_cast<double>(trainer.iteration()) * trainer.samples_per_iteration() * world;
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const int sig = stop_signal.load();
      const bool vote = sig != 0 || elapsed >= o.max_seconds || ctx.stop_requested();
      // the episodes were asked for 5 iterations ago: the curve point is at the steps up to then
      const double seen = steps - 5.0 * static_cast<double>(trainer.samples_per_iteration()) * world;
      // Rank 0 looks at the loss terms at each log time; non-finite ones stop the whole group in this same round,
      // before any save (every GMI holds the same weights, so one look is enough).
      // It also looks before a periodic save, so no save holds nan.
      const std::uint64_t every = static_cast<std::uint64_t>(std::max(0, o.checkpoint_every));
      const bool save_due = every > 0 && trainer.iteration() / every > last_saved / every;
      std::optional<rl::ppo_losses> looked;
      if (ctx.rank() == 0 && (elapsed - last_log >= o.log_interval || save_due)) looked = trainer.losses();
      const auto voted = std::chrono::steady_clock::now();
      const bool stop_now = stop(ctx, mine, vote, o.target_return, seen, looked && !looked->finite()) ||
                            steps >= o.max_env_steps;
      sync.add_host_sync_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - voted).count());
      if (stop.diverged && ctx.rank() == 0) {
        std::fprintf(stderr, "gmi: training diverged by iteration %llu (%s env steps): %s; the group stops without "
                             "saving (try a smaller --lr or --max-grad-norm)\n",
                     static_cast<unsigned long long>(trainer.iteration()), metrics::si(steps).c_str(),
                     looked ? looked->not_finite().c_str() : "loss terms not finite");
      }
      if (!printer && ctx.rank() == 0 && looked && elapsed - last_log >= o.log_interval) last_log = elapsed;
      if (printer && (elapsed - last_log >= o.log_interval || stop_now)) {
        const auto losses = looked ? *looked : trainer.losses();
        const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double mean = stop.window.last_mean().value_or(std::numeric_limits<double>::quiet_NaN());
        std::printf("iter %6llu | steps %s | train %s samples/s (all GMIs) | return %s | kl %.4f | lr %.1e | %s\n",
                    static_cast<unsigned long long>(trainer.iteration()), metrics::si(steps).c_str(),
                    metrics::si(steps / now).c_str(), std::isfinite(mean) ? metrics::si(mean).c_str() : "-",
                    losses.approx_kl, losses.learning_rate, metrics::clock_text(now).c_str());
        std::fflush(stdout);
        last_log = now;
      }
      if (!stop.diverged && (stop_now || save_due)) save();
      if (stop_now) {
        reason = stop.diverged ? "diverged" : stop.solved ? "solved" : sig ? "signal " + std::to_string(sig)
                 : elapsed >= o.max_seconds ? "time limit" : steps >= o.max_env_steps ? "step limit" : "stopped";
        break;
      }
    }
    sync.wait(b.stream());
    trainer.synchronize();
    gmi_training_result r;
    r.gpm = gpm.finish();
    r.rank = ctx.rank();
    r.gpu = ctx.gpu();
    r.slice = ctx.slice();
    r.num_envs = trainer.num_envs();
    r.iterations = trainer.iteration();
    r.samples = static_cast<double>(trainer.iteration()) * trainer.samples_per_iteration();
    const auto end = std::chrono::steady_clock::now();
    r.seconds = std::chrono::duration<double>(end - t0).count();
    if (warm && trainer.iteration() > warm->second) {
      r.warm_samples = static_cast<double>(trainer.iteration() - warm->second) * trainer.samples_per_iteration();
      r.warm_seconds = std::chrono::duration<double>(end - warm->first).count();
    }
    r.device_bytes = cuda::device_bytes_of_this_thread().peak;
    r.comm_seconds = sync.comm_seconds(b.stream()) - comm0;  // NaN without a clock
    r.host_sync_seconds = sync.host_sync_seconds() - host_sync0;
    r.mean_return = stop.window.last_mean().value_or(std::numeric_limits<double>::quiet_NaN());
    r.reason = reason;
    r.binding = b.describe();
    if (ctx.rank() == 0) r.curve = stop.curve.points();
    r.gradients = sync.description();
    r.update = sync.update();
    r.statistics = trainer.statistics_in_kernel() ? "kernel" : "host";
    const auto params = trainer.params();
    std::vector<float> host(params.size());
    cuda::copy(host_span<float>(host.data(), host.size()), memory_span<const float, device_memory>(params.data(), params.size()),
               b.stream());
    GMI_CUDA_TRY(cudaStreamSynchronize(b.stream()));
    r.weights_hash = detail::fnv1a(host.data(), host.size() * sizeof(float));
    ctx.report(nlohmann::json(r).dump());
    runtime::trace(ctx.id(), "done: " + reason);
  };
  runtime::gmis_outcome outcome;
  try {
    outcome = runtime::run_gmis(cfg, work);
  } catch (const runtime::gmi_failed& e) {
    if (status && e.info().rank >= 0) {  // tell the restart loop a GMI was lost (a launcher signal is no loss)
      status->set_note(e.what());
      status->block().lost_gmi.store(1);
    }
    throw;
  }
  if (!outcome.report) return outcome.exit_code;  // a GMI process: its launcher reports
  const gmi_training_total t = collect_training(*outcome.report);
  const gmi_training_result& first = t.per_gmi.front();
  if (trial) {
    if (!t.weights_identical) throw gmi::error("the GMIs ended with different weights: synchronous training is broken");
    *trial = t;
    return 0;
  }
  std::printf("gmi: %s after %llu iterations: %s samples/s over %zu GMIs (%s each on average, update %s, "
              "statistics %s) | mean return %s | weights %s (FNV-1a %016llx)\n",
              t.reason.c_str(), static_cast<unsigned long long>(t.iterations), metrics::si(t.samples_per_s).c_str(),
              t.per_gmi.size(), metrics::si(t.samples_per_s / static_cast<double>(t.per_gmi.size())).c_str(),
              first.update.c_str(), first.statistics.c_str(), return_text(first.mean_return, o).c_str(), t.weights_identical ? "identical on every GMI" : "DIFFER between GMIs",
              static_cast<unsigned long long>(first.weights_hash));
  if (std::isfinite(t.comm_share)) std::printf("gmi: %s\n", comm_share_text(t).c_str());
  std::printf("gmi: %s\n", utilization_text(t).c_str());
  std::fflush(stdout);
  if (!o.metrics_path.empty()) {
    nlohmann::json per = nlohmann::json::array();
    for (const auto& g : t.per_gmi) {
      per.push_back(g);
      per.back().erase("curve");  // rank 0's, once, at the top
    }
    nlohmann::json line = detail::gmis_end_line(run, task, "colocated", cfg, o);
    line.update({{"reason", t.reason},
                 {"iteration", t.iterations},
                 {"train_samples_per_s", t.samples_per_s},
                 {"weights_identical", t.weights_identical},
                 {"per_gmi", per},
                 {"ppo", ppo_settings_json(o.ppo)},
                 {"curve", first.curve},
                 {"gradient_allreduce", first.gradients},
                 {"synced_update", first.update},
                 {"synced_update_asked", o.synced_update},
                 {"rollout_statistics", first.statistics},
                 {"minibatch_scope", o.minibatch_scope},
                 {"comm_clock", o.comm_clock},
                 {"minibatch_gradient", minibatch_gradient_name<Pipeline>()},
                 {"network", network_text<Pipeline>()}});
    if (std::isfinite(first.mean_return)) line["mean_return"] = first.mean_return;
    if (std::isfinite(t.comm_share)) {
      line.update({{"comm_share", t.comm_share}, {"comm_share_max", t.comm_share_max}, {"host_sync_share", t.host_sync_share}});
    }
    put_sm_activity(line, t.gpm);
    metrics::jsonl_log(o.metrics_path).write(line);
  }
  if (!t.weights_identical) {
    std::fprintf(stderr, "gmi: the GMIs ended with different weights: synchronous training is broken\n");
    return 1;
  }
  if (t.reason == "diverged") return 1;  // the line that says why came from GMI 0
  return stop_signal.load() ? 128 + stop_signal.load() : 0;
}

// Population mode: every GMI of cfg trains its own policy with its member's seed and settings; the launcher
// prints the members side by side.
template <class Pipeline>
int population_on_gmis(const run_options& o, const runtime::gmis_config& cfg) {
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
    engine trainer(o.num_envs, m.seed, m.ppo, typename Env::params{}, exec::cuda{.stream = b.stream(), .sm_count = b.sm_count()});
    const population_result r = train_member(ctx, trainer, m, o.target_return, o.min_episodes, o.max_env_steps,
                                             o.max_seconds, stop_signal);
    ctx.report(nlohmann::json(r).dump());
  });
  if (!outcome.report) return outcome.exit_code;
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
  return stop_signal.load() ? 128 + stop_signal.load() : 0;
}

// The split layout (split_gmis.cuh): per GPU, slice 0 trains with V-trace, slices 1..k-1 serve and stream
// rollouts to it; with several GPUs the trainers are one data-parallel group (split_trainer_group.hpp). The
// launcher prints every GMI's line and the totals, and writes the metrics line.
// With `trial` (an autotune trial of the mapping, pipeline/autotune.cuh) the launcher prints nothing and writes no
// metrics line: the totals go to *trial.
template <class Pipeline>
int split_on_gmis(const run_options& o, const runtime::gmis_config& cfg_in, split_total* trial) {
  using Env = typename Pipeline::env;
  using Net = typename Pipeline::network;
  runtime::gmis_config cfg = cfg_in;
  // Under MPS the trainer (slice 0) may use every SM unless --mps-percentage sets one share for all: the serving
  // GMIs' share would make it the bottleneck (2x the trained samples/s on an H200, docs/training.md).
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
  if (o.minibatch_scope == "gmi") s.appo.ppo.minibatch = o.ppo.minibatch * s.appo.rollouts;
  s.appo.replay_updates = o.learner_graph == "on";
  s.appo.clip_against_behaviour = o.clip_against == "behaviour";
  s.appo.normalize_before_weights = o.normalize_advantages == "before_rho";
  s.appo.validate();
  gmi::require(o.max_policy_lag >= 0, "--max-policy-lag", o.max_policy_lag, ">= 0 (updates)");
  s.max_policy_lag = o.max_policy_lag;
  s.channel_slots = static_cast<std::uint32_t>(o.channel_slots);
  s.num_envs = o.num_envs;
  s.seed = o.seed;
  s.max_env_steps = o.max_env_steps;
  s.max_seconds = o.max_seconds;
  s.target_return = o.target_return;
  s.log_interval = o.log_interval;
  s.min_episodes = o.min_episodes;
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
                cfg.gmis_per_gpu - 1, cfg.gpus.size() > 1 ? "(the trainers synced over NCCL) " : "", o.num_envs, s.appo.ppo.minibatch, o.minibatch_scope.c_str(), o.max_policy_lag, o.channel_slots,
                o.clip_against.c_str(), o.normalize_advantages == "before_rho" ? "before rho" : "after rho",
                static_cast<unsigned long long>(o.seed),
                cfg.mps_first_slice_percentage
                    ? (" | MPS: trainer " + std::to_string(*cfg.mps_first_slice_percentage) + "% of the SMs, serving " +
                       std::to_string(runtime::detail::mps_config_of(cfg).percentage()) + "% each").c_str()
                    : "");
    std::fflush(stdout);
  }
  const auto outcome = runtime::run_gmis(cfg, split_gmi_work<Env, Net>(s, cfg.gmis_per_gpu));
  if (!outcome.report) return outcome.exit_code;  // a GMI process: its launcher reports
  const split_total t = collect_split(*outcome.report);
  if (trial) {
    *trial = t;
    return 0;
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
    nlohmann::json line = detail::gmis_end_line(run, task, "split", cfg, o);
    line.update({{"reason", t.reason},
                 {"updates", t.updates},
                 {"train_samples_per_s", t.train_samples_per_s},
                 {"serve_steps_per_s", t.serve_steps_per_s},
                 {"max_policy_lag", o.max_policy_lag},
                 {"channel_slots", o.channel_slots},
                 {"learner_graph", o.learner_graph},
                 {"clip_against", o.clip_against},
                 {"normalize_advantages", o.normalize_advantages},
                 {"minibatch_scope", o.minibatch_scope},
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
  if (!t.weights_identical) {
    std::fprintf(stderr, "gmi: the trainers ended with different weights: the split layout's gradient sync is broken\n");
    return 1;
  }
  if (t.reason == "diverged") return 1;  // the trainer GMI's line said why
  return stop_signal.load() ? 128 + stop_signal.load() : 0;
}

template <class Pipeline>
int run_on_gmis(const run_options& o, const runtime::gmis_config& cfg) {
  using Env = typename Pipeline::env;
  if constexpr (Pipeline::layout_type::trains) {
    if (o.population) return population_on_gmis<Pipeline>(o, cfg);
    if constexpr (std::is_same_v<typename Pipeline::layout_type, layout::split>) {
      return split_on_gmis<Pipeline>(o, cfg);
    } else {
      // A plan whose measured mapping splits the roles runs this pipeline's env, agent and trainer as layout split.
      if (o.split_roles) return split_on_gmis<split_of<Pipeline>>(o, cfg);
      return train_on_gmis<Pipeline>(o, cfg);
    }
  } else {
    if (o.population) {
      throw gmi::config_error(gmi::got_need("--population with layout", Pipeline::layout_type::name,
                                            "a training layout (gmi::layout::colocated): the serving layout trains nothing"));
    }
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
    if (!outcome.report) return outcome.exit_code;  // a GMI process: its launcher reports
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
    return stop_signal.load() ? 128 + stop_signal.load() : 0;
  }
}

}  // namespace detail

template <class Pipeline>
int run(int argc, char** argv) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  runtime::install_crash_report();  // a fault in a GMI thread names the GMI (and leaves no segment behind)
  using Env = typename Pipeline::env;
  run_options o;
  o.num_envs = detail::default_num_envs<Env>();
  o.target_return = detail::default_target_return<Env>();
  if constexpr (std::is_same_v<typename Pipeline::layout_type, layout::split>) o.gmis_per_gpu = 4;  // 1 trainer + 3 serving
  CLI::App app{"gmi pipeline: " + std::string(Pipeline::layout_type::name) + " layout", argc > 0 ? argv[0] : "gmi"};
  app.add_option("--num-envs", o.num_envs, "environments per GMI")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  app.add_option("--seed", o.seed, "seed of environments, policy sampling, initial weights and shuffles")->capture_default_str();
  app.add_option("--device", o.device, "where to run")->check(CLI::IsMember({"auto", "gpu", "host"}))->capture_default_str();
  app.add_option("--gpu", o.gpu, "CUDA device ordinal")->check(CLI::NonNegativeNumber)->capture_default_str();
  o.partition = Pipeline::partition_type::name;
  app.add_option("--gpus", o.gpus, "GPUs to use from --gpu on: a count or \"all\"")->capture_default_str();
  app.add_option("--gmis-per-gpu", o.gmis_per_gpu, "GMIs per GPU (the backend sets the upper bound)")
      ->check(CLI::Range(1, 1024))->capture_default_str();
  app.add_option("--partition", o.partition, "partition backend (default: the pipeline's)")
      ->check(CLI::IsMember({"none", "mps", "green_context", "mig"}))->capture_default_str();
  app.add_option("--launch", o.launch, "GMIs as threads or processes (mps/mig: processes; green_context: threads)")
      ->check(CLI::IsMember({"auto", "threads", "processes"}))->capture_default_str();
  app.add_option("--mps-percentage", o.mps_percentage, "MPS active-thread percentage per GMI (default 100 / GMIs per GPU, rounded up)")
      ->check(CLI::Range(1, 100));
  app.add_option("--sms-per-gmi", o.sms_per_gmi, "green_context: SMs per GMI (0: the largest equal slice)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--max-env-steps", o.max_env_steps, "stop after this many environment steps")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--max-seconds", o.max_seconds, "stop after this many seconds of training")->check(CLI::PositiveNumber)->capture_default_str();
  auto* target_return_flag =
      app.add_option("--target-return", o.target_return, "stop when the mean episode return reaches this (nan: never)");
  app.add_option("--target-optimum-gap", o.target_optimum_gap,
                 "stop when the mean return is within this fraction of the task's optimal mean return (tasks with a "
                 "known optimum: the *_proxy tasks); e.g. 0.1: at most 10% below it");
  app.add_option("--min-episodes", o.min_episodes, "episodes a mean return must cover")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--log-interval", o.log_interval, "seconds between progress lines")->check(CLI::Range(0.0, 3600.0))->capture_default_str();
  app.add_option("--metrics", o.metrics_path, "append JSON-lines metrics to this file");
  app.add_option("--serve-seconds", o.serve_seconds, "serving layout: seconds to measure")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--horizon", o.ppo.horizon, "PPO steps per environment per iteration")->capture_default_str();
  app.add_option("--minibatch", o.ppo.minibatch, "PPO minibatch size")->capture_default_str();
  app.add_option("--epochs", o.ppo.epochs, "PPO epochs per iteration")->capture_default_str();
  app.add_option("--lr", o.ppo.learning_rate, "Adam learning rate")->capture_default_str();
  app.add_option("--clip", o.ppo.clip, "PPO ratio clip")->capture_default_str();
  app.add_option("--dual-clip", o.ppo.dual_clip,
                 "dual-clip PPO: a negative advantage's ratio counts up to this (0: off; else > 1 + clip)")
      ->capture_default_str();
  app.add_option("--gamma", o.ppo.gamma, "discount")->capture_default_str();
  app.add_option("--lambda", o.ppo.lambda, "GAE lambda")->capture_default_str();
  app.add_option("--entropy-coef", o.ppo.entropy_coef, "entropy bonus weight")->capture_default_str();
  app.add_option("--bounds-loss-coef", o.ppo.bounds_loss_coef,
                 "weight of the loss that keeps action means inside [-1.1, 1.1] (rl_games' bounds_loss_coef)")
      ->capture_default_str();
  app.add_option("--value-coef", o.ppo.value_coef, "value loss weight")->capture_default_str();
  app.add_option("--max-grad-norm", o.ppo.max_grad_norm, "gradient-norm clip (<= 0: off)")->capture_default_str();
  app.add_option("--obs-normalizer-window", o.ppo.obs_normalizer_window,
                 "samples the observation normalizer weighs at most (older ones fade); 0: every sample")
      ->capture_default_str();
  app.add_option("--value-normalizer-window", o.ppo.value_normalizer_window,
                 "samples the return normalizer weighs at most (older ones fade); 0: every sample")
      ->capture_default_str();
  // The PPO config's switches, spelled true/false (anything else: one line naming the flag).
  std::array<std::pair<bool*, std::string>, 4> normalize{{{&o.ppo.normalize_obs, "true"},
                                                          {&o.ppo.normalize_value, "true"},
                                                          {&o.ppo.normalize_advantage, "true"},
                                                          {&o.ppo.clip_value, "false"}}};
  for (auto& [flag, text] : normalize) text = *flag ? "true" : "false";
  app.add_option("--normalize-obs", normalize[0].second, "running mean/std of observations")
      ->check(CLI::IsMember({"true", "false"}))->capture_default_str();
  app.add_option("--normalize-value", normalize[1].second,
                 "the value head predicts returns normalized by their running mean/std")
      ->check(CLI::IsMember({"true", "false"}))->capture_default_str();
  app.add_option("--normalize-advantage", normalize[2].second, "advantages normalized over the rollout")
      ->check(CLI::IsMember({"true", "false"}))->capture_default_str();
  app.add_option("--clip-value", normalize[3].second,
                 "PPO2-style clipped value loss: the new value kept within 0.2 of the rollout's (rl_games' clip_value)")
      ->check(CLI::IsMember({"true", "false"}))->capture_default_str();
  std::string schedule = rl::lr_schedule_name(o.ppo.schedule);
  app.add_option("--lr-schedule", schedule,
                 "learning-rate schedule: constant, adaptive (rl_games' KL rule) or linear (from --lr down to 1e-6 "
                 "over --lr-decay-env-steps)")
      ->check(CLI::IsMember({"constant", "adaptive", "linear"}))->capture_default_str();
  auto* lr_decay_flag = app.add_option("--lr-decay-env-steps", o.ppo.lr_decay_env_steps,
                                       "linear lr schedule: env steps of the whole training the decay spans "
                                       "(default: --max-env-steps)");
  app.add_flag("--quiet", o.quiet, "no progress lines");
  app.add_option("--checkpoint", o.checkpoint_path, "save the training state here at the end (and <path>.safetensors)");
  app.add_option("--checkpoint-every", o.checkpoint_every, "also save every N iterations")->check(CLI::NonNegativeNumber);
  app.add_option("--resume", o.resume_path, "continue from a checkpoint saved by --checkpoint (over GMIs: its manifest)")
      ->check(CLI::ExistingFile);
  app.add_option("--gradient-allreduce", o.gradient_allreduce,
                 "synchronous training over GMIs: gradients summed on the device (hierarchical: GMIs of a GPU, then "
                 "NCCL), through host shared memory (cpu_staged, the paper's IP baseline), or automatic: both timed "
                 "at the start, the faster kept")
      ->check(CLI::IsMember({"hierarchical", "cpu_staged", "automatic"}))
      ->capture_default_str();
  app.add_option("--synced-update", o.synced_update,
                 "synchronous training over GMIs: replay each GMI's update as a CUDA graph where the gradient sum "
                 "allows it, with the group's sum inside each minibatch step's kernel where the GMIs of one GPU "
                 "share their rows (fused) or as allreduce calls between kernels (graph), or enqueue it kernel by "
                 "kernel (eager)")
      ->check(CLI::IsMember({"fused", "graph", "eager"}))
      ->capture_default_str();
  app.add_option("--minibatch-scope", o.minibatch_scope,
                 "synchronous training over GMIs: --minibatch is the group's, split over its GMIs (group: an "
                 "iteration makes as many steps as one GMI holding every env), or each GMI's (gmi: rl_games' "
                 "multi-GPU rule, the paper's; a step averages GMIs x --minibatch samples); split: the trainer's "
                 "minibatch is --minibatch (group) or serving GMIs x --minibatch (gmi)")
      ->check(CLI::IsMember({"group", "gmi"}))
      ->capture_default_str();
  app.add_option("--comm-clock", o.comm_clock,
                 "synchronous training over GMIs: time each GMI's gradient sums and report the share of the time "
                 "spent communicating: on (the step kernels' waits on the group when fused, else two one-thread "
                 "stamp kernels around each sum), auto (only where free: fused, cpu_staged), off")
      ->check(CLI::IsMember({"on", "auto", "off"}))
      ->capture_default_str();
  app.add_option("--restart-on-failure", o.restart_on_failure,
                 "synchronous training over GMIs: when a GMI is lost, relaunch the group from the last checkpoint, "
                 "at most N times (needs --checkpoint)")
      ->expected(0, 1)->default_str("3")->check(CLI::Range(1, 1000));
  app.add_flag("--autotune", o.autotune.on, "serving, colocated: find GMIs per GPU and envs per GMI (the paper's Algorithm 1 with "
               "trials of the layout), then serve or train with them");
  app.add_option("--autotune-budget", o.autotune.budget_seconds, "autotune: seconds for all trials")
      ->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--autotune-max-gmis", o.autotune.max_gmis_per_gpu, "autotune: most GMIs per GPU to try")
      ->check(CLI::Range(1, 48))->capture_default_str();
  app.add_option("--autotune-partitions", o.autotune.partitions, "autotune: backends to search, comma list (default: --partition)");
  app.add_option("--autotune-trial-seconds", o.autotune.trial_seconds, "autotune: measured window of one trial")
      ->check(CLI::Range(0.05, 60.0))->capture_default_str();
  app.add_option("--plan", o.autotune.plan_path, "serving, colocated: use this saved plan (made for this machine and layout)")->check(CLI::ExistingFile);
  app.add_option("--save-plan", o.autotune.save_path, "autotune: save the plan here (JSON)");
  app.add_flag("!--autotune-no-mapping", o.autotune.mapping,
               "autotune, colocated: skip the split-layout trials (the mapping stays colocated, not measured)");
  app.add_option("--max-policy-lag", o.max_policy_lag, "split: drop rollouts acted with weights more updates old")
      ->check(CLI::Range(0, 1 << 20))->capture_default_str();
  app.add_option("--channel-slots", o.channel_slots,
                 "split: rollouts each serving GMI may have queued for the trainer, the back-pressure bound (a power "
                 "of two in 1..64)")
      ->capture_default_str();
  app.add_option("--learner-graph", o.learner_graph,
                 "split: the trainer replays its update (epochs x minibatches of kernels) as one CUDA graph from the "
                 "second update on (on), or enqueues it kernel by kernel (off)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--clip-against", o.clip_against,
                 "split: PPO's ratio is pi over the serving GMI's policy that acted (behaviour: Sample Factory's "
                 "APPO) or over the learner's policy at the start of the update (learner: decoupled PPO)")
      ->check(CLI::IsMember({"learner", "behaviour"}))
      ->capture_default_str();
  app.add_option("--normalize-advantages", o.normalize_advantages,
                 "split: normalize V-trace's advantages before its rho weights them (before_rho), or the weighted ones "
                 "(after_rho, Sample Factory's way)")
      ->check(CLI::IsMember({"before_rho", "after_rho"}))
      ->capture_default_str();
  app.add_option("--rho-bar", o.rho_bar, "split: V-trace truncation of the TD-error weights")->capture_default_str();
  app.add_option("--c-bar", o.c_bar, "split: V-trace truncation of the traces (<= --rho-bar)")->capture_default_str();
  app.add_flag("--population", o.population, "independent trainings, one per GMI (seeds --seed, --seed + 1, ...)");
  bool split_roles_flag = false;
  app.add_flag("--split-roles", split_roles_flag,
               "colocated training: run the split layout instead (slice 0 trains, slices 1.. serve: asynchronous PPO "
               "with V-trace), for side-by-side runs of the same task");
  app.add_option("--sweep", o.sweep_path, "population settings: a JSON array, one object per GMI (implies --population)");
  if (const auto code = runtime::parse_flags(app, argc, argv)) return *code;
  o.ppo.schedule = *rl::parse_lr_schedule(schedule);
  // The linear schedule spans the run's step limit unless told otherwise (a sweep's members may ask for it too).
  if (lr_decay_flag->count() == 0) o.ppo.lr_decay_env_steps = std::isfinite(o.max_env_steps) ? o.max_env_steps : 0;
  for (const auto& [flag, text] : normalize) *flag = text == "true";
  if (!o.sweep_path.empty()) o.population = true;

  std::signal(SIGINT, detail::on_stop_signal);
  std::signal(SIGTERM, detail::on_stop_signal);
  try {
    if (o.ppo.schedule == rl::lr_schedule::linear) {
      gmi::require(std::isfinite(o.ppo.lr_decay_env_steps) && o.ppo.lr_decay_env_steps >= 1,
                   "--lr-decay-env-steps with --lr-schedule linear", o.ppo.lr_decay_env_steps,
                   ">= 1 and finite (default: --max-env-steps)");
    }
    o.ppo.validate();
    // GMI_PPO_GRADIENT (a comparison knob of the GPU trainer) is checked on every machine, so a typo is one line
    if constexpr (Pipeline::layout_type::trains) (void)rl::detail::minibatch_gradient<typename Pipeline::network>::chosen_path();
    if (const auto best = detail::optimal_mean_return<Env>()) o.optimal_mean_return = *best;
    gmi::require(std::isnan(o.target_optimum_gap) || (std::isfinite(o.target_optimum_gap) && o.target_optimum_gap > 0),
                 "--target-optimum-gap", o.target_optimum_gap, "> 0 (a fraction of |optimum|, e.g. 0.1)");
    if (std::isfinite(o.target_optimum_gap)) {
      gmi::require(std::isfinite(o.optimal_mean_return), "--target-optimum-gap for task", detail::task_name<Env>(),
                   "a task with a known optimal mean return (the *_proxy tasks)");
      gmi::require(target_return_flag->count() == 0, "--target-optimum-gap with --target-return", o.target_return,
                   "one of the two");
      o.target_return = o.optimal_mean_return - o.target_optimum_gap * std::fabs(o.optimal_mean_return);
    }
    if (std::isfinite(o.optimal_mean_return) && !runtime::this_gmi()) {
      std::printf("gmi: %s: optimal mean return %s (known for this task); target %s\n", detail::task_name<Env>(),
                  metrics::si(o.optimal_mean_return).c_str(),
                  std::isfinite(o.target_return) ? metrics::si(o.target_return).c_str() : "none");
    }
    if (o.restart_on_failure > 0) {
      gmi::require(!o.checkpoint_path.empty(), "--restart-on-failure without --checkpoint", o.restart_on_failure,
                   "--checkpoint PATH as well (a restart resumes from the last checkpoint)");
      gmi::require(std::string_view(Pipeline::layout_type::name) == "colocated" && !o.population, "--restart-on-failure with",
                   o.population ? std::string("--population") : std::string("layout ") + Pipeline::layout_type::name,
                   "synchronous training (layout colocated, no --population)");
    }
    if (!o.autotune.save_path.empty()) {  // before a search of minutes, not after it
      gmi::require(o.autotune.on, "--save-plan without --autotune", o.autotune.save_path,
                   "--autotune as well (--save-plan saves the plan the search chose)");
      plan::check_writable(o.autotune.save_path, "--save-plan");
    }
    if (o.autotune.on || !o.autotune.plan_path.empty()) check_plan_flags<Pipeline>(o);
    if (split_roles_flag) {
      gmi::require(std::string_view(Pipeline::layout_type::name) == "colocated", "--split-roles with layout",
                   std::string(Pipeline::layout_type::name), "colocated (whose roles it splits)");
      gmi::require(!o.population && !o.autotune.on && o.autotune.plan_path.empty() && o.restart_on_failure == 0,
                   "--split-roles with",
                   o.population ? "--population" : o.autotune.on ? "--autotune" : o.restart_on_failure ? "--restart-on-failure" : "--plan",
                   "none of --population, --autotune, --plan, --restart-on-failure");
      gmi::require(o.gmis_per_gpu >= 2, "--gmis-per-gpu with --split-roles", o.gmis_per_gpu,
                   ">= 2 (slice 0 trains, slices 1.. serve)");
      o.split_roles = true;
    }
    if constexpr (std::is_same_v<typename Pipeline::layout_type, layout::split>) {
      gmi::require(o.gmis_per_gpu >= 2, "--gmis-per-gpu for layout split", o.gmis_per_gpu,
                   ">= 2 (slice 0 trains, slices 1.. serve)");
      gmi::require(std::isfinite(o.rho_bar) && o.rho_bar > 0, "--rho-bar", o.rho_bar, "> 0");
      gmi::require(std::isfinite(o.c_bar) && o.c_bar > 0 && o.c_bar <= o.rho_bar, "--c-bar", o.c_bar,
                   "<= --rho-bar (" + metrics::si(o.rho_bar) + ") and > 0");
    }
    gmi::require(o.channel_slots >= 1 && o.channel_slots <= 64 && (o.channel_slots & (o.channel_slots - 1)) == 0,
                 "--channel-slots", o.channel_slots, "a power of two in 1..64");
    const auto gpus = cuda::device_count();
    const bool use_gpu = o.device == "gpu" || (o.device == "auto" && gpus.has_value());
    if (use_gpu) {
      if (!gpus) throw gmi::config_error(gmi::got_need("--device", "gpu", "a CUDA device (" + gpus.error().message() + ")"));
      // A GMI process takes its placement from its identity (under MPS and MIG it sees one device): the launcher
      // has checked --gpu and --gpus against every GPU already.
      const bool gmi_process = runtime::this_gmi().has_value();
      if (!gmi_process) gmi::require(o.gpu < *gpus, "--gpu", o.gpu, "< " + std::to_string(*gpus) + " (visible CUDA devices)");
      // A plan (searched now or saved before) sets partition, GMIs per GPU and envs per GMI; GMI processes get
      // their launcher's choice through the environment.
      bool planned = gmi_process && apply_chosen_from_env(o);
      runtime::env_list chosen_vars;
      if (!gmi_process && (o.autotune.on || !o.autotune.plan_path.empty())) {
        if constexpr (!std::is_same_v<typename Pipeline::layout_type, layout::split>) {  // refused above
          plan::plan p;
          if (o.autotune.on) {
            p = autotune<Pipeline>(o);
          } else {
            p = plan::load(o.autotune.plan_path);
            if (p.trials_of != trials_of<Pipeline>()) {
              throw gmi::config_error("plan " + o.autotune.plan_path + ": " +
                                      gmi::got_need("trials of", p.trials_of,
                                                    std::string(trials_of<Pipeline>()) + " (this run's layout; search "
                                                    "again with --autotune on it)"));
            }
            std::printf("gmi: plan %s: %s (%s %s per GPU when it was made)\n", o.autotune.plan_path.c_str(),
                        plan::describe(p.chosen).c_str(), metrics::si(p.gpu_throughput).c_str(),
                        Pipeline::layout_type::trains ? "training samples/s" : "steps/s");
          }
          const bool split = p.mapping && p.mapping->choice == plan::mapping_kind::split;
          const plan::candidate& use = split ? *p.split_chosen : p.chosen;
          if (split) {
            // The split layout saves no checkpoints and does not restart in this version.
            gmi::require(o.checkpoint_path.empty() && o.restart_on_failure == 0 && o.resume_path.empty(),
                         "--checkpoint/--resume/--restart-on-failure with a plan that maps the roles", "split",
                         "a colocated plan (the split layout saves no checkpoints; --autotune-no-mapping keeps "
                         "colocated)");
            std::printf("gmi: the plan maps the roles split (%s): %s\n", p.mapping->reason.c_str(),
                        plan::describe(use).c_str());
          }
          o.partition = use.partition;
          o.gmis_per_gpu = use.gmis_per_gpu;
          o.num_envs = use.envs_per_gmi;
          o.split_roles = split;
          chosen_vars = chosen_env(use, o.serve_seconds, false, false, split);
          planned = true;
        }
      }
      // In a GMI process only the number of GPUs matters (NCCL among the GPUs' leaders): world / GMIs per GPU.
      const std::vector<int> chosen =
          gmi_process ? std::vector<int>(static_cast<std::size_t>(std::max(1, runtime::this_gmi()->world / std::max(1, o.gmis_per_gpu))), 0)
                      : detail::chosen_gpus(o, *gpus);
      const bool several = chosen.size() > 1 || o.gmis_per_gpu > 1 || o.partition != "none" || o.launch == "processes" ||
                           gmi_process || o.population || planned || o.restart_on_failure > 0;
      if (several) {
        runtime::gmis_config cfg;
        cfg.partition = o.partition;
        cfg.gpus = chosen;
        cfg.gmis_per_gpu = o.gmis_per_gpu;
        cfg.launch = o.launch;
        cfg.mps_percentage = o.mps_percentage;
        cfg.sms_per_gmi = o.sms_per_gmi;
        cfg.env = chosen_vars;
        return detail::run_on_gmis<Pipeline>(o, cfg);
      }
      GMI_CUDA_TRY(cudaSetDevice(o.gpu));
      const auto info = cuda::describe_device(o.gpu);
      cuda::stream stream;
      return detail::run_with<Pipeline>(o, exec::cuda{.stream = stream.get()},
                                        info.name + " (" + std::to_string(info.sm_count) + " SMs)");
    }
    if (o.gmis_per_gpu > 1 || o.partition != "none" || o.gpus != "1" || o.population || o.autotune.on ||
        !o.autotune.plan_path.empty() || o.restart_on_failure > 0) {
      throw gmi::config_error(gmi::got_need("--gmis-per-gpu/--partition/--gpus/--population/--autotune/--plan/--restart-on-failure on", "host threads",
                                            "a GPU (several GMIs run on GPUs; the host runs one)"));
    }
    const std::string why = gpus ? std::string("host threads (asked for)") : "host threads (" + gpus.error().message() + ")";
    return detail::run_with<Pipeline>(o, exec::host{}, why);
  } catch (const gmi::config_error& e) {
    std::fprintf(stderr, "%s: %s\n", app.get_name().c_str(), e.what());
    return 2;
  } catch (const runtime::gmi_failed& e) {
    std::fprintf(stderr, "%s: %s\n", app.get_name().c_str(), e.what());
    // GMI processes ended by the teardown leave the segments they owned (the hierarchical allreduce's, channels'):
    // their owners are gone now, so they go too.
    comm::cleanup_stale_segments();
    return 1;
  } catch (const gmi::error& e) {
    std::fprintf(stderr, "%s: %s\n", app.get_name().c_str(), e.describe().c_str());
    return 1;
  }
}

}  // namespace gmi

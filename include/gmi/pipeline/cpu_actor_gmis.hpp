#pragma once
// Several host GMIs of CPU actors (actors::on_cpu<Env> placed on host threads with --gmis-per-gpu K, the cpu_cores
// backend): each GMI is a thread of one runtime::thread_group with its own disjoint actor cores (on_cpu_cores:
// the ratio's cores per GMI, NUMA-aware), its own environments (seed + rank) and its own PPO trainer; the trainers
// are one synchronous data-parallel group through ppo_sync over the context's host allreduce (gradient rows and
// rollout statistics), and the group stops together in train_loop.hpp's loop, as the colocated layout's GPU GMIs
// do. Rank 0's weights start the group; the launcher checks that every GMI ends with the same weights. Like the
// colocated layout on GPUs: --checkpoint saves every GMI at the same iteration (gmis_checkpoint.hpp: a manifest and
// a .gmi file a GMI, the actors' environments included), --resume restores every GMI, --metrics gets a line at
// each log time from the first iteration and an end line, --restart-on-failure runs attempts (gmis_restart.hpp).

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <gmi/actors/cores.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/hash.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/io/checkpoint.hpp>
#include <gmi/io/gmi_file.hpp>
#include <gmi/io/safetensors.hpp>
#include <gmi/metrics/jsonl.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/pipeline/cpu_actors.hpp>
#include <gmi/pipeline/gmis_checkpoint.hpp>
#include <gmi/pipeline/gmis_restart.hpp>
#include <gmi/pipeline/report.hpp>
#include <gmi/pipeline/sm_activity.hpp>
#include <gmi/pipeline/stop_reason.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/pipeline/train_loop.hpp>
#include <gmi/rl/ppo_sync.hpp>
#include <gmi/runtime/launcher.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace gmi::detail {

// What one host GMI of CPU actors ended with.
struct cpu_gmi_outcome {
  std::vector<int> cores;     // its actor cores
  std::uint64_t iterations = 0, resumed_at = 0;
  std::uint64_t weights_hash = 0;  // FNV-1a of its parameters
  std::vector<float> params;  // its parameters
  loop_end end;
};

// The host GMIs' run settings beyond the config: where this attempt resumes from, its restart loop's side, and
// the metrics log rank 0 writes (nullptr: none).
struct cpu_gmis_attempt {
  std::string resume;
  const attempt_watch* watch = nullptr;
  metrics::jsonl_log* log = nullptr;
  nlohmann::json base = nlohmann::json::object();  // the fields every metrics line starts with
};

// The K host GMIs' part of a run: every GMI's outcome, by rank. Throws runtime::gmi_failed naming a GMI that failed.
template <class Pipeline>
std::vector<cpu_gmi_outcome> run_cpu_actor_gmis(const train_config<Pipeline>& o, const cpu_gmis_attempt& a = {}) {
  using Env = typename Pipeline::env;
  using engine = typename Pipeline::template engine<exec::host>;
  static_assert(actors::is_on_cpu<Env>, "gmi: host GMIs of CPU actors need actors::on_cpu<Env> in the env slot");
  const int k = o.gmis_per_gpu;
  // Every GMI's cores before any starts, so an impossible count is one line here; so is a checkpoint of another shape.
  for (int r = 0; r < k; ++r) (void)actors::on_cpu_cores<Env::actor_cores>(r, k, o.actor_cores_per_gmi);
  if (!a.resume.empty()) (void)manifest_for_resume(a.resume, k, o.num_envs);
  rl::ppo_config per_gmi = o.ppo;
  if (o.minibatch_scope == scope_choice::group) per_gmi.minibatch = std::max(1, (o.ppo.minibatch + k - 1) / k);
  runtime::launch_spec spec = runtime::launch_spec::uniform(0, k);
  spec.heartbeat_timeout = std::chrono::milliseconds(120000);  // an iteration on a loaded host may take seconds
  const metrics::run_info run = metrics::describe_run();
  std::vector<cpu_gmi_outcome> out(static_cast<std::size_t>(k));
  runtime::thread_group group(std::move(spec), [&](runtime::context& ctx) {
    engine trainer = actors::make_gmi_engine<engine, Env>(ctx.rank(), ctx.world(), o.actor_cores_per_gmi, o.num_envs,
                                                          o.seed + 1000003ull * static_cast<std::uint64_t>(ctx.rank()),
                                                          per_gmi, o.env, exec::host{.threads = 1});
    cpu_gmi_outcome& mine = out[static_cast<std::size_t>(ctx.rank())];
    // Each GMI from its own file, before set_sync (Adam and normalizers must agree).
    if (!a.resume.empty()) mine.resumed_at = resume_gmi(ctx, trainer, a.resume);
    if (!a.resume.empty() && ctx.rank() == 0 && !o.quiet) {
      std::printf("gmi: resumed from %s at iteration %llu (%d GMIs)\n", a.resume.c_str(),
                  static_cast<unsigned long long>(mine.resumed_at), k);
      std::fflush(stdout);
    }
    rl::ppo_sync sync;
    sync.rank = ctx.rank();
    sync.world = ctx.world();
    sync.sum_host = [&ctx](float* data, std::size_t n) { ctx.allreduce(std::span<float>(data, n), ctx.all()); };
    sync.sum_stats = [&ctx](double* data, std::size_t n) { ctx.allreduce(std::span<double>(data, n), ctx.all()); };
    trainer.set_sync(std::move(sync));  // rank 0's weights to every GMI
    if (a.watch && ctx.rank() == 0) a.watch->started(mine.resumed_at);
    sm_activity_window gpm(1, -1);      // no GPU
    const auto progress = [&](const loop_view& v) {
      if (!o.quiet) {
        std::printf("iter %6llu | steps %s | train %s samples/s (all GMIs) | return %s | kl %.4f | %s\n",
                    static_cast<unsigned long long>(v.iteration), metrics::si(v.steps).c_str(),
                    metrics::si(v.run_steps / v.seconds).c_str(),
                    std::isfinite(v.mean_return) ? metrics::si(v.mean_return).c_str() : "-", v.losses.approx_kl,
                    metrics::clock_text(v.seconds).c_str());
        std::fflush(stdout);
      }
      if (!a.log) return;
      nlohmann::json line = a.base;
      line.update({{"iteration", v.iteration}, {"env_steps", v.steps}, {"wall_s", v.seconds},
                   {"train_samples_per_s", v.run_steps / v.seconds},
                   {"mean_return", std::isfinite(v.mean_return) ? nlohmann::json(v.mean_return) : nlohmann::json()},
                   {"policy_loss", v.losses.policy_loss}, {"value_loss", v.losses.value_loss},
                   {"entropy", v.losses.entropy}, {"approx_kl", v.losses.approx_kl},
                   {"clip_fraction", v.losses.clip_fraction}, {"learning_rate", v.losses.learning_rate}});
      if (v.mean_length) line["mean_length"] = *v.mean_length;
      a.log->write(line);
    };
    // train_loop decides every iteration here, so every GMI saves the same iteration.
    std::uint64_t last_saved = mine.resumed_at;
    const auto save = [&] {
      if (o.checkpoint_path.empty() || trainer.iteration() == last_saved) return;
      gmis_manifest m;
      m.gmis_per_gpu = k;
      m.gpus = 0;  // host GMIs
      m.num_envs = trainer.num_envs();
      m.env_steps = static_cast<double>(trainer.iteration()) * trainer.samples_per_iteration() * k;
      m.task = task_name<Env>();
      m.run_id = run.run_id;
      m.git = run.git;
      const auto saved = save_gmis_checkpoint(ctx, trainer, o.checkpoint_path, m, {{"git", run.git}, {"run_id", run.run_id}});
      last_saved = trainer.iteration();
      if (!saved) return;
      io::export_safetensors(trainer.policy_tensors(), o.checkpoint_path + ".safetensors");
      if (a.watch) a.watch->saved(saved->iteration);
      if (!o.quiet) {
        std::printf("gmi: checkpoint %s (manifest + %d GMI files, + .safetensors) at iteration %llu\n",
                    o.checkpoint_path.c_str(), saved->world, static_cast<unsigned long long>(saved->iteration));
        std::fflush(stdout);
      }
    };
    const auto after_iterate = [&] {
      ctx.heartbeat();
      if (a.watch) a.watch->iterated(ctx.rank(), trainer.iteration(), ctx.id().describe());
    };
    mine.cores = trainer.cores();
    loop_settings ls = loop_settings::of(o);
    ls.decide_every_iteration = true;  // the group's sums are host allreduces: a line from the first iteration on
    mine.end = train_loop(trainer, context_group{ctx}, ls, gpm, after_iterate, progress, save);
    mine.iterations = trainer.iteration();
    const auto p = trainer.params();
    mine.params.assign(p.data(), p.data() + p.size());
    mine.weights_hash = gmi::fnv1a(mine.params.data(), mine.params.size() * sizeof(float));
  });
  (void)group.wait_or_throw();
  return out;
}

// gmi::train's run for host GMIs of CPU actors: the group's result (rank 0's curve and weights, which every GMI
// holds: exit code 1 when some GMI's differ). With --restart-on-failure the launcher runs attempts as children.
template <class Pipeline>
train_result train_on_cpu_gmis(const train_config<Pipeline>& o) {
  using Env = typename Pipeline::env;
  const int k = o.gmis_per_gpu;
  const std::optional<restart_note> note = restart_note_from_env();
  const attempt_watch watch;
  watch.check(k);
  if (o.restart_on_failure > 0 && !note) {
    if (!o.resume_path.empty()) (void)manifest_for_resume(o.resume_path, k, o.num_envs);  // one line before attempts
    std::printf("gmi: --restart-on-failure %d: each attempt runs as a child process; a lost GMI group restarts from "
                "the last checkpoint at %s\n", o.restart_on_failure, o.checkpoint_path.c_str());
    std::fflush(stdout);
    const double group_samples = static_cast<double>(o.num_envs) * o.ppo.horizon * k;
    return ended_elsewhere(run_with_restarts(gmis_restart_loop(o, k, group_samples)), true);
  }
  std::printf("gmi: %s | colocated (synchronous PPO) | partition cpu_cores (threads) | %d host GMIs of CPU actors | "
              "%d envs per GMI | seed %llu\n",
              task_name<Env>(), k, o.num_envs, static_cast<unsigned long long>(o.seed));
  std::fflush(stdout);
  const metrics::run_info run = metrics::describe_run();
  std::optional<metrics::jsonl_log> log;
  if (!o.metrics_path.empty()) log.emplace(o.metrics_path);
  runtime::gmis_config shape;  // for the end line's common fields: host GMIs, no GPU
  shape.partition = "cpu_cores";
  shape.gmis_per_gpu = k;
  cpu_gmis_attempt a;
  a.resume = note ? note->resume : o.resume_path;
  a.watch = &watch;
  a.log = log ? &*log : nullptr;
  a.base = gmis_end_line(run, task_name<Env>(), "colocated", shape, o);
  a.base.erase("event");
  a.base.update({{"gmis", k}, {"actor_cores_per_gmi", o.actor_cores_per_gmi}, {"ppo", ppo_settings_json(o.ppo)}});
  std::vector<cpu_gmi_outcome> gmis;
  try {
    gmis = run_cpu_actor_gmis<Pipeline>(o, a);
  } catch (const runtime::gmi_failed& e) {
    if (e.info().rank >= 0) watch.lost(e.what());  // tell the restart loop a GMI was lost
    throw;
  }
  const cpu_gmi_outcome& first = gmis.front();
  bool identical = true;
  std::string cores;
  nlohmann::json core_sets = nlohmann::json::array();
  for (const auto& g : gmis) {
    identical = identical && g.weights_hash == first.weights_hash;
    cores += (cores.empty() ? "" : " | ");
    for (std::size_t c = 0; c < g.cores.size(); ++c) cores += (c ? "," : "") + std::to_string(g.cores[c]);
    core_sets.push_back(g.cores);
  }
  const loop_end& e = first.end;
  train_result r;
  r.reason = e.reason;
  r.signal_number = e.signal_number;
  r.exit_code = identical ? exit_code_of(e.reason, e.signal_number) : 1;
  r.gmis = k;
  r.iterations = e.iterations;
  r.env_steps = e.steps;
  r.wall_seconds = e.seconds;
  r.mean_return = e.mean_return;
  r.curve = e.curve;
  r.rates.train_samples_per_s = e.rate();  // this run's steps: a resumed checkpoint's took none of its time
  std::printf("gmi: %s after %llu iterations over %d GMIs (actor cores %s) | mean return %s | weights %s (FNV-1a "
              "%016llx)\n",
              stop_reason_text(e.reason, e.signal_number).c_str(), static_cast<unsigned long long>(e.iterations), k,
              cores.c_str(), return_text(e.mean_return, o).c_str(),
              identical ? "identical on every GMI" : "DIFFER between GMIs",
              static_cast<unsigned long long>(first.weights_hash));
  std::fflush(stdout);
  if (log) {
    nlohmann::json end = a.base;
    end.update({{"event", "end"}, {"reason", stop_reason_text(e.reason, e.signal_number)}, {"iteration", e.iterations},
                {"resumed_at", first.resumed_at}, {"env_steps", e.steps}, {"wall_s", e.seconds},
                {"train_samples_per_s", r.rates.train_samples_per_s}, {"weights_identical", identical},
                {"weights_hash", first.weights_hash}, {"actor_cores", core_sets}, {"curve", e.curve}});
    if (std::isfinite(e.mean_return)) end["mean_return"] = e.mean_return;
    log->write(end);
  }
  return r;
}

}  // namespace gmi::detail

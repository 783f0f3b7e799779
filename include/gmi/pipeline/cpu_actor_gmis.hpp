#pragma once
// Several host GMIs of CPU actors (actors::on_cpu<Env> placed on host threads with --gmis-per-gpu K, the cpu_cores
// backend): each GMI is a thread of one runtime::thread_group with its own disjoint actor cores (on_cpu_cores:
// the ratio's cores per GMI, NUMA-aware), its own environments (seed + rank) and its own PPO trainer; the trainers
// are one synchronous data-parallel group through ppo_sync over the context's host allreduce (gradient rows and
// rollout statistics), and the group stops together in train_loop.hpp's loop, as the colocated layout's GPU GMIs
// do. Rank 0's weights start the group; the launcher checks that every GMI ends with the same weights.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <gmi/actors/cores.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/hash.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/io/checkpoint.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/pipeline/cpu_actors.hpp>
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
  std::uint64_t iterations = 0;
  std::uint64_t weights_hash = 0;  // FNV-1a of its parameters
  std::vector<float> params;  // its parameters
  loop_end end;
};

// The K host GMIs' part of a run: every GMI's outcome, by rank. Throws runtime::gmi_failed naming a GMI that failed.
template <class Pipeline>
std::vector<cpu_gmi_outcome> run_cpu_actor_gmis(const train_config<Pipeline>& o) {
  using Env = typename Pipeline::env;
  using engine = typename Pipeline::template engine<exec::host>;
  static_assert(actors::is_on_cpu<Env>, "gmi: host GMIs of CPU actors need actors::on_cpu<Env> in the env slot");
  const int k = o.gmis_per_gpu;
  // Every GMI's cores before any starts, so an impossible count is one line here.
  for (int r = 0; r < k; ++r) (void)actors::on_cpu_cores<Env::actor_cores>(r, k, o.actor_cores_per_gmi);
  rl::ppo_config per_gmi = o.ppo;
  if (o.minibatch_scope == scope_choice::group) per_gmi.minibatch = std::max(1, (o.ppo.minibatch + k - 1) / k);
  runtime::launch_spec spec = runtime::launch_spec::uniform(0, k);
  spec.heartbeat_timeout = std::chrono::milliseconds(120000);  // an iteration on a loaded host may take seconds
  std::vector<cpu_gmi_outcome> out(static_cast<std::size_t>(k));
  runtime::thread_group group(std::move(spec), [&](runtime::context& ctx) {
    engine trainer = actors::make_gmi_engine<engine, Env>(ctx.rank(), ctx.world(), o.actor_cores_per_gmi, o.num_envs,
                                                          o.seed + 1000003ull * static_cast<std::uint64_t>(ctx.rank()),
                                                          per_gmi, o.env, exec::host{.threads = 1});
    rl::ppo_sync sync;
    sync.rank = ctx.rank();
    sync.world = ctx.world();
    sync.sum_host = [&ctx](float* data, std::size_t n) { ctx.allreduce(std::span<float>(data, n), ctx.all()); };
    sync.sum_stats = [&ctx](double* data, std::size_t n) { ctx.allreduce(std::span<double>(data, n), ctx.all()); };
    trainer.set_sync(std::move(sync));  // rank 0's weights to every GMI
    sm_activity_window gpm(1, -1);      // no GPU
    const auto progress = [&](const loop_view& v) {
      if (o.quiet) return;
      std::printf("iter %6llu | steps %s | train %s samples/s (all GMIs) | return %s | kl %.4f | %s\n",
                  static_cast<unsigned long long>(v.iteration), metrics::si(v.steps).c_str(),
                  metrics::si(v.steps / v.seconds).c_str(),
                  std::isfinite(v.mean_return) ? metrics::si(v.mean_return).c_str() : "-", v.losses.approx_kl,
                  metrics::clock_text(v.seconds).c_str());
      std::fflush(stdout);
    };
    cpu_gmi_outcome& mine = out[static_cast<std::size_t>(ctx.rank())];
    mine.cores = trainer.cores();
    mine.end = train_loop(trainer, context_group{ctx}, loop_settings::of(o), gpm, [&ctx] { ctx.heartbeat(); },
                          progress, [] {});
    mine.iterations = trainer.iteration();
    const auto p = trainer.params();
    mine.params.assign(p.data(), p.data() + p.size());
    mine.weights_hash = gmi::fnv1a(mine.params.data(), mine.params.size() * sizeof(float));
  });
  (void)group.wait_or_throw();
  return out;
}

// gmi::train's run for host GMIs of CPU actors: the group's result (rank 0's curve and weights, which every GMI
// holds: exit code 1 when some GMI's differ).
template <class Pipeline>
train_result train_on_cpu_gmis(const train_config<Pipeline>& o) {
  using Env = typename Pipeline::env;
  const int k = o.gmis_per_gpu;
  std::printf("gmi: %s | colocated (synchronous PPO) | partition cpu_cores (threads) | %d host GMIs of CPU actors | "
              "%d envs per GMI | seed %llu\n",
              task_name<Env>(), k, o.num_envs, static_cast<unsigned long long>(o.seed));
  std::fflush(stdout);
  const std::vector<cpu_gmi_outcome> gmis = run_cpu_actor_gmis<Pipeline>(o);
  const cpu_gmi_outcome& first = gmis.front();
  bool identical = true;
  std::string cores;
  for (const auto& g : gmis) {
    identical = identical && g.weights_hash == first.weights_hash;
    cores += (cores.empty() ? "" : " | ");
    for (std::size_t c = 0; c < g.cores.size(); ++c) cores += (c ? "," : "") + std::to_string(g.cores[c]);
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
  r.rates.train_samples_per_s = e.steps / e.seconds;
  std::printf("gmi: %s after %llu iterations over %d GMIs (actor cores %s) | mean return %s | weights %s (FNV-1a "
              "%016llx)\n",
              stop_reason_text(e.reason, e.signal_number).c_str(), static_cast<unsigned long long>(e.iterations), k,
              cores.c_str(), return_text(e.mean_return, o).c_str(),
              identical ? "identical on every GMI" : "DIFFER between GMIs",
              static_cast<unsigned long long>(first.weights_hash));
  std::fflush(stdout);
  return r;
}

}  // namespace gmi::detail

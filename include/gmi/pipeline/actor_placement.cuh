#pragma once
// --autotune's CPU-actor entries of the plan. Placement by metric (plan/placement.hpp): the task's env-step rate on
// one pinned host core (the env-step tier with exec::host on one thread, random actions) times the actor cores
// (every core this process may use but one), against its rate on the GPU at the batch the plan chose (the same
// tier on exec::cuda); --autotune-placement-threshold T keeps GPU simulation unless it is at least T times the
// CPU side's rate. The CPU/GPU ratio (plan/ratio.hpp): with --autotune-ratio-sweep FILE, the sweep's lines
// (gmi.bench.actors_ratio) give the throughput choice. Both are printed and saved in the plan; the pipeline type
// still decides where the environments run (actors::on_cpu<Env> for CPU actors).

#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <thread>

#include <gmi/actors/cores.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/pipeline/report.hpp>
#include <gmi/pipeline/tiers.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/plan/placement.hpp>
#include <gmi/plan/plan.hpp>
#include <gmi/plan/ratio.hpp>
#include <gmi/rl/env_batch.cuh>

namespace gmi {

// The profile of Env at `batch` environments: one env step on one pinned core (timed on a thread of its own, so
// the caller's affinity is left alone) and one batched step on GPU `gpu`, each over `seconds`.
template <class Env>
plan::placement_profile profile_placement(const typename Env::params& params, int batch, int gpu, std::uint64_t seed,
                                          double seconds = 0.3) {
  const auto cores = actors::available_cores();
  plan::placement_profile p;
  p.task = detail::task_name<Env>();
  p.batch = batch;
  p.cpu_cores = static_cast<int>(cores.size()) > 1 ? static_cast<int>(cores.size()) - 1 : 1;
  double core_rate = 0;
  std::exception_ptr failed;
  std::thread timer([&] {
    try {
      actors::pin_this_thread(cores.back());
      core_rate = detail::measure_env_tier<Env>(64, seed, params, exec::host{.threads = 1}, seconds);
    } catch (...) {
      failed = std::current_exception();
    }
  });
  timer.join();
  if (failed) std::rethrow_exception(failed);
  p.cpu_seconds_per_step = 1.0 / core_rate;
  GMI_CUDA_TRY(cudaSetDevice(gpu));
  cuda::stream s;
  const double gpu_rate = detail::measure_env_tier<Env>(batch, seed, params, exec::cuda{.stream = s.get()}, seconds);
  p.gpu_seconds_per_batch_step = static_cast<double>(batch) / gpu_rate;
  return p;
}

// Fills p.task_placement (always) and p.cpu_actor_ratio (with --autotune-ratio-sweep) and prints both.
template <class Pipeline>
void choose_actor_settings(const train_config<Pipeline>& o, plan::plan& p) {
  using Env = typename Pipeline::env;
  const plan::placement_profile prof = profile_placement<Env>(o.env, p.chosen.envs_per_gmi, o.gpu, o.seed);
  plan::placement_rule rule;
  rule.threshold = o.autotune.placement_threshold;
  p.task_placement = plan::choose_placement(prof, rule);
  const plan::placement_choice& c = *p.task_placement;
  std::printf("gmi: autotune placement %s: %s env steps/s on %d CPU cores, %s on the GPU at %d envs (threshold %.2f)\n",
              c.chosen == plan::placement::cpu_actors ? "CPU actors" : "GPU simulation",
              metrics::si(c.cpu_steps_per_s).c_str(), prof.cpu_cores, metrics::si(c.gpu_steps_per_s).c_str(), c.batch,
              c.threshold);
  if (o.autotune.ratio_sweep.empty()) return;
  std::ifstream in(o.autotune.ratio_sweep);
  require(static_cast<bool>(in), "--autotune-ratio-sweep", o.autotune.ratio_sweep, "a readable file of ratio sweep lines");
  p.cpu_actor_ratio = plan::choose_ratio(plan::ratio_points_from_lines(in, o.autotune.ratio_sweep));
  const plan::ratio_point& r = p.cpu_actor_ratio->chosen;
  const auto& e = p.cpu_actor_ratio->best_steps_per_joule;
  std::printf("gmi: autotune CPU/GPU ratio: %d actor cores per GMI, %d envs per core, %d GMIs per GPU: %s env steps/s, "
              "%s env steps/J (from %s; most steps/J: %s)\n",
              r.cores_per_gmi, r.envs_per_core, r.gmis_per_gpu, metrics::si(r.steps_per_s).c_str(),
              r.steps_per_joule ? metrics::si(*r.steps_per_joule).c_str() : "energy not read",
              o.autotune.ratio_sweep.c_str(),
              e ? (std::to_string(e->cores_per_gmi) + " cores/GMI, " + std::to_string(e->envs_per_core) + " envs/core, " +
                   std::to_string(e->gmis_per_gpu) + " GMIs/GPU at " + metrics::si(*e->steps_per_joule)).c_str()
                : "no energy in the sweep");
}

}  // namespace gmi

#pragma once
// gmi::train<Pipeline>(config) -> train_result and gmi::serve<Pipeline>(config): a run as a function call. The
// config is validated (config_error naming the option), placed (host threads, one GPU, or GMIs over GPUs, with a
// plan when asked), and run by its layout's run: run_one_gmi.cuh for one GMI, run_colocated.cuh, run_split.cuh,
// run_population.cuh, run_serving.cuh over GMIs (one GMI, the colocated group and population members train in
// train_loop.hpp's one loop). GMI processes (MPS, MIG) re-run the program, which calls train
// again with the same config and takes its GMI's part; their result has launcher == false.
//
//   auto config = gmi::default_config<my_pipeline>();
//   config.max_env_steps = 2e6;
//   config.env.gravity = 3.7f;  // the task's own parameters travel to every GMI
//   const gmi::train_result r = gmi::train<my_pipeline>(config);
//   // r.reason, r.mean_return, r.curve, r.rates, r.weights

#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>

#include <gmi/core/error.hpp>
#include <gmi/comm/shm_segment.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/exec/cuda.cuh>
#include <gmi/exec/host.hpp>
#include <gmi/layout/layouts.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/pipeline/cpu_actor_gmis.hpp>
#include <gmi/pipeline/cpu_actor_population.cuh>
#include <gmi/pipeline/defaults.hpp>
#include <gmi/pipeline/report.hpp>
#include <gmi/pipeline/resolve.cuh>
#include <gmi/pipeline/run_colocated.cuh>
#include <gmi/pipeline/run_offpolicy.cuh>
#include <gmi/pipeline/run_one_gmi.cuh>
#include <gmi/pipeline/run_population.cuh>
#include <gmi/pipeline/run_serving.cuh>
#include <gmi/pipeline/run_split.cuh>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/runtime/crash_report.hpp>
#include <gmi/runtime/gmis.hpp>

namespace gmi {

namespace detail {

// The run of a placed config: one GMI on its device, or the layout's run over GMIs.
template <class Pipeline>
train_result run_placed(const train_config<Pipeline>& o, const placement& where) {
  if (where.at == placement::where::host) return train_one_gmi<Pipeline>(o, exec::host{}, where.device_text);
  if constexpr (actors::is_on_cpu<typename Pipeline::env> && Pipeline::layout_type::trains) {
    if (where.at == placement::where::host_gmis) {
      return o.population ? population_on_cpu_gmis<Pipeline>(o) : train_on_cpu_gmis<Pipeline>(o);
    }
  }
  if (where.at == placement::where::one_gpu) {
    GMI_CUDA_TRY(cudaSetDevice(where.gpu));
    cuda::stream stream;
    return train_one_gmi<Pipeline>(o, exec::cuda{.stream = stream.get()}, where.device_text);
  }
  if constexpr (Pipeline::layout_type::trains) {
    if (o.population) return population_on_gmis<Pipeline>(o, where.cfg);
    if constexpr (std::is_same_v<typename Pipeline::layout_type, layout::split>) {
      return split_on_gmis<Pipeline>(o, where.cfg);
    } else {
      // A plan whose measured mapping splits the roles runs this pipeline's env, agent and trainer as layout split.
      if (o.split_roles) return split_on_gmis<split_of<Pipeline>>(as_split(o), where.cfg);
      return train_on_gmis<Pipeline>(o, where.cfg);
    }
  } else {
    return serve_on_gmis<Pipeline>(o, where.cfg);
  }
}

template <class Pipeline>
train_result validate_place_run(train_config<Pipeline> o) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  runtime::install_crash_report();  // a fault in a GMI thread names the GMI (and leaves no segment behind)
  validate(o);
  if (std::isfinite(o.optimal_mean_return) && !runtime::this_gmi() && !o.quiet) {
    std::printf("gmi: %s: optimal mean return %s (known for this task); target %s\n",
                task_name<typename Pipeline::env>(), metrics::si(o.optimal_mean_return).c_str(),
                std::isfinite(o.target_return) ? metrics::si(o.target_return).c_str() : "none");
  }
  try {
    const placement where = place(o);
    return run_placed(o, where);
  } catch (const runtime::gmi_failed&) {
    // GMI processes ended by the teardown leave the segments they owned (the hierarchical allreduce's, channels'):
    // their owners are gone now, so they go too.
    comm::cleanup_stale_segments();
    throw;
  }
}

}  // namespace detail

// Trains the pipeline with `config`; throws config_error for options that can not work (one line naming the
// option), gmi::error for failures on the way (a lost GMI: runtime::gmi_failed).
template <class Pipeline>
train_result train(const train_config<Pipeline>& config) {
  static_assert(Pipeline::layout_type::trains,
                "gmi::train: this pipeline's layout is gmi::layout::serving, which trains nothing; call gmi::serve");
  // An off-policy trainer (trainers::sac) runs the off-policy layout (run_offpolicy.cuh).
  if constexpr (gmi::trainer_is_off_policy<typename Pipeline::trainer>()) return detail::train_offpolicy<Pipeline>(config);
  else return detail::validate_place_run(config);
}

// Measures the serving layout (policy inference + sampling + env step) with `config`: result.rates.
template <class Pipeline>
train_result serve(const train_config<Pipeline>& config) {
  static_assert(!Pipeline::layout_type::trains,
                "gmi::serve: this pipeline's layout trains; use gmi::layout::serving, or call gmi::train");
  return detail::validate_place_run(config);
}

}  // namespace gmi

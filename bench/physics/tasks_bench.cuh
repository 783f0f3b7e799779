#pragma once
// The definitions of task_bench<T> (tasks_bench.hpp): gmi.bench.physics_tasks's measurements of one task. Included
// only by the per-task files (tasks_bench_<task>.cu), each of which instantiates it for one task.
#include "tasks_bench.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/event.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/metrics/summary.hpp>
#include <gmi/physics/batch_local.cuh>
#include <gmi/physics/batch_warp.cuh>
#include <gmi/physics/stage_shared.hpp>
#include <gmi/physics/thread_shared.hpp>
#include <gmi/rl/env_batch.cuh>
#include <gmi/rl/physics_env_step.cuh>

namespace physics_tasks_bench {
template <class T>
struct random_actions {
  float* act;
  std::uint64_t step;
  __device__ void operator()(std::size_t i) const {
    gmi::rng r(99, step * (1ull << 32) + i);
    for (int k = 0; k < T::act_dim; ++k) act[i * T::act_dim + k] = r.uniform(-1.0f, 1.0f);
  }
};

// Physics steps per env step of a task.
template <class T>
int substeps_of() {
  const typename T::params p{};
  return T::physics_substeps(p);
}

// Env steps per second (physics only) of one batch layout B over the task's substeps per launch.
template <class T, class B>
void bench_path(const options& o, const gmi::metrics::run_info& run, std::ofstream& file, B& b, int n,
                const char* path, nlohmann::json extra, cudaStream_t s) {
  const int sub = substeps_of<T>();
  std::vector<float> ctrl(std::size_t(T::sim::nu) * n);
  for (int u = 0; u < T::sim::nu; ++u)
    for (int e = 0; e < n; ++e) ctrl[std::size_t(u) * n + e] = 0.8f * std::sin(0.1f * e + u);
  GMI_CUDA_TRY(cudaMemcpyAsync(b.ctrl(), ctrl.data(), ctrl.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  for (int k = 0; k < o.warmup; ++k) b.step(s, sub);
  gmi::cuda::event start(gmi::cuda::event::timing::enabled), stop(gmi::cuda::event::timing::enabled);
  std::vector<double> rates;
  for (int r = 0; r < o.reps; ++r) {
    start.record(s);
    for (int k = 0; k < o.steps; ++k) b.step(s, sub);
    stop.record(s);
    stop.synchronize();
    rates.push_back(double(n) * o.steps / (elapsed_ms(start, stop) * 1e-3));
  }
  nlohmann::json line =
      gmi::metrics::result_line(run, "physics", "gmi", "steps_per_s", gmi::metrics::summarize(rates));
  line.update({{"task", T::name}, {"num_envs", n}, {"gmis_per_gpu", 1}, {"partition", "none"}, {"gpus", 1},
               {"steps_per_rep", o.steps}, {"substeps", sub}, {"physics_only", true}, {"precision", "float"},
               {"what", "env steps, physics only (the task's substeps each), fixed controls"}, {"path", path},
               {"bytes_per_env", b.bytes_per_env()}});
  line.update(extra);
  std::cout << line.dump() << std::endl;
  if (file) file << line.dump() << '\n';
}

template <class T>
void task_bench<T>::physics(const options& o, const gmi::metrics::run_info& run, std::ofstream& file) {
  using M = typename T::sim::model_type;
  const int sub = substeps_of<T>();
  for (const int n : o.envs) {
    gmi::cuda::stream stream;
    gmi::physics::local_batch<M> b(n, stream.get());
    std::vector<float> ctrl(std::size_t(T::sim::nu) * n);
    for (int u = 0; u < T::sim::nu; ++u)
      for (int e = 0; e < n; ++e) ctrl[std::size_t(u) * n + e] = 0.8f * std::sin(0.1f * e + u);
    GMI_CUDA_TRY(cudaMemcpyAsync(b.ctrl(), ctrl.data(), ctrl.size() * sizeof(float), cudaMemcpyHostToDevice,
                                 stream.get()));
    for (int s = 0; s < o.warmup; ++s) b.step(stream.get(), sub);
    gmi::cuda::event start(gmi::cuda::event::timing::enabled), stop(gmi::cuda::event::timing::enabled);
    std::vector<double> rates;
    for (int r = 0; r < o.reps; ++r) {
      start.record(stream.get());
      for (int s = 0; s < o.steps; ++s) b.step(stream.get(), sub);
      stop.record(stream.get());
      stop.synchronize();
      rates.push_back(double(n) * o.steps * sub / (elapsed_ms(start, stop) * 1e-3));
    }
    nlohmann::json line =
        gmi::metrics::result_line(run, "physics", "gmi", "steps_per_s", gmi::metrics::summarize(rates));
    line.update({{"task", T::name}, {"num_envs", n}, {"gmis_per_gpu", 1}, {"partition", "none"}, {"gpus", 1},
                 {"steps_per_rep", o.steps * sub}, {"physics_only", true}, {"precision", "float"},
                 {"layout", "local scratch, thread per env (batch_local.cuh)"},
                 {"bytes_per_env", b.bytes_per_env()}, {"scratch_bytes_per_env", b.scratch_bytes_per_env()}});
    std::cout << line.dump() << std::endl;
    if (file) file << line.dump() << '\n';
  }
}

template <class T>
void task_bench<T>::compare_paths(const options& o, const gmi::metrics::run_info& run, std::ofstream& file) {
  using M = typename T::sim::model_type;
  for (const int n : o.envs) {
    gmi::cuda::stream stream;
    {
      gmi::physics::local_batch<M> b(n, stream.get());
      bench_path<T>(o, run, file, b, n, "thread_per_env",
                    {{"layout", "batch_local.cuh"}, {"scratch_bytes_per_env", b.scratch_bytes_per_env()}},
                    stream.get());
    }
    for (const int lanes : o.tile_lanes) {
      for (const std::string& rows : o.solver_rows) {
        for (const int w : o.warps_per_block) {
          const gmi::physics::tile_layout layout{lanes != 0 ? lanes : gmi::physics::default_tile_lanes(M::sizes()),
                                                 rows == "global"};
          gmi::physics::warp_batch<M> b(n, stream.get(), w, layout);
          const gmi::physics::tile_plan& plan = b.plan();
          bench_path<T>(o, run, file, b, n, "warp_per_env",
                        {{"layout", "batch_warp.cuh"}, {"lanes", layout.lanes}, {"solver_rows", rows},
                         {"envs_per_block", plan.envs_per_block}, {"warps_per_block", b.warps_per_block()},
                         {"resident_envs_per_sm", plan.resident_envs_per_sm}, {"blocks", b.blocks()},
                         {"registers_per_thread", plan.registers_per_thread},
                         {"tile_max_registers", GMI_PHYSICS_TILE_MAX_REGISTERS},
                         {"shared_bytes_per_block", b.shared_bytes()},
                         {"scratch_bytes_per_env", b.scratch_bytes_per_env(layout)},
                         {"spill_bytes", b.spill_bytes()}},
                        stream.get());
        }
      }
    }
  }
}

template <class T>
void task_bench<T>::driver(const options& o, const gmi::metrics::run_info& run, std::ofstream& file,
                            const std::vector<gmi::physics::step_path>& paths) {
  for (const int n : o.envs) {
    for (const gmi::physics::step_path path : paths) {
      gmi::cuda::stream stream;
      typename T::params params{};
      params.step_path = path;
      gmi::rl::env_batch<T, gmi::exec::cuda> b(n, 1, params, gmi::exec::cuda{stream.get()});
      gmi::cuda::device_buffer<float> obs(std::size_t(n) * T::obs_dim), act(std::size_t(n) * T::act_dim), rew(n);
      gmi::cuda::device_buffer<std::uint8_t> te(n), tr(n);
      b.reset(obs.span(), stream.get());
      std::uint64_t step = 0;
      auto steps = [&](int count) {
        for (int s = 0; s < count; ++s) {
          gmi::exec::for_each(gmi::exec::cuda{stream.get()}, n, random_actions<T>{act.data(), step++});
          b.step(act, obs.span(), rew.span(), te.span(), tr.span(), stream.get());
        }
      };
      steps(o.warmup);
      gmi::cuda::event start(gmi::cuda::event::timing::enabled), stop(gmi::cuda::event::timing::enabled);
      std::vector<double> rates;
      for (int r = 0; r < o.reps; ++r) {
        start.record(stream.get());
        steps(o.steps);
        stop.record(stream.get());
        stop.synchronize();
        rates.push_back(double(n) * o.steps / (elapsed_ms(start, stop) * 1e-3));
      }
      const gmi::rl::episode_stats stats = b.read_stats(stream.get());
      const typename T::params p{};
      nlohmann::json line =
          gmi::metrics::result_line(run, "physics", "gmi", "steps_per_s", gmi::metrics::summarize(rates));
      line.update({{"task", T::name}, {"num_envs", n}, {"gmis_per_gpu", 1}, {"partition", "none"}, {"gpus", 1},
                   {"steps_per_rep", o.steps}, {"physics_only", false}, {"precision", "float"},
                   {"what", "env steps: physics + observation + reward + auto-reset, random actions"},
                   {"layout", "env_batch: state word-major"},
                   {"driver", "env_batch<exec::cuda>::step (training and serving's env driver)"},
                   {"path", gmi::rl::env_step_path_name(b)},
                   {"chosen", gmi::rl::env_step_path_name<T>(typename T::params{}, std::size_t(n))},
                   {"asked", gmi::physics::step_path_name(path)},
                   {"solver_iterations", p.solver_iterations}, {"solver_tolerance", p.solver_tolerance},
                   {"physics_dt", T::sim::model_type::options().timestep},
                   {"physics_substeps", T::physics_substeps(p)},
                   {"control_dt", T::sim::model_type::options().timestep * T::physics_substeps(p)},
                   {"state_bytes_per_env", sizeof(typename T::state)},
                   {"scratch_bytes_per_env", T::sim::scratch_reals * sizeof(float)},
                   {"episodes_finished", stats.episodes}, {"mean_episode_length", stats.mean_length()}});
      if (std::string(gmi::rl::env_step_path_name(b)) == "staged_per_env") {
        const int block = gmi::physics::requested_staged_block();
        const int slice = gmi::rl::staged_slice_reals_for(std::size_t(n), block);
        std::vector<int> placed;
        for (int k = 0; k < gmi::physics::step_stages; ++k)
          placed.push_back(gmi::physics::stage_shared_used(T::sim::sizes_v, k, slice));
        line.update({{"staged_block", block},
                     {"staged_shared_reals", gmi::physics::requested_staged_shared_reals()},
                     {"staged_slice_reals", slice}, {"staged_slice_floats_per_stage", placed},
                     {"staged_kernels_per_step", 2 + gmi::physics::step_stages * T::physics_substeps(p)},
                     {"staged_bytes_per_env", gmi::rl::staged_bytes<T>(1)}});
      } else if (std::string(gmi::rl::env_step_path_name(b)) == "warp_per_env") {
        const gmi::physics::tile_plan plan = gmi::rl::warp_env_plan<T>();
        line.update({{"lanes", plan.layout.lanes}, {"solver_rows", plan.layout.spill_rows ? "global" : "shared"},
                     {"envs_per_block", plan.envs_per_block}, {"resident_envs_per_sm", plan.resident_envs_per_sm},
                     {"registers_per_thread", plan.registers_per_thread}, {"shared_bytes_per_block", plan.shared_bytes},
                     {"tile_max_registers", GMI_PHYSICS_TILE_MAX_REGISTERS},
                     {"shared_bytes_per_env",
                      gmi::physics::warp_batch<typename T::sim::model_type>::scratch_bytes_per_env(plan.layout)}});
      } else {
        const int slice = gmi::rl::physics_thread_shared_reals<T>();
        line.update({{"thread_min_blocks", gmi::rl::physics_thread_min_blocks}, {"thread_shared_reals", slice},
                     {"thread_max_l1", slice == 0 && gmi::physics::requested_thread_max_l1()},
                     {"thread_shared_used", gmi::physics::thread_shared_used(T::sim::sizes_v, slice)},
                     {"thread_kernel", slice > 0 ? "physics_thread_shared_kernel (128 a block, launch bound 4)"
                                                 : "physics_thread_step_kernel (256 a block, launch bound "
                                                   "GMI_PHYSICS_THREAD_MIN_BLOCKS)"}});
      }
      std::cout << line.dump() << std::endl;
      if (file) file << line.dump() << '\n';
    }
  }
}
}  // namespace physics_tasks_bench

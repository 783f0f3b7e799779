#pragma once
// The definitions of physics_task_runs<T> (physics_task_runs.hpp): env_batch<T, exec::cuda> and the task's model in
// physics/batch_local.cuh and batch_warp.cuh on the device. Included only by the per-task files
// (physics_tasks_runs_<task>.cu), each of which instantiates it for one task.
#include "device_run.cuh"
#include "physics_task_runs.hpp"

#include <string>
#include <utility>

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/physics/batch_local.cuh>
#include <gmi/physics/batch_warp.cuh>
#include <gmi/rl/batched_dynamics.cuh>
#include <gmi/rl/env_batch.cuh>

// qpos (nq x n) then qvel (nv x n) of batch b after `launches` launches of `substeps` steps under ctrl.
template <class B>
std::vector<float> run_batch(B& b, const std::vector<float>& ctrl, int launches, int substeps, cudaStream_t s) {
  using sim = typename B::sim;
  const std::size_t n = static_cast<std::size_t>(b.num_envs());
  gmi::require(ctrl.size() == std::size_t(sim::nu) * n, "run_physics_layout ctrl size", ctrl.size(),
               "== nu x num_envs = " + std::to_string(std::size_t(sim::nu) * n));
  GMI_CUDA_TRY(cudaMemcpyAsync(b.ctrl(), ctrl.data(), ctrl.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  for (int l = 0; l < launches; ++l) b.step(s, substeps);
  std::vector<float> out((sim::nq + sim::nv) * n);
  GMI_CUDA_TRY(cudaMemcpyAsync(out.data(), b.qpos(), sim::nq * n * sizeof(float), cudaMemcpyDeviceToHost, s));
  GMI_CUDA_TRY(cudaMemcpyAsync(out.data() + sim::nq * n, b.qvel(), sim::nv * n * sizeof(float),
                               cudaMemcpyDeviceToHost, s));
  GMI_CUDA_TRY(cudaStreamSynchronize(s));
  return out;
}

template <class T>
trajectory physics_task_runs<T>::run(int n, int steps, std::uint64_t seed, std::uint64_t action_seed) {
  device_run<T> r(n, seed, typename T::params{});
  for (int t = 0; t < steps; ++t) r.step(action_seed, t);
  r.out.stats = r.batch.read_stats(r.stream.get());
  return std::move(r.out);
}

template <class T>
trajectory physics_task_runs<T>::run_from(int n, std::uint64_t seed, std::uint64_t action_seed,
                                           const std::vector<batch_snapshot>& before) {
  device_run<T> r(n, seed, typename T::params{});
  for (std::size_t t = 0; t < before.size(); ++t) {
    batch_snapshot s = before[t];
    r.batch.visit_state([&](const char* name, auto span) {
      std::size_t bytes = 0;
      const void* from = s.array(name, bytes);
      gmi::require(from != nullptr && bytes == span.size_bytes(), "step_physics_task_gpu_from snapshot bytes",
                   bytes, "== " + std::to_string(span.size_bytes()));
      GMI_CUDA_TRY(cudaMemcpyAsync(span.data(), from, bytes, cudaMemcpyHostToDevice, r.stream.get()));
    });
    r.step(action_seed, int(t));  // synchronizes: the snapshot copy s outlives its upload
  }
  return std::move(r.out);
}

template <class T>
std::string physics_task_runs<T>::path_of(int n) {
  gmi::cuda::stream stream;
  gmi::rl::env_batch<T, gmi::exec::cuda> b(n, 1, typename T::params{}, gmi::exec::cuda{stream.get()});
  return gmi::rl::env_step_path_name(b);
}

template <class T>
std::vector<float> physics_task_runs<T>::run_layout(bool warp, int n, const std::vector<float>& ctrl, int launches,
                                                     int substeps, gmi::physics::tile_layout layout, int max_blocks) {
  using M = typename T::sim::model_type;
  gmi::cuda::stream stream;
  if (warp) {
    gmi::physics::warp_batch<M> b(n, stream.get(), 0, layout, max_blocks);
    return run_batch(b, ctrl, launches, substeps, stream.get());
  }
  gmi::physics::local_batch<M> b(n, stream.get());
  return run_batch(b, ctrl, launches, substeps, stream.get());
}

// Thread per env free-running; before each launch the warp batch takes its state. Appends both after each.
template <class T>
std::pair<std::vector<float>, std::vector<float>> physics_task_runs<T>::run_stepwise(
    int n, const std::vector<float>& ctrl, int launches, int substeps, gmi::physics::tile_layout layout,
    int max_blocks) {
  using M = typename T::sim::model_type;
  using sim = gmi::physics::builtin_sim<M>;
  gmi::cuda::stream stream;
  const cudaStream_t s = stream.get();
  gmi::physics::local_batch<M> t(n, s);
  gmi::physics::warp_batch<M> w(n, s, 0, layout, max_blocks);
  std::pair<std::vector<float>, std::vector<float>> out;
  const std::size_t nn = static_cast<std::size_t>(n);
  for (int l = 0; l < launches; ++l) {
    GMI_CUDA_TRY(cudaMemcpyAsync(w.qpos(), t.qpos(), sim::nq * nn * sizeof(float), cudaMemcpyDeviceToDevice, s));
    GMI_CUDA_TRY(cudaMemcpyAsync(w.qvel(), t.qvel(), sim::nv * nn * sizeof(float), cudaMemcpyDeviceToDevice, s));
    const std::vector<float> a = run_batch(t, ctrl, 1, substeps, s);
    const std::vector<float> b = run_batch(w, ctrl, 1, substeps, s);
    out.first.insert(out.first.end(), a.begin(), a.end());
    out.second.insert(out.second.end(), b.begin(), b.end());
  }
  return out;
}

template <class T>
paired_paths physics_task_runs<T>::both_paths(int n, int steps, std::uint64_t seed, std::uint64_t action_seed,
                                              bool via_dynamics) {
  gmi::cuda::stream stream;
  const cudaStream_t s = stream.get();
  typename T::params pt{}, pw{};
  pt.step_path = gmi::physics::step_path::threads;
  pw.step_path = gmi::physics::step_path::warp;
  gmi::rl::env_batch<T, gmi::exec::cuda> bt(n, seed, pt, gmi::exec::cuda{s});
  gmi::rl::env_batch<T, gmi::exec::cuda> bw(n, seed, pw, gmi::exec::cuda{s});
  paired_paths out;
  out.threads_path = gmi::rl::env_step_path_name(bt);
  out.warp_path = gmi::rl::env_step_path_name(bw);
  out.auto_path = gmi::rl::env_step_path_name<T>(typename T::params{}, std::size_t(n));
  // The batched rollout's env step (training's and serving's batched path) over the warp batch's storage.
  gmi::rl::batched_dynamics<T> dynamics(std::size_t(n), gmi::nn::precision::fp32);
  if (via_dynamics) {
    dynamics.choose(bw.params());
    out.warp_path = dynamics.path();
  }
  gmi::cuda::device_buffer<float> act(std::size_t(n) * T::act_dim);
  struct rows {
    gmi::cuda::device_buffer<float> obs, rew;
    gmi::cuda::device_buffer<std::uint8_t> te, tr;
  };
  const std::size_t nn = std::size_t(n);
  rows rt{gmi::cuda::device_buffer<float>(nn * T::obs_dim), gmi::cuda::device_buffer<float>(nn),
          gmi::cuda::device_buffer<std::uint8_t>(nn), gmi::cuda::device_buffer<std::uint8_t>(nn)};
  rows rw{gmi::cuda::device_buffer<float>(nn * T::obs_dim), gmi::cuda::device_buffer<float>(nn),
          gmi::cuda::device_buffer<std::uint8_t>(nn), gmi::cuda::device_buffer<std::uint8_t>(nn)};
  bt.reset(rt.obs.span(), s);
  bw.reset(rw.obs.span(), s);
  append_rows(out.threads.obs, rt.obs, s);
  append_rows(out.warp.obs, rw.obs, s);
  for (int t = 0; t < steps; ++t) {
    // The warp batch takes the thread batch's states, array by array (visit_state's order is the same in both).
    std::vector<std::pair<void*, std::size_t>> from;
    bt.visit_state([&](const char*, auto span) { from.emplace_back(span.data(), span.size_bytes()); });
    std::size_t k = 0;
    bw.visit_state([&](const char* name, auto span) {
      gmi::require(k < from.size() && from[k].second == span.size_bytes(), "both_paths state array bytes",
                   span.size_bytes(), std::string("those of the thread batch's ") + name);
      GMI_CUDA_TRY(cudaMemcpyAsync(span.data(), from[k].first, from[k].second, cudaMemcpyDeviceToDevice, s));
      ++k;
    });
    gmi::exec::for_each(gmi::exec::cuda{s}, n, test_action_fn<T>{act.data(), action_seed, t});
    bt.step(act, rt.obs.span(), rt.rew.span(), rt.te.span(), rt.tr.span(), s);
    if (via_dynamics) {
      dynamics.step(bw.view(), act.data(),
                    gmi::rl::batch_step_out{rw.rew.data(), rw.te.data(), rw.tr.data(), rw.obs.data(), nullptr}, s);
    } else {
      bw.step(act, rw.obs.span(), rw.rew.span(), rw.te.span(), rw.tr.span(), s);
    }
    for (auto [r, tr] : {std::pair{&rt, &out.threads}, std::pair{&rw, &out.warp}}) {
      append_rows(tr->obs, r->obs, s);
      append_rows(tr->rewards, r->rew, s);
      append_rows(tr->terminated, r->te, s);
      append_rows(tr->truncated, r->tr, s);
    }
  }
  out.threads.stats = bt.read_stats(s);
  out.warp.stats = bw.read_stats(s);
  return out;
}

template <class T>
rule_probe physics_task_runs<T>::probe_rule() {
  const gmi::physics::step_path_inputs in = gmi::rl::physics_step_inputs<T>(1);
  rule_probe r;
  r.resident_envs_per_sm = in.resident_envs_per_sm;
  r.sm_count = in.sm_count;
  r.shared_bytes_per_env = in.scratch_bytes_per_env;
  const gmi::physics::tile_plan plan = gmi::rl::warp_env_plan<T>();
  r.lanes = plan.layout.lanes;
  r.envs_per_block = plan.envs_per_block;
  const std::size_t bound = gmi::physics::warp_max_waves * in.resident_envs_per_sm * in.sm_count;
  const typename T::params p{};
  r.at_bound = gmi::rl::env_step_path_name<T>(p, bound);
  r.past_bound = gmi::rl::env_step_path_name<T>(p, bound + 1);
  return r;
}

// The device side of physics_tasks_gpu_test.cpp: env_batch<task, exec::cuda> for ant, humanoid, anymal, isaac_ant and
// isaac_humanoid.
#include "physics_tasks_runs.hpp"

#include <stdexcept>
#include <utility>
#include <string>

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/ant.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid.hpp>
#include <gmi/envs/isaac_ant.hpp>
#include <gmi/envs/isaac_humanoid.hpp>
#include <gmi/physics/batch_local.cuh>
#include <gmi/physics/batch_warp.cuh>
#include <gmi/rl/batched_dynamics.cuh>
#include <gmi/rl/env_batch.cuh>

namespace {
// Calls f.template operator()<T>() for the physics task named `task`; another name: invalid_argument naming `what`.
template <class F>
decltype(auto) with_physics_task(std::string_view task, const char* what, F&& f) {
  if (task == "ant") return f.template operator()<gmi::envs::ant>();
  if (task == "humanoid") return f.template operator()<gmi::envs::humanoid>();
  if (task == "anymal") return f.template operator()<gmi::envs::anymal>();
  if (task == "isaac_ant") return f.template operator()<gmi::envs::isaac_ant>();
  if (task == "isaac_humanoid") return f.template operator()<gmi::envs::isaac_humanoid>();
  throw std::invalid_argument(std::string(what) + ": task: got " + std::string(task) +
                              ", need ant, humanoid, anymal, isaac_ant or isaac_humanoid");
}

template <class T>
struct physics_action_fn {
  float* act;
  std::uint64_t action_seed;
  int t;
  __device__ void operator()(std::size_t i) const {
    for (int k = 0; k < T::act_dim; ++k) act[i * T::act_dim + k] = test_action(action_seed, t, i, T::act_dim, k);
  }
};

template <class T>
void append_rows(std::vector<T>& out, const gmi::cuda::device_buffer<T>& d, cudaStream_t s) {
  const std::size_t at = out.size();
  out.resize(at + d.size());
  GMI_CUDA_TRY(cudaMemcpyAsync(out.data() + at, d.data(), d.size_bytes(), cudaMemcpyDeviceToHost, s));
  GMI_CUDA_TRY(cudaStreamSynchronize(s));
}

template <class T>
trajectory run(int n, int steps, std::uint64_t seed, std::uint64_t action_seed) {
  gmi::cuda::stream stream;
  gmi::rl::env_batch<T, gmi::exec::cuda> b(n, seed, typename T::params{}, gmi::exec::cuda{stream.get()});
  gmi::cuda::device_buffer<float> obs(std::size_t(n) * T::obs_dim), act(std::size_t(n) * T::act_dim), rew(n);
  gmi::cuda::device_buffer<std::uint8_t> te(n), tr(n);
  trajectory out;
  b.reset(obs.span(), stream.get());
  append_rows(out.obs, obs, stream.get());
  for (int t = 0; t < steps; ++t) {
    gmi::exec::for_each(gmi::exec::cuda{stream.get()}, n, physics_action_fn<T>{act.data(), action_seed, t});
    b.step(act, obs.span(), rew.span(), te.span(), tr.span(), stream.get());
    append_rows(out.obs, obs, stream.get());
    append_rows(out.rewards, rew, stream.get());
    append_rows(out.terminated, te, stream.get());
    append_rows(out.truncated, tr, stream.get());
  }
  out.stats = b.read_stats(stream.get());
  return out;
}

template <class T>
trajectory run_from(int n, std::uint64_t seed, std::uint64_t action_seed, const std::vector<batch_snapshot>& before) {
  gmi::cuda::stream stream;
  gmi::rl::env_batch<T, gmi::exec::cuda> b(n, seed, typename T::params{}, gmi::exec::cuda{stream.get()});
  gmi::cuda::device_buffer<float> obs(std::size_t(n) * T::obs_dim), act(std::size_t(n) * T::act_dim), rew(n);
  gmi::cuda::device_buffer<std::uint8_t> te(n), tr(n);
  trajectory out;
  b.reset(obs.span(), stream.get());
  append_rows(out.obs, obs, stream.get());
  for (std::size_t t = 0; t < before.size(); ++t) {
    batch_snapshot s = before[t];
    b.visit_state([&](const char* name, auto span) {
      std::size_t bytes = 0;
      const void* from = s.array(name, bytes);
      gmi::require(from != nullptr && bytes == span.size_bytes(), "step_physics_task_gpu_from snapshot bytes",
                   bytes, "== " + std::to_string(span.size_bytes()));
      GMI_CUDA_TRY(cudaMemcpyAsync(span.data(), from, bytes, cudaMemcpyHostToDevice, stream.get()));
    });
    gmi::exec::for_each(gmi::exec::cuda{stream.get()}, n, physics_action_fn<T>{act.data(), action_seed, int(t)});
    b.step(act, obs.span(), rew.span(), te.span(), tr.span(), stream.get());
    append_rows(out.obs, obs, stream.get());  // synchronizes: the snapshot copy s outlives its upload
    append_rows(out.rewards, rew, stream.get());
    append_rows(out.terminated, te, stream.get());
    append_rows(out.truncated, tr, stream.get());
  }
  return out;
}
}  // namespace

trajectory step_physics_task_gpu_from(std::string_view task, int n, std::uint64_t seed, std::uint64_t action_seed,
                                      const std::vector<batch_snapshot>& before) {
  return with_physics_task(task, "step_physics_task_gpu_from",
                           [&]<class T>() { return run_from<T>(n, seed, action_seed, before); });
}

namespace {
template <class T>
std::string path_of(int n) {
  gmi::cuda::stream stream;
  gmi::rl::env_batch<T, gmi::exec::cuda> b(n, 1, typename T::params{}, gmi::exec::cuda{stream.get()});
  return gmi::rl::env_step_path_name(b);
}
}  // namespace

std::string physics_task_path_gpu(std::string_view task, int n) {
  return with_physics_task(task, "physics_task_path_gpu", [&]<class T>() { return path_of<T>(n); });
}

trajectory run_physics_task_gpu(std::string_view task, int n, int steps, std::uint64_t seed,
                                std::uint64_t action_seed) {
  return with_physics_task(task, "run_physics_task_gpu",
                           [&]<class T>() { return run<T>(n, steps, seed, action_seed); });
}

std::vector<float> run_local_batch_ant(int n, const std::vector<float>& ctrl, int launches, int substeps) {
  using M = gmi::envs::ant::sim::model_type;
  gmi::cuda::stream stream;
  gmi::physics::local_batch<M> b(n, stream.get());
  GMI_CUDA_TRY(cudaMemcpyAsync(b.ctrl(), ctrl.data(), ctrl.size() * sizeof(float), cudaMemcpyHostToDevice,
                               stream.get()));
  for (int l = 0; l < launches; ++l) b.step(stream.get(), substeps);
  std::vector<float> q(std::size_t(gmi::envs::ant::sim::nq) * n);
  GMI_CUDA_TRY(cudaMemcpyAsync(q.data(), b.qpos(), q.size() * sizeof(float), cudaMemcpyDeviceToHost, stream.get()));
  GMI_CUDA_TRY(cudaStreamSynchronize(stream.get()));
  return q;
}

namespace {
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

template <class M>
std::vector<float> run_layout(bool warp, int n, const std::vector<float>& ctrl, int launches, int substeps,
                              gmi::physics::tile_layout layout, int max_blocks) {
  gmi::cuda::stream stream;
  if (warp) {
    gmi::physics::warp_batch<M> b(n, stream.get(), 0, layout, max_blocks);
    return run_batch(b, ctrl, launches, substeps, stream.get());
  }
  gmi::physics::local_batch<M> b(n, stream.get());
  return run_batch(b, ctrl, launches, substeps, stream.get());
}
// Thread per env free-running; before each launch the warp batch takes its state. Appends both after each.
template <class M>
std::pair<std::vector<float>, std::vector<float>> run_stepwise(int n, const std::vector<float>& ctrl, int launches,
                                                               int substeps, gmi::physics::tile_layout layout,
                                                               int max_blocks) {
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
}  // namespace

std::pair<std::vector<float>, std::vector<float>> run_physics_layouts_stepwise(std::string_view task, int n,
                                                                               const std::vector<float>& ctrl,
                                                                               int launches, int substeps,
                                                                               gmi::physics::tile_layout layout,
                                                                               int max_blocks) {
  return with_physics_task(task, "run_physics_layouts_stepwise", [&]<class T>() {
    return run_stepwise<typename T::sim::model_type>(n, ctrl, launches, substeps, layout, max_blocks);
  });
}

std::vector<float> run_physics_layout(std::string_view task, bool warp_per_env, int n, const std::vector<float>& ctrl,
                                      int launches, int substeps, gmi::physics::tile_layout layout, int max_blocks) {
  return with_physics_task(task, "run_physics_layout", [&]<class T>() {
    return run_layout<typename T::sim::model_type>(warp_per_env, n, ctrl, launches, substeps, layout, max_blocks);
  });
}

namespace {
template <class T>
paired_paths both_paths(int n, int steps, std::uint64_t seed, std::uint64_t action_seed, bool via_dynamics) {
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
    gmi::exec::for_each(gmi::exec::cuda{s}, n, physics_action_fn<T>{act.data(), action_seed, t});
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
}  // namespace

paired_paths step_physics_task_both_paths(std::string_view task, int n, int steps, std::uint64_t seed,
                                          std::uint64_t action_seed, bool via_dynamics, int lanes, bool spill_rows) {
  // The layout for this run only; a throw in between leaves the default too.
  struct layout_guard {
    ~layout_guard() { gmi::physics::request_tile_layout(0, "shared"); }
  } guard;
  gmi::physics::request_tile_layout(lanes, spill_rows ? "global" : "shared");
  return with_physics_task(task, "step_physics_task_both_paths",
                           [&]<class T>() { return both_paths<T>(n, steps, seed, action_seed, via_dynamics); });
}

namespace {
template <class T>
rule_probe probe_rule() {
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
}  // namespace

rule_probe probe_physics_rule(std::string_view task, int lanes, bool spill_rows) {
  struct layout_guard {
    ~layout_guard() { gmi::physics::request_tile_layout(0, "shared"); }
  } guard;
  gmi::physics::request_tile_layout(lanes, spill_rows ? "global" : "shared");
  return with_physics_task(task, "probe_physics_rule", []<class T>() { return probe_rule<T>(); });
}

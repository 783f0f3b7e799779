#pragma once
// The device runs' shared pieces (gpu_runs.cu, physics_task_runs.cuh): test_action drawn on the device, a device
// buffer's rows appended to a host vector, and an env_batch<T, exec::cuda> stepped under test_action with every
// step's rows appended to a trajectory.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/rl/env_batch.cuh>

#include "gpu_runs.hpp"

// Writes test_action(action_seed, t, i, ...) into environment i's actions.
template <class T>
struct test_action_fn {
  float* act;
  std::uint64_t action_seed;
  int t;
  __device__ void operator()(std::size_t i) const {
    for (int k = 0; k < T::act_dim; ++k) act[i * T::act_dim + k] = test_action(action_seed, t, i, T::act_dim, k);
  }
};

// Appends d's contents to out (synchronizes s).
template <class T>
void append_rows(std::vector<T>& out, const gmi::cuda::device_buffer<T>& d, cudaStream_t s) {
  const std::size_t at = out.size();
  out.resize(at + d.size());
  GMI_CUDA_TRY(cudaMemcpyAsync(out.data() + at, d.data(), d.size_bytes(), cudaMemcpyDeviceToHost, s));
  GMI_CUDA_TRY(cudaStreamSynchronize(s));
}

// n environments of T from seed under params, reset at construction (its first observations open out).
template <class T>
struct device_run {
  gmi::cuda::stream stream;
  gmi::rl::env_batch<T, gmi::exec::cuda> batch;
  gmi::cuda::device_buffer<float> obs, act, rew;
  gmi::cuda::device_buffer<std::uint8_t> te, tr;
  trajectory out;

  device_run(int n, std::uint64_t seed, const typename T::params& params,
             gmi::rl::episode_start start = gmi::rl::episode_start::first_step)
      : batch(n, seed, params, gmi::exec::cuda{stream.get()}), obs(std::size_t(n) * T::obs_dim),
        act(std::size_t(n) * T::act_dim), rew(n), te(n), tr(n) {
    batch.reset(obs.span(), stream.get(), start);
    append_rows(out.obs, obs, stream.get());
  }

  // One step under test_action(action_seed, t, ...); appends its observations, rewards and flags (synchronizes).
  void step(std::uint64_t action_seed, int t) {
    gmi::exec::for_each(gmi::exec::cuda{stream.get()}, batch.num_envs(),
                        test_action_fn<T>{act.data(), action_seed, t});
    batch.step(act, obs.span(), rew.span(), te.span(), tr.span(), stream.get());
    append_rows(out.obs, obs, stream.get());
    append_rows(out.rewards, rew, stream.get());
    append_rows(out.terminated, te, stream.get());
    append_rows(out.truncated, tr, stream.get());
  }
};

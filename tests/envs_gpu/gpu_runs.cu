#include "gpu_runs.hpp"

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/registry.hpp>
#include <gmi/rl/env_batch.cuh>

namespace {
template <class T>
struct action_fn {
  float* act;
  std::uint64_t action_seed;
  int t;
  __device__ void operator()(std::size_t i) const {
    for (int k = 0; k < T::act_dim; ++k) act[i * T::act_dim + k] = test_action(action_seed, t, i, T::act_dim, k);
  }
};

template <class T>
void append(std::vector<T>& out, const gmi::cuda::device_buffer<T>& d, cudaStream_t s) {
  const std::size_t at = out.size();
  out.resize(at + d.size());
  GMI_CUDA_TRY(cudaMemcpyAsync(out.data() + at, d.data(), d.size_bytes(), cudaMemcpyDeviceToHost, s));
  GMI_CUDA_TRY(cudaStreamSynchronize(s));
}
}  // namespace

trajectory run_gpu(std::string_view task, int n, int steps, std::uint64_t seed, std::uint64_t action_seed,
                   int max_steps, gmi::rl::episode_start start) {
  return gmi::envs::visit_task(task, [&]<class T>() {
    gmi::cuda::stream stream;
    typename T::params params{};
    if (max_steps > 0) params.max_steps = max_steps;
    gmi::rl::env_batch<T, gmi::exec::cuda> b(n, seed, params, gmi::exec::cuda{stream.get()});
    gmi::cuda::device_buffer<float> obs(std::size_t(n) * T::obs_dim), act(std::size_t(n) * T::act_dim), rew(n);
    gmi::cuda::device_buffer<std::uint8_t> te(n), tr(n);
    trajectory out;
    b.reset(obs.span(), stream.get(), start);
    append(out.obs, obs, stream.get());
    for (int t = 0; t < steps; ++t) {
      gmi::exec::for_each(gmi::exec::cuda{stream.get()}, n, action_fn<T>{act.data(), action_seed, t});
      b.step(act, obs.span(), rew.span(), te.span(), tr.span(), stream.get());
      append(out.obs, obs, stream.get());
      append(out.rewards, rew, stream.get());
      append(out.terminated, te, stream.get());
      append(out.truncated, tr, stream.get());
    }
    b.request_stats(stream.get());
    while (true) {
      if (auto s = b.poll_stats()) {
        out.stats = *s;
        break;
      }
    }
    return out;
  });
}

namespace {
__global__ void fused_cartpole(gmi::rl::env_batch_view<gmi::envs::cartpole> v, float* obs, int steps) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= v.num_envs) return;
  float o[4];
  v.reset_one(i, o);
  for (int t = 0; t < steps; ++t) {
    const float a = 0.1f * o[0] + 0.2f * o[1] + 3.0f * o[2] + 0.5f * o[3];
    v.step_one(i, &a, o);
  }
  for (int k = 0; k < 4; ++k) obs[i * 4 + k] = o[k];
}
}  // namespace

std::vector<float> run_gpu_fused_cartpole(int n, int steps, std::uint64_t seed) {
  gmi::cuda::stream stream;
  gmi::rl::env_batch<gmi::envs::cartpole, gmi::exec::cuda> b(n, seed, {}, gmi::exec::cuda{stream.get()});
  gmi::cuda::device_buffer<float> obs(std::size_t(n) * 4);
  fused_cartpole<<<(n + 127) / 128, 128, 0, stream.get()>>>(b.view(), obs.data(), steps);
  GMI_CUDA_TRY(cudaGetLastError());
  std::vector<float> out(obs.size());
  GMI_CUDA_TRY(cudaMemcpyAsync(out.data(), obs.data(), obs.size_bytes(), cudaMemcpyDeviceToHost, stream.get()));
  GMI_CUDA_TRY(cudaStreamSynchronize(stream.get()));
  return out;
}

#include "gpu_runs.hpp"

#include <utility>

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/registry.hpp>
#include <gmi/rl/env_batch.cuh>

#include "device_run.cuh"

trajectory run_gpu(std::string_view task, int n, int steps, std::uint64_t seed, std::uint64_t action_seed,
                   int max_steps, gmi::rl::episode_start start) {
  return gmi::envs::visit_task(task, [&]<class T>() {
    typename T::params params{};
    if (max_steps > 0) params.max_steps = max_steps;
    device_run<T> r(n, seed, params, start);
    for (int t = 0; t < steps; ++t) r.step(action_seed, t);
    r.batch.request_stats(r.stream.get());
    while (true) {
      if (auto s = r.batch.poll_stats()) {
        r.out.stats = *s;
        break;
      }
    }
    return std::move(r.out);
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

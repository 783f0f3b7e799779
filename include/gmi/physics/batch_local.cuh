#pragma once
// A second batched device layout for built-in models (sizes known at compile time): only qpos, qvel and ctrl
// live in global memory (element-major), and each thread runs the pipeline in a scratch array local to the
// kernel (per-thread local memory, interleaved across a warp by the hardware, offsets fixed at compile time).
// batch.cuh keeps every pipeline array in global memory instead. This is the layout the physics tasks run in
// (builtin_task.hpp); gmi.bench.physics_tasks --physics-only measures it beside batch.cuh. Needs nvcc.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/exec/cuda.cuh>
#include <gmi/physics/builtin_task.hpp>

namespace gmi::physics {

namespace detail {
template <class M>
struct local_step_envs {
  model_view<float> m;
  float* qpos;
  float* qvel;
  const float* ctrl;
  int n;
  int substeps;
  GMI_DEVICE void operator()(std::size_t i) const {
    using sim = builtin_sim<M>;
    float q[sim::nq], v[sim::nv], c[sim::nu > 0 ? sim::nu : 1];
    for (int k = 0; k < sim::nq; ++k) q[k] = qpos[static_cast<std::size_t>(k) * n + i];
    for (int k = 0; k < sim::nv; ++k) v[k] = qvel[static_cast<std::size_t>(k) * n + i];
    for (int k = 0; k < sim::nu; ++k) c[k] = ctrl[static_cast<std::size_t>(k) * n + i];
    float scratch[sim::scratch_reals];
    sim::simulate(m, scratch, q, v, c, substeps);
    for (int k = 0; k < sim::nq; ++k) qpos[static_cast<std::size_t>(k) * n + i] = q[k];
    for (int k = 0; k < sim::nv; ++k) qvel[static_cast<std::size_t>(k) * n + i] = v[k];
  }
};
}  // namespace detail

// num_envs environments of the built-in model M (a *_model.hpp struct), element-major qpos (nq x n), qvel and
// ctrl; every environment starts at qpos0, at rest, controls zero.
template <class M>
class local_batch {
 public:
  using sim = builtin_sim<M>;
  local_batch(int num_envs, cudaStream_t s) : n_(num_envs) {
    gmi::require(num_envs >= 1, "physics local_batch num_envs", num_envs, ">= 1");
    const std::vector<float> t = sim::table();
    table_ = gmi::cuda::device_buffer<float>(t.size());
    GMI_CUDA_TRY(cudaMemcpyAsync(table_.data(), t.data(), t.size() * sizeof(float), cudaMemcpyHostToDevice, s));
    view_ = sim::view(table_.data());
    const std::size_t n = static_cast<std::size_t>(num_envs);
    const model_view<float> host = sim::view(t.data());  // the same words on the host, for qpos0
    std::vector<float> q(static_cast<std::size_t>(sim::nq) * n);
    for (int k = 0; k < sim::nq; ++k)
      for (std::size_t e = 0; e < n; ++e) q[k * n + e] = host.qpos0[k];
    qpos_ = gmi::cuda::device_buffer<float>(q.size());
    qvel_ = gmi::cuda::device_buffer<float>(static_cast<std::size_t>(sim::nv) * n);
    ctrl_ = gmi::cuda::device_buffer<float>(static_cast<std::size_t>(sim::nu > 0 ? sim::nu : 1) * n);
    GMI_CUDA_TRY(cudaMemcpyAsync(qpos_.data(), q.data(), q.size() * sizeof(float), cudaMemcpyHostToDevice, s));
    GMI_CUDA_TRY(cudaMemsetAsync(qvel_.data(), 0, qvel_.size() * sizeof(float), s));
    GMI_CUDA_TRY(cudaMemsetAsync(ctrl_.data(), 0, ctrl_.size() * sizeof(float), s));
    GMI_CUDA_TRY(cudaStreamSynchronize(s));  // the host vectors go out of scope here
  }

  // substeps physics steps of every environment.
  void step(cudaStream_t s, int substeps = 1, int block_size = 128) {
    gmi::exec::cuda p{s};
    p.block_size = block_size;
    gmi::exec::for_each(p, static_cast<std::size_t>(n_),
                        detail::local_step_envs<M>{view_, qpos_.data(), qvel_.data(), ctrl_.data(), n_, substeps});
  }
  [[nodiscard]] int num_envs() const { return n_; }
  [[nodiscard]] float* qpos() { return qpos_.data(); }
  [[nodiscard]] float* qvel() { return qvel_.data(); }
  [[nodiscard]] float* ctrl() { return ctrl_.data(); }
  // Global memory per environment (state and controls; the scratch is local memory, scratch_bytes_per_env).
  [[nodiscard]] std::size_t bytes_per_env() const { return (sim::nq + sim::nv + sim::nu) * sizeof(float); }
  [[nodiscard]] static constexpr std::size_t scratch_bytes_per_env() { return sim::scratch_reals * sizeof(float); }

 private:
  int n_;
  gmi::cuda::device_buffer<float> table_;
  model_view<float> view_{};
  gmi::cuda::device_buffer<float> qpos_, qvel_, ctrl_;
};

}  // namespace gmi::physics

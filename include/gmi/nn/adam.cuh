#pragma once
// adam<exec::cuda>: Adam with global gradient-norm clipping on the policy's stream: up to adam_fused_max
// parameters one block does the whole step (sum of squares, norm, step count, bias corrections, update); above
// it one cooperative kernel (per-block sums of squares, a grid-wide barrier, every block summing the partial
// sums in the same order, then the element-wise update) where the device supports cooperative launches, else
// three kernels (per-block sums of squares, one block finishing the norm, the step count and bias corrections,
// then the element-wise update). Nothing waits on the host, and lr, the step count and the norm live in device memory, so a
// captured CUDA graph replays correctly and a device-side schedule may write lr_device(). Needs nvcc.

#include <cooperative_groups.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include <gmi/core/span.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/nn/adam.hpp>

namespace gmi::nn {

namespace detail {

struct adam_device_state {
  double norm;       // gradient norm of the last step, before clipping
  float scale;       // clipping factor of the last step
  float lr;
  float bc1;         // 1 - beta1^t
  float bc2_sqrt;    // sqrt(1 - beta2^t)
  long long step;    // t
};

inline constexpr int adam_block = 256;
inline constexpr int adam_norm_blocks = 256;  // fixed, so the norm's summation order never changes
// Up to this many parameters one block of adam_fused_block threads takes the whole step: a PPO update makes one
// step per minibatch, and for a small policy the three launches cost more than the work (H200, 1289 parameters:
// 9 us a step as three kernels).
inline constexpr std::size_t adam_fused_max = 32768;
inline constexpr int adam_fused_block = 1024;

__device__ inline double block_sum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int w = static_cast<int>(blockDim.x) / 2; w > 0; w /= 2) {
    if (static_cast<int>(threadIdx.x) < w) shared[threadIdx.x] += shared[threadIdx.x + w];
    __syncthreads();
  }
  return shared[0];
}

// block_sum's sum, in the same order (each level adds the upper half onto the lower), left in thread 0 only: the
// levels above 32 through shared memory, the last five in warp 0 by shuffles (no block-wide barrier between them).
// blockDim.x a power of two >= 64; every thread calls it.
__device__ inline double block_sum_to_first(double v, double* shared) {
  const int t = static_cast<int>(threadIdx.x);
  shared[t] = v;
  __syncthreads();
  int w = static_cast<int>(blockDim.x) / 2;
  for (; w >= 32; w /= 2) {
    if (t < w) shared[t] += shared[t + w];
    __syncthreads();
  }
  double x = 0;
  if (t < 32) {
    x = shared[t];
    for (; w > 0; w /= 2) x += __shfl_down_sync(0xffffffffu, x, w);
  }
  return x;
}

__global__ static void adam_sumsq_kernel(const float* GMI_RESTRICT g, std::size_t n, double* GMI_RESTRICT partials) {
  __shared__ double shared[adam_block];
  double s = 0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    s += static_cast<double>(g[i]) * g[i];
  const double total = block_sum(s, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// The clipping factor from the sum of squares (max_norm <= 0: no clipping); records the norm and the factor.
__device__ inline float adam_clip(double sumsq, adam_device_state* st, float max_norm) {
  const double norm = sqrt(sumsq);
  double scale = 1.0;
  if (max_norm > 0) {
    const double c = static_cast<double>(max_norm) / (norm + 1e-6);
    scale = c < 1.0 ? c : 1.0;
  }
  st->norm = norm;
  st->scale = static_cast<float>(scale);
  return st->scale;
}

// The next step's count and bias corrections (they do not depend on the gradient).
__device__ inline void adam_next_step(adam_device_state* st, float beta1, float beta2) {
  st->step += 1;
  const double t = static_cast<double>(st->step);
  st->bc1 = static_cast<float>(1.0 - pow(static_cast<double>(beta1), t));
  st->bc2_sqrt = static_cast<float>(sqrt(1.0 - pow(static_cast<double>(beta2), t)));
}

// The clipping factor and the step's bias corrections from the sum of squares (thread 0 of the finishing block).
__device__ inline void adam_finish_norm(double sumsq, adam_device_state* st, float beta1, float beta2, float max_norm) {
  adam_clip(sumsq, st, max_norm);
  adam_next_step(st, beta1, beta2);
}

// One block of adam_norm_blocks threads. max_norm <= 0: no clipping.
__global__ static void adam_finalize_kernel(const double* GMI_RESTRICT partials, adam_device_state* st, float beta1,
                                            float beta2, float max_norm) {
  __shared__ double shared[adam_norm_blocks];
  const double sumsq = block_sum(partials[threadIdx.x], shared);
  if (threadIdx.x == 0) adam_finish_norm(sumsq, st, beta1, beta2, max_norm);
}

}  // namespace detail
using detail::adam_fused_block;  // the block size a kernel that fuses Adam into its own must launch with

// One Adam step done by a whole block of adam_fused_block threads (n <= adam_fused_max), so that a kernel which
// computes the gradient row may end in the step: adam<exec::cuda>::block_step() gives one.
struct adam_block_step {
  float* m = nullptr;
  float* v = nullptr;
  detail::adam_device_state* state = nullptr;
  std::size_t n = 0;
  float beta1 = 0, beta2 = 0, eps = 0, max_norm = 0;  // max_norm <= 0: no clipping

  // The step's latency is what counts (a PPO update makes one step per minibatch): each thread keeps its first
  // `kept` entries of p, m and v in registers, loaded by prefetch() (a kernel may call it before it waits for the
  // gradient), and the bias corrections, which do not depend on the gradient, are taken by thread 32 while the
  // block sums the squares.
  static constexpr int kept = 4;
  struct held {
    float p[kept], m[kept], v[kept];
  };
  __device__ void prefetch(const float* p, held& h) const {
#pragma unroll
    for (int k = 0; k < kept; ++k) {
      const std::size_t i = threadIdx.x + static_cast<std::size_t>(k) * blockDim.x;
      if (i < n) {
        h.p[k] = p[i];
        h.m[k] = m[i];
        h.v[k] = v[i];
      }
    }
  }

  // shared: adam_fused_block doubles of shared memory. The same fixed order every step. g may have been written
  // by this block earlier in the same kernel, so it is read through plain loads (no restrict: a const restrict
  // pointer lets the compiler use the non-coherent read-only path, which may return the old values). h: what
  // prefetch(p, h) loaded, in this kernel, before this step's writes.
  __device__ void operator()(float* p, const float* g, double* shared, held& h) const {
    __shared__ float step_scale, step_lr, step_bc1, step_bc2_sqrt;
    const std::size_t t = threadIdx.x, stride = blockDim.x;
    float gk[kept];
#pragma unroll
    for (int k = 0; k < kept; ++k) {
      if (t + k * stride < n) gk[k] = g[t + k * stride];
    }
    if (t == 32) {  // blocks of adam_fused_block threads
      detail::adam_next_step(state, beta1, beta2);
      step_bc1 = state->bc1;
      step_bc2_sqrt = state->bc2_sqrt;
      step_lr = state->lr;
    }
    double s = 0;
#pragma unroll
    for (int k = 0; k < kept; ++k) {
      if (t + k * stride < n) s += static_cast<double>(gk[k]) * gk[k];
    }
    for (std::size_t i = t + kept * stride; i < n; i += stride) s += static_cast<double>(g[i]) * g[i];
    const double sumsq = detail::block_sum_to_first(s, shared);
    if (t == 0) step_scale = detail::adam_clip(sumsq, state, max_norm);
    __syncthreads();
    const float scale = step_scale, lr = step_lr, bc1 = step_bc1, bc2_sqrt = step_bc2_sqrt;
#pragma unroll
    for (int k = 0; k < kept; ++k) {
      const std::size_t i = t + k * stride;
      if (i < n) {
        detail::adam_element(h.p[k], gk[k] * scale, h.m[k], h.v[k], lr, beta1, beta2, eps, bc1, bc2_sqrt);
        p[i] = h.p[k];
        m[i] = h.m[k];
        v[i] = h.v[k];
      }
    }
    for (std::size_t i = t + kept * stride; i < n; i += stride)
      detail::adam_element(p[i], g[i] * scale, m[i], v[i], lr, beta1, beta2, eps, bc1, bc2_sqrt);
  }
  __device__ void operator()(float* p, const float* g, double* shared) const {
    held h;
    prefetch(p, h);
    (*this)(p, g, shared, h);
  }
};

namespace detail {

// The whole step in one block of adam_fused_block threads (n <= adam_fused_max).
__global__ static void adam_fused_kernel(float* GMI_RESTRICT p, const float* GMI_RESTRICT g, adam_block_step step) {
  __shared__ double shared[adam_fused_block];
  step(p, g, shared);
}

__global__ static void adam_update_kernel(float* GMI_RESTRICT p, const float* GMI_RESTRICT g, float* GMI_RESTRICT m,
                                          float* GMI_RESTRICT v, std::size_t n, const adam_device_state* st,
                                          float beta1, float beta2, float eps) {
  const float scale = st->scale, lr = st->lr, bc1 = st->bc1, bc2_sqrt = st->bc2_sqrt;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    adam_element(p[i], g[i] * scale, m[i], v[i], lr, beta1, beta2, eps, bc1, bc2_sqrt);
}

// The whole step for any n in one cooperative launch (all blocks resident): each block's sum of squares into
// partials[block], a grid barrier, then every block sums partials[0 .. gridDim.x) with the same fixed tree (so
// all find the same norm), and updates its share. Block 0 records the norm, factor, step and bias corrections;
// the step count is read by every block before the barrier and written after it.
__global__ static void adam_one_kernel(float* GMI_RESTRICT p, const float* GMI_RESTRICT g, float* GMI_RESTRICT m,
                                       float* GMI_RESTRICT v, std::size_t n, adam_device_state* st,
                                       double* GMI_RESTRICT partials, float beta1, float beta2, float eps,
                                       float max_norm) {
  __shared__ double shared[adam_block];
  __shared__ float step_scale, step_bc1, step_bc2_sqrt;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  double s = 0;
  for (std::size_t i = first; i < n; i += stride) s += static_cast<double>(g[i]) * g[i];
  const double mine = block_sum(s, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = mine;
  const long long step = st->step;
  const float lr = st->lr;
  cooperative_groups::this_grid().sync();
  double q = 0;
  for (unsigned k = threadIdx.x; k < gridDim.x; k += blockDim.x) q += partials[k];
  const double sumsq = block_sum(q, shared);
  if (threadIdx.x == 0) {
    const double norm = sqrt(sumsq);
    double scale = 1.0;
    if (max_norm > 0) {
      const double c = static_cast<double>(max_norm) / (norm + 1e-6);
      scale = c < 1.0 ? c : 1.0;
    }
    const double t = static_cast<double>(step + 1);
    step_scale = static_cast<float>(scale);
    step_bc1 = static_cast<float>(1.0 - pow(static_cast<double>(beta1), t));
    step_bc2_sqrt = static_cast<float>(sqrt(1.0 - pow(static_cast<double>(beta2), t)));
    if (blockIdx.x == 0) {
      st->norm = norm;
      st->scale = step_scale;
      st->step = step + 1;
      st->bc1 = step_bc1;
      st->bc2_sqrt = step_bc2_sqrt;
    }
  }
  __syncthreads();
  const float scale = step_scale, bc1 = step_bc1, bc2_sqrt = step_bc2_sqrt;
  for (std::size_t i = first; i < n; i += stride)
    adam_element(p[i], g[i] * scale, m[i], v[i], lr, beta1, beta2, eps, bc1, bc2_sqrt);
}

// Blocks of the cooperative step: two per SM where that many can be resident at once (every block sums all
// blocks' partial sums after the barrier, so more blocks cost more than they add), at most what the parameters
// need; 0 where the device has no cooperative launches.
inline int adam_one_kernel_blocks(std::size_t n) {
  int dev = 0, coop = 0, sms = 0, per_sm = 0;
  GMI_CUDA_TRY(cudaGetDevice(&dev));
  GMI_CUDA_TRY(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
  if (!coop) return 0;
  GMI_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  GMI_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, adam_one_kernel, adam_block, 0));
  const std::size_t need = (n + adam_block - 1) / adam_block;
  const std::size_t resident = static_cast<std::size_t>(sms) * static_cast<std::size_t>(std::min(per_sm, 2));
  return static_cast<int>(std::min<std::size_t>({resident, std::size_t{1024}, need > 0 ? need : 1}));
}

__global__ static void adam_set_lr_kernel(adam_device_state* st, float lr) { st->lr = lr; }

}  // namespace detail

template <>
class adam<exec::cuda> {
 public:
  adam(adam_config config, std::size_t param_count, exec::cuda policy)
      : config_(config), policy_(policy), n_(param_count), m_(param_count), v_(param_count),
        state_(1) {
    config_.validate();
    one_blocks_ = n_ > detail::adam_fused_max ? detail::adam_one_kernel_blocks(n_) : 0;
    partials_ = cuda::device_buffer<double>(std::max(detail::adam_norm_blocks, one_blocks_));
    one_kernel_ = false;  // opt-in until a GPU run has measured it and checked its capture in the PPO graph
    m_.fill_bytes(0, policy_.stream);
    v_.fill_bytes(0, policy_.stream);
    state_.fill_bytes(0, policy_.stream);
    set_lr(config_.lr);
  }

  // Clips by the global norm of grads (grads are not modified), then updates params. Asynchronous.
  void step(device_span<float> params, device_span<const float> grads) {
    gmi::require(params.size() == n_, "adam step: params size", params.size(), "== " + std::to_string(n_));
    gmi::require(grads.size() == n_, "adam step: grads size", grads.size(), "== " + std::to_string(n_));
    const cudaStream_t s = policy_.stream;
    const float max_norm = config_.max_grad_norm ? *config_.max_grad_norm : 0.0f;
    if (n_ <= detail::adam_fused_max) {
      detail::adam_fused_kernel<<<1, detail::adam_fused_block, 0, s>>>(params.data(), grads.data(), block_step());
      GMI_CUDA_TRY(cudaGetLastError());
      return;
    }
    if (one_kernel_) {
      float* pp = params.data();
      const float* gp = grads.data();
      float *mp = m_.data(), *vp = v_.data();
      std::size_t n = n_;
      detail::adam_device_state* st = state_.data();
      double* part = partials_.data();
      float b1 = config_.beta1, b2 = config_.beta2, eps = config_.eps, mn = max_norm;
      void* args[] = {&pp, &gp, &mp, &vp, &n, &st, &part, &b1, &b2, &eps, &mn};
      const cudaError_t e = cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&detail::adam_one_kernel),
                                                        dim3(static_cast<unsigned>(one_blocks_)),
                                                        dim3(detail::adam_block), args, 0, s);
      if (e == cudaSuccess) {
        ++steps_;
        return;
      }
      // Fewer SMs than the device reports (an MPS share): the three kernels from now on.
      if (e != cudaErrorCooperativeLaunchTooLarge) GMI_CUDA_TRY(e);
      (void)cudaGetLastError();
      one_kernel_ = false;
      one_blocks_ = 0;
    }
    detail::adam_sumsq_kernel<<<detail::adam_norm_blocks, detail::adam_block, 0, s>>>(grads.data(), n_,
                                                                                     partials_.data());
    GMI_CUDA_TRY(cudaGetLastError());
    detail::adam_finalize_kernel<<<1, detail::adam_norm_blocks, 0, s>>>(
        partials_.data(), state_.data(), config_.beta1, config_.beta2, max_norm);
    GMI_CUDA_TRY(cudaGetLastError());
    const unsigned blocks = static_cast<unsigned>(
        std::min<std::size_t>((n_ + detail::adam_block - 1) / detail::adam_block, 4096));
    if (blocks > 0) {
      detail::adam_update_kernel<<<blocks, detail::adam_block, 0, s>>>(params.data(), grads.data(), m_.data(),
                                                                       v_.data(), n_, state_.data(), config_.beta1,
                                                                       config_.beta2, config_.eps);
      GMI_CUDA_TRY(cudaGetLastError());
    }
    ++steps_;
  }

  // Above adam_fused_max parameters: whether a step is the one cooperative kernel or three kernels (the default).
  // set_one_kernel(true) asks for the one where one_kernel_available() (the device supports cooperative launches);
  // elsewhere it is refused with one line.
  [[nodiscard]] bool one_kernel() const noexcept { return one_kernel_; }
  [[nodiscard]] bool one_kernel_available() const noexcept { return one_blocks_ > 0; }
  void set_one_kernel(bool on) {
    gmi::require(!on || one_blocks_ > 0, "adam one_kernel", on,
                 "false here (at most adam_fused_max parameters, or no cooperative launches on this device)");
    one_kernel_ = on;
  }
  // Launches per step: 1, or 3 for the three-kernel path.
  [[nodiscard]] int launches_per_step() const noexcept { return n_ <= detail::adam_fused_max || one_kernel_ ? 1 : 3; }

  // Whether one block takes a whole step (block_step()).
  [[nodiscard]] bool steps_in_one_block() const noexcept { return n_ <= detail::adam_fused_max; }
  // The next step, for a kernel that ends in it (one block of adam_fused_block threads; steps_in_one_block() must
  // hold). Counts as queued here: call it once per step enqueued.
  [[nodiscard]] adam_block_step block_step() {
    gmi::require(steps_in_one_block(), "adam block step: parameters", n_, "<= " + std::to_string(detail::adam_fused_max));
    ++steps_;
    return {m_.data(), v_.data(), state_.data(), n_, config_.beta1, config_.beta2, config_.eps,
            config_.max_grad_norm ? *config_.max_grad_norm : 0.0f};
  }
  static constexpr int block_threads = detail::adam_fused_block;

  // Takes effect from the next step queued on the stream.
  void set_lr(float lr) {
    gmi::require(std::isfinite(lr) && lr > 0, "adam lr", lr, "> 0");
    config_.lr = lr;
    detail::adam_set_lr_kernel<<<1, 1, 0, policy_.stream>>>(state_.data(), lr);
    GMI_CUDA_TRY(cudaGetLastError());
  }
  // Where the step reads lr from, for schedules computed on the device.
  [[nodiscard]] float* lr_device() const noexcept { return &state_.data()->lr; }

  // The norm (before clipping) of the last step's gradients; waits for the stream.
  [[nodiscard]] double grad_norm() const {
    detail::adam_device_state st{};
    GMI_CUDA_TRY(cudaMemcpyAsync(&st, state_.data(), sizeof st, cudaMemcpyDeviceToHost, policy_.stream));
    GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    return st.norm;
  }

  [[nodiscard]] const adam_config& config() const noexcept { return config_; }
  [[nodiscard]] std::int64_t steps() const noexcept { return steps_; }
  [[nodiscard]] device_span<const float> first_moment() const noexcept { return {m_.data(), n_}; }
  [[nodiscard]] device_span<const float> second_moment() const noexcept { return {v_.data(), n_}; }

  // Moments, step and lr, read after the queued work (waits for the stream).
  [[nodiscard]] adam_state export_state() const {
    adam_state s;
    s.m.resize(n_);
    s.v.resize(n_);
    detail::adam_device_state st{};
    GMI_CUDA_TRY(cudaMemcpyAsync(s.m.data(), m_.data(), n_ * sizeof(float), cudaMemcpyDeviceToHost, policy_.stream));
    GMI_CUDA_TRY(cudaMemcpyAsync(s.v.data(), v_.data(), n_ * sizeof(float), cudaMemcpyDeviceToHost, policy_.stream));
    GMI_CUDA_TRY(cudaMemcpyAsync(&st, state_.data(), sizeof st, cudaMemcpyDeviceToHost, policy_.stream));
    GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    s.step = st.step;
    s.lr = st.lr;
    return s;
  }
  void import_state(const adam_state& s) {
    gmi::require(s.m.size() == n_ && s.v.size() == n_, "adam state: moment sizes", s.m.size(), "== " + std::to_string(n_));
    detail::adam_device_state st{};
    st.lr = s.lr;
    st.step = s.step;
    st.scale = 1.0f;
    GMI_CUDA_TRY(cudaMemcpyAsync(m_.data(), s.m.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, policy_.stream));
    GMI_CUDA_TRY(cudaMemcpyAsync(v_.data(), s.v.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, policy_.stream));
    GMI_CUDA_TRY(cudaMemcpyAsync(state_.data(), &st, sizeof st, cudaMemcpyHostToDevice, policy_.stream));
    GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    config_.lr = s.lr;
    steps_ = s.step;
  }

 private:
  adam_config config_;
  exec::cuda policy_;
  std::size_t n_;
  cuda::device_buffer<float> m_, v_;
  cuda::device_buffer<double> partials_;
  cuda::device_buffer<detail::adam_device_state> state_;
  int one_blocks_ = 0;       // blocks of the cooperative step (0: not available)
  bool one_kernel_ = false;
  std::int64_t steps_ = 0;
};

}  // namespace gmi::nn

#pragma once
// The env step of a whole batch for the batched rollout (rl/batched_rollout.cuh). Any env: one kernel over all
// environments, a thread each (env_batch_view::step_one). The linear proxies (envs::lq_proxy): the substeps as
// cuBLASLt products over the batch, x' = X A_sub^T + U B_sub^T, on env_batch's word-major state storage read as a
// column-major [num_envs][obs_dim] matrix, then one kernel for termination, statistics, auto-reset and the
// observations. The physics tasks (rl/physics_env_step.cuh): a warp per environment where physics/step_path.hpp's
// rule or an override says so, else the thread per environment. All are capturable in a CUDA graph once their
// first call has run.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/envs/lq_proxy.hpp>
#include <gmi/nn/lt_linear.cuh>
#include <gmi/nn/network_config.hpp>
#include <gmi/rl/env_batch.cuh>

namespace gmi::rl {

namespace detail {
template <class E, class = void>
struct is_lq_env : std::false_type {};
template <class E>
struct is_lq_env<E, std::void_t<decltype(E::substeps)>>
    : std::bool_constant<std::is_base_of_v<envs::lq_proxy<E::obs_dim, E::act_dim, E::substeps>, E>> {};
}  // namespace detail

// Whether E's dynamics run as matrix products over the batch (a linear proxy) rather than a thread per env.
template <class E>
inline constexpr bool gemm_dynamics = detail::is_lq_env<E>::value;

// What the step of one environment leaves for the rollout: reward, ends, and (truncated) the final observation.
struct batch_step_out {
  float* rewards = nullptr;         // [n]
  std::uint8_t* terminated = nullptr;  // [n]
  std::uint8_t* truncated = nullptr;   // [n]
  float* obs = nullptr;             // [n][obs_dim]: the observation the policy acts on next (raw)
  float* final_obs = nullptr;       // [n][obs_dim] or nullptr: the last observation of an episode that ended
};

namespace detail {

// Threads a block for kernels of one thread per env: 32 up to 8192 envs, so a few thousand envs of long per-env
// work (a 211-word state) spread over every SM rather than a few; 128 above.
inline unsigned batch_env_block(std::size_t n) { return n <= 8192 ? 32u : 128u; }

// Any env: action row i (row-major [n][act_dim]) applied by step_one.
template <class E>
__global__ static void batch_step_kernel(env_batch_view<E> env, const float* __restrict__ actions, batch_step_out out) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= env.num_envs) return;
  const step_result s = env.step_one(i, actions + i * E::act_dim, out.obs + i * E::obs_dim,
                                     out.final_obs ? out.final_obs + i * E::obs_dim : nullptr);
  out.rewards[i] = s.reward;
  out.terminated[i] = s.terminated ? 1 : 0;
  out.truncated[i] = s.truncated ? 1 : 0;
}

// Where a linear proxy's pre-product work for env i goes (lq_pre_row): the action column-major ([act_dim][n],
// zeros for an invalid one) for U B_sub^T, the step's reward and the action's validity; for lq_bu_tile, B_sub
// (rows padded to ld_b) and BU = U B_sub^T (column-major [n][obs_dim]).
struct lq_pre_out {
  float* u_cols;
  float* rewards;
  std::uint8_t* valid;
  std::size_t n;
  const float* b_sub;
  int ld_b;
  float* bu;
};

// Linear proxies, before the products, for env i with action a (act_dim floats): the step's reward from the state
// before it, the action's validity, and the action's column entries.
template <class E>
__device__ inline void lq_pre_row(const env_batch_view<E>& env, std::size_t i, const float* a_in,
                                  const lq_pre_out& o) {
  float a[E::act_dim];
  bool ok = true;
  for (int k = 0; k < E::act_dim; ++k) {
    a[k] = a_in[k];
    ok = ok && is_finite(a[k]);
  }
  const typename E::state s = env.load(i);
  o.rewards[i] = ok ? -E::cost(s, a, env.params) : 0.0f;
  o.valid[i] = ok ? 1 : 0;
  for (int k = 0; k < E::act_dim; ++k) o.u_cols[static_cast<std::size_t>(k) * o.n + i] = ok ? a[k] : 0.0f;
}

// BU rows [row0, row0 + rows) = U B_sub^T in fp32, by every thread of the block (each takes (row, column) pairs,
// rows fastest: coalesced stores); the rows' action columns must be stored and visible to the block.
template <class E>
__device__ inline void lq_bu_tile(const lq_pre_out& o, int row0, int rows) {
  constexpr int N = E::obs_dim, M = E::act_dim;
  for (int k = static_cast<int>(threadIdx.x); k < rows * N; k += static_cast<int>(blockDim.x)) {
    const std::size_t i = static_cast<std::size_t>(row0 + k % rows);
    const int j = k / rows;
    float sum = 0.0f;
    for (int m = 0; m < M; ++m)
      sum = fmaf(o.u_cols[static_cast<std::size_t>(m) * o.n + i], o.b_sub[j * o.ld_b + m], sum);
    o.bu[static_cast<std::size_t>(j) * o.n + i] = sum;
  }
}

// Linear proxies, before the products: lq_pre_row for every env, a thread each.
template <class E>
__global__ static void lq_pre_step_kernel(env_batch_view<E> env, const float* __restrict__ actions, lq_pre_out o) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= env.num_envs) return;
  lq_pre_row<E>(env, i, actions + i * E::act_dim, o);
}

// Linear proxies, after the products: termination, step_one's bookkeeping and auto-reset (finish_one).
template <class E>
__global__ static void lq_post_step_kernel(env_batch_view<E> env, const std::uint8_t* __restrict__ valid,
                                           batch_step_out out) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= env.num_envs) return;
  gmi::rng r(env.seed, i, env.rng_blocks[i]);
  typename E::state s = env.load(i);
  const bool ok = valid[i] != 0;
  const gmi::transition tr{out.rewards[i], ok && E::out_of_bounds(s, env.params)};
  const step_result res = env.finish_one(i, s, r, ok, tr, out.obs + i * E::obs_dim,
                                         out.final_obs ? out.final_obs + i * E::obs_dim : nullptr);
  out.rewards[i] = res.reward;
  out.terminated[i] = res.terminated ? 1 : 0;
  out.truncated[i] = res.truncated ? 1 : 0;
}

}  // namespace detail

// The batch step of E over an env_batch<E, exec::cuda>: step(view, actions, out, stream).
template <class E>
class batched_dynamics {
 public:
  static constexpr bool uses_gemm = gemm_dynamics<E>;
  // The path without a physics task's choice ("gemm_substeps" or "thread_per_env"); path() says what step runs.
  static constexpr const char* path_name = uses_gemm ? "gemm_substeps" : "thread_per_env";

  // prec: the products' precision (bf16 runs the env in TF32: its state stays fp32). table: the env's table
  // (lq_proxy::make_table) for the linear proxies, ignored otherwise.
  batched_dynamics(std::size_t num_envs, nn::precision prec, const std::vector<float>& table = {})
      : n_(num_envs), prec_(prec == nn::precision::fp32 ? nn::precision::fp32 : nn::precision::tf32),
        valid_(num_envs), gemm_(std::size_t{4} << 20) {
    if constexpr (uses_gemm) {
      constexpr int N = E::obs_dim, M = E::act_dim;
      gmi::require(table.size() >= static_cast<std::size_t>(E::table_r + M), "batched_dynamics table size",
                   table.size(), ">= " + std::to_string(E::table_r + M) + " (lq_proxy::make_table)");
      // A_sub and B_sub with rows padded to 4 floats (16-byte leading dimensions for the tensor-core kernels).
      std::vector<float> a(static_cast<std::size_t>(N) * ld_a, 0.0f), b(static_cast<std::size_t>(N) * ld_b, 0.0f);
      for (int i = 0; i < N; ++i) {
        for (int j = 0; j < N; ++j)
          a[static_cast<std::size_t>(i) * ld_a + j] = table[static_cast<std::size_t>(i) * N + j];
        for (int j = 0; j < M; ++j)
          b[static_cast<std::size_t>(i) * ld_b + j] = table[E::table_b_sub + static_cast<std::size_t>(i) * M + j];
      }
      a_sub_ = cuda::device_buffer<float>(a.size());
      b_sub_ = cuda::device_buffer<float>(b.size());
      GMI_CUDA_TRY(cudaMemcpy(a_sub_.data(), a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
      GMI_CUDA_TRY(cudaMemcpy(b_sub_.data(), b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
      u_cols_ = cuda::device_buffer<float>(n_ * M);
      bu_ = cuda::device_buffer<float>(n_ * N);
      scratch_ = cuda::device_buffer<float>(n_ * N);
    }
  }

  [[nodiscard]] nn::precision precision() const noexcept { return prec_; }

  // A physics task's path for these environments with params p (warp or thread per env; rl/physics_env_step.cuh;
  // a staged request runs the thread kernel here), fixed from now on; without this call the first step() chooses with the view's params.
  void choose(const typename E::params& p, int sm_count = 0) {
    if constexpr (physics_task<E>)
      warp_ = physics_step_choice<E>(p, n_, sm_count).path == gmi::physics::step_path::warp ? 1 : 0;
  }
  // "gemm_substeps", "thread_per_env" or "warp_per_env" (before a physics task's choice: thread_per_env).
  [[nodiscard]] const char* path() const noexcept { return warp_ == 1 ? "warp_per_env" : path_name; }

  // Steps every environment with actions ([n][act_dim], row-major) on `stream`.
  void step(const env_batch_view<E>& env, const float* actions, const batch_step_out& out, cudaStream_t stream) {
    gmi::require(env.num_envs == n_, "batched_dynamics num_envs", env.num_envs,
                 "the " + std::to_string(n_) + " built for");
    const unsigned block = detail::batch_env_block(n_), blocks = static_cast<unsigned>((n_ + block - 1) / block);
    if constexpr (physics_task<E>) {
      if (warp_ < 0) choose(env.params);
      if (warp_ == 1) {
        warp_env_step<E>(env, actions, {out.rewards, out.terminated, out.truncated, out.obs, out.final_obs}, stream);
        return;
      }
    }
    if constexpr (!uses_gemm) {
      detail::batch_step_kernel<E><<<blocks, block, 0, stream>>>(env, actions, out);
      GMI_CUDA_TRY(cudaGetLastError());
    } else {
      detail::lq_pre_step_kernel<E><<<blocks, block, 0, stream>>>(env, actions, pre_out(out.rewards));
      GMI_CUDA_TRY(cudaGetLastError());
      step_after_pre(env, out, stream);
    }
  }

  // The linear proxies' pre-product outputs for a caller that runs lq_pre_row itself (the serving step's
  // whole-network kernel), rewards into `rewards`; then step_after_pre finishes the step, or, where the caller
  // also ran lq_bu_tile over every row, step_after_bu.
  [[nodiscard]] detail::lq_pre_out pre_out(float* rewards) noexcept {
    return {u_cols_.data(), rewards, valid_.data(), n_, b_sub_.data(), ld_b, bu_.data()};
  }

  // A linear proxy's step once lq_pre_row ran for every env into pre_out(out.rewards): U B_sub^T, the substeps'
  // products and the post-step kernel.
  void step_after_pre(const env_batch_view<E>& env, const batch_step_out& out, cudaStream_t stream) {
    static_assert(uses_gemm, "batched_dynamics::step_after_pre: only the linear proxies' step has a pre-step");
    constexpr int N = E::obs_dim, M = E::act_dim;
    const int n = static_cast<int>(n_);
    // BU (n x N, column-major) = U (n x M) B_sub^T: B_sub's padded rows read column-major are B_sub^T.
    const nn::lt_shape bu{.m = n, .n = N, .k = M, .lda = n, .ldb = ld_b, .ldd = n, .prec = prec_};
    gemm_.run(bu, u_cols_.data(), b_sub_.data(), bu_.data(), nullptr, stream);
    step_after_bu(env, out, stream);
  }

  // A linear proxy's step once lq_pre_row and lq_bu_tile ran for every env into pre_out(out.rewards): the
  // substeps' products and the post-step kernel.
  void step_after_bu(const env_batch_view<E>& env, const batch_step_out& out, cudaStream_t stream) {
    static_assert(uses_gemm, "batched_dynamics::step_after_bu: only the linear proxies' step has products");
    const unsigned block = detail::batch_env_block(n_), blocks = static_cast<unsigned>((n_ + block - 1) / block);
    constexpr int N = E::obs_dim;
    const int n = static_cast<int>(n_);
    // X' = X A_sub^T + BU, alternating between the env's state and the scratch matrix.
    float* state = reinterpret_cast<float*>(env.state_words_ptr);
    const nn::lt_shape sub{.m = n, .n = N, .k = N, .lda = n, .ldb = ld_a, .ldd = n, .prec = prec_};
    for (int k = 0; k < E::substeps; ++k) {
      const float* x = k % 2 == 0 ? state : scratch_.data();
      float* y = k % 2 == 0 ? scratch_.data() : state;
      gemm_.run_accumulate(sub, x, a_sub_.data(), bu_.data(), y, stream);
    }
    if (E::substeps % 2 == 1)
      GMI_CUDA_TRY(cudaMemcpyAsync(state, scratch_.data(), n_ * N * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    detail::lq_post_step_kernel<E><<<blocks, block, 0, stream>>>(env, valid_.data(), out);
    GMI_CUDA_TRY(cudaGetLastError());
  }

  // Multiply-adds of one env step's products per environment (0 for the thread-per-env step).
  static constexpr double macs_per_env() {
    if constexpr (uses_gemm) return double(E::substeps) * E::obs_dim * E::obs_dim + double(E::obs_dim) * E::act_dim;
    else return 0.0;
  }

 private:
  static constexpr int pad4(int x) { return (x + 3) / 4 * 4; }
  static constexpr int ld_a = pad4(E::obs_dim), ld_b = pad4(E::act_dim);
  std::size_t n_;
  int warp_ = -1;  // a physics task's choice: -1 not made yet, 0 thread per env, 1 warp per env
  nn::precision prec_;
  cuda::device_buffer<std::uint8_t> valid_;
  cuda::device_buffer<float> a_sub_, b_sub_, u_cols_, bu_, scratch_;
  nn::lt_gemm gemm_;
};

}  // namespace gmi::rl

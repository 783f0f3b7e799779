#pragma once
// The CUDA half of gmi::rl::ppo_trainer. Collection: one thread per environment runs its whole rollout column
// (weights in shared memory), or, for wide networks and warp-stepped physics tasks, the batched rollout
// (rl/batched_rollout.cuh). minibatch_gradient forms each minibatch's gradient by the path rl/wide_rule.hpp
// names: a warp per sample (detail/ppo_warp_gradient.cuh), a tile of samples per block (detail/ppo_tile_gradient.cuh),
// a thread per sample, or cuBLASLt products (detail/ppo_lt_gradient.cuh); partial rows are added in fixed orders,
// so results do not vary between runs. A synced trainer whose group shares its rows (ppo_sync::exchange) ends a
// minibatch step in ppo_step_kernel (the group's sum and mean, Adam, the lr rule) and gathers its rollout
// statistics there too (detail/ppo_stats_gather.cuh), so its whole iteration replays as one CUDA graph after a
// first eager one; other synced trainers collect eagerly and replay only their update when the sync's sums are
// replayable (ppo_sync::replayed), else enqueue it kernel by kernel.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/graph.hpp>
#include <gmi/comm/row_exchange.cuh>
#include <gmi/exec/cuda.cuh>
#include <gmi/nn/adam.cuh>
#include <gmi/nn/normalizer.cuh>
#include <gmi/rl/detail/advantage_stats.cuh>
#include <gmi/rl/detail/ppo_stats_gather.cuh>
#include <gmi/rl/detail/ppo_schedules.cuh>
#include <gmi/rl/detail/ppo_step.cuh>
#include <gmi/nn/network_config.hpp>
#include <gmi/rl/detail/ppo_lt_gradient.cuh>
#include <gmi/rl/detail/ppo_tile_gradient.cuh>
#include <gmi/rl/detail/ppo_warp_gradient.cuh>
#include <gmi/rl/batched_rollout.cuh>
#include <gmi/rl/env_batch.cuh>
#include <gmi/rl/ppo.hpp>
#include <gmi/rl/wide_rule.hpp>

namespace gmi::rl::detail {

// Weights fit the default 48 KiB of dynamic shared memory: copy them there once per block.
template <class Net>
inline constexpr bool params_in_shared = Net::param_count * sizeof(float) <= 48 * 1024;

template <class Net>
__device__ inline const float* stage_params(const float* params, float* shared) {
  if constexpr (params_in_shared<Net>) {
    for (int q = threadIdx.x; q < Net::param_count; q += blockDim.x) shared[q] = params[q];
    __syncthreads();
    return shared;
  } else {
    return params;
  }
}

template <class E, class Net>
__global__ static void ppo_collect_kernel(ppo_rollout_view<E, Net> v, const float* params) {
  extern __shared__ float shared_params[];
  const float* p = stage_params<Net>(params, shared_params);
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < static_cast<std::size_t>(v.num_envs)) v.collect(i, p);
}

template <class E, class Net>
__global__ static void ppo_serve_kernel(ppo_rollout_view<E, Net> v, const float* params, int steps) {
  extern __shared__ float shared_params[];
  const float* p = stage_params<Net>(params, shared_params);
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < static_cast<std::size_t>(v.num_envs)) v.serve(i, p, steps);
}

// Sums a value over the warp with a fixed butterfly and lets lane 0 store it: each warp owns one row, and every
// parameter gets exactly one add per sample, so a store suffices.
struct warp_row_store {
  __device__ void operator()(float* where, float value) const {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
    if ((threadIdx.x & 31) == 0) *where = value;
  }
};

template <class Net>
__global__ static void ppo_gradient_kernel(ppo_minibatch_view<Net> mb, const float* params, float* rows,
                                           const std::uint64_t* iteration, int epoch, int epochs) {
  extern __shared__ float shared_params[];
  const float* p = stage_params<Net>(params, shared_params);
  constexpr int row = Net::param_count + term_count;
  mb.shuffle_round = *iteration * static_cast<std::uint64_t>(epochs) + static_cast<std::uint64_t>(epoch);
  const std::uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
  const std::size_t warp = (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  float* r = rows + warp * row;
  mb.accumulate(k, k < mb.count, p, r, r + Net::param_count, warp_row_store{});
}

// out[q] = sum over warp rows w of rows[w][q], in row order; the loss terms also go to the iteration's log.
__global__ static void ppo_sum_rows_kernel(const float* rows, std::size_t warps, int row, int param_count, float* out,
                                           float* term_log) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= row) return;
  float s = 0.0f;
  for (std::size_t w = 0; w < warps; ++w) s += rows[w * row + q];
  out[q] = s;
  if (q >= param_count) term_log[q - param_count] = s;
}

// Stage one of a long row sum: partial[g][q] = rows[g * per][q] + ... + rows[min((g + 1) * per, n) - 1][q], in
// order; the loads of one thread are independent, so they overlap (one thread walking 256 rows waited on each).
__global__ static void ppo_sum_row_groups_kernel(const float* rows, std::size_t n, std::size_t per, int row,
                                                 float* partial) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= row) return;
  const std::size_t begin = static_cast<std::size_t>(blockIdx.y) * per;
  const std::size_t end = begin + per < n ? begin + per : n;
  float s = 0.0f;
#pragma unroll 16
  for (std::size_t w = begin; w < end; ++w) s += rows[w * row + q];
  partial[static_cast<std::size_t>(blockIdx.y) * row + q] = s;
}

// Synced runs: the group's summed gradient row becomes its mean, and the loss terms logged are the group's means.
__global__ static void ppo_average_rows_kernel(float* grads, int row, int param_count, float world, float* term_log) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= row) return;
  const float g = grads[q] / world;
  grads[q] = g;
  if (q >= param_count) term_log[q - param_count] = g;
}

// One minibatch's mean gradient row (and loss terms) on the GPU: partial rows by the path chosen (above), then their
// sum in row order; the same sums on every run. Shared by the PPO trainer and the APPO learner.
template <class Net>
class minibatch_gradient {
 public:
  using warp_path = warp_gradient<Net>;
  using tile_path = tile_gradient<Net>;
  static constexpr int row = Net::param_count + term_count;
  // One thread per sample: 64-thread blocks: the kernel needs ~255 registers a thread, so 256-thread blocks ran
  // one per SM and an 8192-sample minibatch used 32 of 132 SMs; 64-thread blocks spread the same warps wider.
  static constexpr int thread_block = 64;

  // The path used unless request_gradient_path asks for another: for a wide network (rl/wide_rule.hpp: widest
  // layer >= cfg.lt_min_width) the cuBLASLt products (ppo_lt_gradient.cuh, "gemm"), else the per-sample kernels
  // (warps, then tiles, then threads, by what fits); cfg is also the products' precision and workspace.
  static constexpr gradient_path default_path_for(const nn::network_config& cfg) {
    if (is_wide<Net>(cfg)) return gradient_path::gemm;
    return warp_path::fits ? gradient_path::warps : tile_path::fits ? gradient_path::tiles : gradient_path::threads;
  }
  static constexpr gradient_path default_path = default_path_for(nn::network_config{});

  static gradient_path chosen_path(const nn::network_config& cfg = {}) {
    const gradient_path fallback = default_path_for(cfg);
    const std::string want = requested_gradient_path();
    if (want.empty()) return fallback;
    std::string allowed = warp_path::fits ? "warps, " : "";
    if (tile_path::fits) allowed += "tiles, ";
    allowed += "threads, gemm or nothing (the default, ";
    allowed += gradient_path_name(fallback);
    allowed += ") for this network";
    if (want == "warps" && warp_path::fits) return gradient_path::warps;
    if (want == "tiles" && tile_path::fits) return gradient_path::tiles;
    if (want == "threads") return gradient_path::threads;
    if (want == "gemm") return gradient_path::gemm;
    throw gmi::config_error(gmi::got_need("--ppo-gradient", want, allowed));
  }

  // sm_count: the SMs the kernels may use (a GMI's slice); 0: the whole device. cfg: the gemm path's precision and
  // the width from which it is the default.
  minibatch_gradient(std::size_t max_count, int sm_count, const nn::network_config& cfg = {})
      : path_(chosen_path(cfg)) {
    nn::validate(cfg);
    if (path_ == gradient_path::gemm) lt_.emplace(std::max<std::size_t>(max_count, 1), nullptr, cfg);
    int device = 0, sms = sm_count;
    if (sms <= 0) {
      GMI_CUDA_TRY(cudaGetDevice(&device));
      GMI_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    }
    sms_ = sms > 0 ? sms : 1;
    if constexpr (warp_path::fits) {  // how many blocks of the warp kernel one SM holds (registers, shared memory)
      if (path_ == gradient_path::warps) {
        int resident = 0;
        GMI_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, ppo_warp_gradient_kernel<Net>,
                                                                   warp_path::block, warp_path::smem_bytes));
        resident_ = resident > 0 ? resident : 1;
      }
    }
    if constexpr (tile_path::fits) {
      if (path_ == gradient_path::tiles && tile_path::smem_bytes > 48 * 1024) {
        GMI_CUDA_TRY(cudaFuncSetAttribute(ppo_tile_gradient_kernel<Net>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(tile_path::smem_bytes)));
      }
    }
    std::size_t most = (max_count + thread_block - 1) / thread_block * (thread_block / 32);
    if (path_ == gradient_path::warps) most = blocks(max_count);
    if (path_ == gradient_path::tiles) most = (max_count + tile_path::tile - 1) / tile_path::tile;
    if (path_ == gradient_path::gemm) most = 1;
    if (path_ == gradient_path::tiles && !tile_path::shared_weights) transposed_ = cuda::device_buffer<float>(Net::net::param_count);
    most = std::max<std::size_t>(most, 1);
    rows_ = cuda::device_buffer<float>(most * row);
    partial_ = cuda::device_buffer<float>(((most + group - 1) / group) * row);
  }

  [[nodiscard]] gradient_path path() const noexcept { return path_; }
  // The gemm path's bias gradients summed by kernels for want of a BGRADB algorithm (0 on other paths).
  [[nodiscard]] std::size_t bias_sums() const noexcept { return lt_ ? lt_->bias_sums() : 0; }

  // Samples per warp: one wave of the blocks every SM holds for the whole minibatch (fewer samples per warp
  // leave more of the sums to the block reduction and the row sum, more leave SMs idle).
  [[nodiscard]] int per_warp(std::size_t count) const {
    const std::size_t warps = static_cast<std::size_t>(sms_) * resident_ * warp_path::warps_per_block;
    return static_cast<int>(std::clamp<std::size_t>((count + warps - 1) / warps, 1, 64));
  }
  [[nodiscard]] std::size_t blocks(std::size_t count) const {
    const std::size_t per_block = static_cast<std::size_t>(per_warp(count)) * warp_path::warps_per_block;
    return (count + per_block - 1) / per_block;
  }

  // grads (row floats) = the minibatch's gradient and loss terms; the terms also to term_log. round_base: the
  // device counter the shuffle round is formed from (round = *round_base * epochs + epoch).
  void enqueue(const ppo_minibatch_view<Net>& mb, const float* params, const std::uint64_t* round_base, int epoch,
               int epochs, float* grads, float* term_log, cudaStream_t s) {
    // The gemm path's products write the row itself: no partial rows to add up.
    if (path_ == gradient_path::gemm) return lt_->enqueue(mb, params, round_base, epoch, epochs, grads, s, term_log);
    const row_parts left = enqueue_parts(mb, params, round_base, epoch, epochs, s);
    ppo_sum_rows_kernel<<<(row + 255) / 256, 256, 0, s>>>(left.rows, left.count, row, Net::param_count, grads,
                                                          term_log);
    GMI_CUDA_TRY(cudaGetLastError());
  }

  // Rows whose sum in order (row 0 first) is the minibatch's gradient row.
  struct row_parts { const float* rows; std::size_t count; };
  // The gradient kernel and, for many partial rows, the first stage of their sum: what enqueue then adds up (or a
  // step kernel, ppo_step_kernel).
  row_parts enqueue_parts(const ppo_minibatch_view<Net>& mb, const float* params, const std::uint64_t* round_base,
                          int epoch, int epochs, cudaStream_t s) {
    std::size_t parts = 0;
    bool launched = false;
    if (path_ == gradient_path::gemm) {  // one row, no partial sums
      lt_->enqueue(mb, params, round_base, epoch, epochs, rows_.data(), s);
      return {rows_.data(), 1};
    }
    if constexpr (warp_path::fits) {
      if (path_ == gradient_path::warps) {
        parts = blocks(mb.count);
        ppo_warp_gradient_kernel<Net><<<static_cast<unsigned>(parts), warp_path::block, warp_path::smem_bytes, s>>>(
            mb, params, rows_.data(), round_base, epoch, epochs, per_warp(mb.count));
        launched = true;
      }
    }
    if constexpr (tile_path::fits) {
      if (path_ == gradient_path::tiles) {
        parts = (mb.count + tile_path::tile - 1) / tile_path::tile;
        if constexpr (!tile_path::shared_weights) {
          ppo_transpose_weights_kernel<Net><<<(Net::net::param_count + 255) / 256, 256, 0, s>>>(params, transposed_.data());
        }
        ppo_tile_gradient_kernel<Net><<<static_cast<unsigned>(parts), tile_path::block, tile_path::smem_bytes, s>>>(
            mb, params, transposed_.data(), rows_.data(), round_base, epoch, epochs);
        launched = true;
      }
    }
    if (!launched) {
      const unsigned blocks = (mb.count + thread_block - 1) / thread_block;
      parts = static_cast<std::size_t>(blocks) * (thread_block / 32);
      ppo_gradient_kernel<Net><<<blocks, thread_block, params_in_shared<Net> ? Net::param_count * sizeof(float) : 0, s>>>(
          mb, params, rows_.data(), round_base, epoch, epochs);
    }
    GMI_CUDA_TRY(cudaGetLastError());
    const float* sum_of = rows_.data();
    if (parts > 2 * group) {  // groups of `group` rows first, then the groups' rows
      const std::size_t groups = (parts + group - 1) / group;
      ppo_sum_row_groups_kernel<<<dim3((row + 255) / 256, static_cast<unsigned>(groups)), 256, 0, s>>>(
          rows_.data(), parts, group, row, partial_.data());
      GMI_CUDA_TRY(cudaGetLastError());
      sum_of = partial_.data();
      parts = groups;
    }
    return {sum_of, parts};
  }

 private:
  static constexpr std::size_t group = 16;
  gradient_path path_;
  int sms_ = 1, resident_ = 1;
  cuda::device_buffer<float> rows_, partial_, transposed_;  // transposed_: the tile kernel's weights, when not shared
  std::optional<lt_gradient<Net>> lt_;                      // the gemm path's buffers and plans
};

__global__ static void ppo_count_iteration_kernel(std::uint64_t* iteration) { *iteration += 1; }

// PopArt (rl/popart.hpp): the value row and bias rescaled from the statistics before the return normalizer's
// update (old: mean, std) to those after it (v). One block, a thread per weight.
__global__ static void ppo_popart_kernel(float* params, int weight_at, int bias_at, int hidden, const float* old,
                                         nn::normalizer_view v) {
  for (int k = static_cast<int>(threadIdx.x); k < hidden; k += static_cast<int>(blockDim.x))
    popart_rescale_weight(params, weight_at, k, old[1], v.std[0]);
  if (threadIdx.x == 0) popart_rescale_bias(params, bias_at, old[0], old[1], v.mean[0], v.std[0]);
}

template <class E, class Net>
struct ppo_device_ops {
  using trainer = ppo_trainer<E, Net, exec::cuda>;
  static constexpr int row = trainer::row;

  nn::network_config network;  // "auto" kernels settled by rl/wide_rule.hpp: for the gradient and the collection
  minibatch_gradient<Net> gradient;
  cuda::device_buffer<std::uint64_t> iteration;
  cuda::device_buffer<float> group_mean;  // a synced step kernel's mean row (the gradient buffer stays this GMI's);
                                          // the statistics gather's sums
  cuda::graph_exec graph;  // the whole iteration (synced with the statistics gathered on the host: the update)
  cuda::device_buffer<float> popart_old;  // the return normalizer's mean and std before its update
  bool warmed_up = false, graph_given = false;
  // The batched rollout (rl/batched_rollout.cuh), when the collection path is batched (rl/wide_rule.hpp).
  std::optional<batched_rollout<E, Net>> batched;

  explicit ppo_device_ops(trainer& t)
      : network(with_rule_kernels<Net>(t.config_.network, kernels_use::training, t.n_)),
        gradient(t.minibatch_, t.policy_.sm_count, network), iteration(1), group_mean(row), popart_old(2) {
    iteration.fill_bytes(0, t.policy_.stream);
    // A physics task whose env step takes a warp per environment collects batched by default (the fused
    // thread-per-env collection can not hand its step to a warp); --collection threads still wins.
    const bool env_warp = env_steps_in_warps<E>(t.envs_.params(), t.n_, t.policy_.sm_count);
    const bool batched_by_default = collects_batched_by_default<Net>(t.config_.network) || env_warp;
    if (parse_collection_path(detail::requested_collection_path(), batched_by_default) == collection_path::batched)
      batched.emplace(t.n_, t.envs_.view().params, network, t.policy_);
  }
  // PopArt around the return normalizer's update (ppo_trainer::update_value_statistics): its float mean and std
  // kept, then the value head rescaled to the new ones. Capturable.
  void popart_snapshot(trainer& t) {
    const nn::normalizer_view v = t.value_norm_.view();
    GMI_CUDA_TRY(cudaMemcpyAsync(popart_old.data(), v.mean, sizeof(float), cudaMemcpyDeviceToDevice, t.policy_.stream));
    GMI_CUDA_TRY(cudaMemcpyAsync(popart_old.data() + 1, v.std, sizeof(float), cudaMemcpyDeviceToDevice, t.policy_.stream));
  }
  void popart_rescale(trainer& t) {
    ppo_popart_kernel<<<1, 128, 0, t.policy_.stream>>>(t.params_.data(), trainer::value_weight_at, trainer::value_bias_at,
                                                        Net::hidden, popart_old.data(), t.value_norm_.view());
    GMI_CUDA_TRY(cudaGetLastError());
  }
  // The statistics gather's scratch follows the gradient buffer's length (ppo_trainer::widen_gradient_buffer).
  void widen(std::size_t floats) {
    if (floats > group_mean.size()) group_mean = cuda::device_buffer<float>(floats);
  }
  ppo_device_ops(const ppo_device_ops&) = delete;  // holds graphs and buffers of one trainer

  void set_iteration(trainer& t, std::uint64_t value) {
    GMI_CUDA_TRY(cudaMemcpyAsync(iteration.data(), &value, sizeof value, cudaMemcpyHostToDevice, t.policy_.stream));
    GMI_CUDA_TRY(cudaStreamSynchronize(t.policy_.stream));
  }

  static constexpr std::size_t shared_bytes() {
    return params_in_shared<Net> ? Net::param_count * sizeof(float) : 0;
  }
  static unsigned env_block(std::size_t n) { return n <= 4096 ? 32u : 128u; }

  void collect(trainer& t) {
    if (batched) {
      batched->set_stream(t.policy_.stream);
      batched->collect(t.rollout_view(), t.params_.data());
      return;
    }
    const unsigned block = env_block(t.n_);
    ppo_collect_kernel<E, Net><<<static_cast<unsigned>((t.n_ + block - 1) / block), block, shared_bytes(),
                                 t.policy_.stream>>>(t.rollout_view(), t.params_.data());
    GMI_CUDA_TRY(cudaGetLastError());
  }

  void serve(trainer& t, int steps) {
    const unsigned block = env_block(t.n_);
    ppo_serve_kernel<E, Net><<<static_cast<unsigned>((t.n_ + block - 1) / block), block, shared_bytes(),
                               t.policy_.stream>>>(t.rollout_view(), t.params_.data(), steps);
    GMI_CUDA_TRY(cudaGetLastError());
  }

  // Synced runs: this rollout's moments into t.local_stats_ (what gather_statistics all-gathers).
  void local_moments(trainer& t) {
    double* out = t.local_stats_.data();
    if (t.config_.normalize_advantage) {
      ppo_advantage_moments_kernel<<<1, 1024, 0, t.policy_.stream>>>(
          t.advantages_.data(), static_cast<std::uint32_t>(t.total_), out + trainer::stats_advantages);
      GMI_CUDA_TRY(cudaGetLastError());
    }
    if (t.config_.normalize_obs)
      t.obs_norm_.moments(device_span<const float>(t.obs_.data(), t.obs_.size()),
                          device_span<double>(out + trainer::stats_obs, 1 + 2 * std::size_t(trainer::obs_dim)));
    if (t.config_.normalize_value)
      t.value_norm_.moments(device_span<const float>(t.returns_.data(), t.returns_.size()),
                            device_span<double>(out + trainer::stats_returns, 3));
  }

  // Whether a synced trainer gathers the group's statistics in a kernel: its group shares rows long enough for
  // every member's records as words.
  static bool statistics_in_kernel(const trainer& t) {
    return t.sync_ && t.sync_->exchange.has_value() &&
           gather_words(t.sync_->world, trainer::stats_size) <= t.sync_->exchange->count;
  }

  void gather_statistics_in_kernel(trainer& t) {
    local_moments(t);
    ppo_stats_gather_args a;
    a.exchange = *t.sync_->exchange;
    a.local = t.local_stats_.data();
    a.own = t.grads_.data();
    a.sums = group_mean.data();
    a.merged = t.merged_stats_.data();
    a.advantage_stats = t.config_.normalize_advantage ? t.advantage_stats_.data() : nullptr;
    a.values = static_cast<int>(trainer::stats_size);
    a.part_at[0] = static_cast<int>(trainer::stats_advantages);
    a.part_dim[0] = 1;
    a.part_at[1] = static_cast<int>(trainer::stats_obs);
    a.part_dim[1] = trainer::obs_dim;
    a.part_at[2] = static_cast<int>(trainer::stats_returns);
    a.part_dim[2] = 1;
    ppo_stats_gather_kernel<<<1, ppo_stats_gather_block, 0, t.policy_.stream>>>(a);
    GMI_CUDA_TRY(cudaGetLastError());
  }

  // Collection and the advantage statistics (synced: the group's statistics gather, in a kernel or on the host).
  void enqueue_collect(trainer& t, bool rollout_given = false) {
    if (!rollout_given) collect(t);
    if (statistics_in_kernel(t)) {
      gather_statistics_in_kernel(t);
    } else if (t.sync_) {
      t.gather_statistics();
    } else if (t.config_.normalize_advantage) {
      enqueue_advantage_stats(t.advantages_.data(), t.total_, t.config_.advantage_window, t.advantage_held_.data(),
                              t.advantage_stats_.data(), t.policy_.stream);
    }
  }

  // The update: the return statistics (and PopArt), epochs x minibatches of gradient, the group's sum (synced),
  // Adam; then the observation statistics and the iteration counter. Capturable when the sync's sums are (no host
  // work depends on data).
  void enqueue_update(trainer& t) {
    const cudaStream_t s = t.policy_.stream;
    const bool one_kernel = steps_in_one_kernel(t);
    t.update_value_statistics();
    enqueue_ppo_schedules(t.config_, iteration.data(), t.adam_.lr_device(), t.lr_decay_span(), t.entropy_coef_.data(),
                          t.decay_span(t.config_.entropy_decay_env_steps), s);
    for (int e = 0; e < t.update_epochs(); ++e) {
      for (std::size_t b = 0; b < t.minibatches_; ++b) {
        float* terms = t.term_log_.data() + (e * t.minibatches_ + b) * term_count;
        if (one_kernel) {
          enqueue_step(t, e, b, terms);
        } else {
          gradient.enqueue(t.minibatch_view(0, e, b), t.params_.data(), iteration.data(), e, t.config_.epochs,
                           t.grads_.data(), terms, s);
          if (t.sync_) {
            t.sync_->sum_device(t.grads_.data(), t.grads_.size(), s);
            ppo_average_rows_kernel<<<(row + 255) / 256, 256, 0, s>>>(t.grads_.data(), row, Net::param_count,
                                                                      static_cast<float>(t.sync_->world), terms);
            GMI_CUDA_TRY(cudaGetLastError());
          }
          t.adam_.step(device_span<float>(t.params_.data(), Net::param_count),
                       device_span<const float>(t.grads_.data(), Net::param_count));
          if (lr_follows_kl(t.config_)) {
            ppo_adapt_lr_kernel<<<1, 1, 0, s>>>(terms, t.adam_.lr_device(), t.config_.kl_target,
                                                t.config_.min_learning_rate, kl_lr_ceiling(t.config_));
            GMI_CUDA_TRY(cudaGetLastError());
          }
        }
        enqueue_bound_log_std(t.config_, t.params_.data() + Net::param_count - Net::dist_param_count, Net::dist_param_count, s);
      }
    }
    t.update_statistics();
    ppo_count_iteration_kernel<<<1, 1, 0, s>>>(iteration.data());
    GMI_CUDA_TRY(cudaGetLastError());
  }

  // Whether a minibatch step after the gradient kernel is one ppo_step_kernel: a synced trainer with a row
  // exchange, and Adam in one block. A trainer alone keeps the row-sum kernels and Adam's kernel. Measured slower
  // and dropped (docs/architecture.md, figures in docs/results.md): ending the step in the gradient kernel's last
  // block (the tail in one block of 256 threads instead of kernels of 1024), batching the step's loads four
  // entries a thread, programmatic dependent launches of the gradient and step kernels, and, across GPUs, pushing
  // the partial rows ahead into the other GPUs' inboxes instead of the GPU's sum from the step kernel.
  static bool steps_in_one_kernel(const trainer& t) {
    return t.adam_.steps_in_one_block() && t.sync_ && t.sync_->exchange.has_value();
  }

  void enqueue_step(trainer& t, int e, std::size_t b, float* terms) {
    const cudaStream_t s = t.policy_.stream;
    ppo_step_args a;
    a.row = row;
    a.param_count = Net::param_count;
    a.own = t.grads_.data();
    a.mean = t.sync_ ? group_mean.data() : t.grads_.data();
    a.term_log = terms;
    a.params = t.params_.data();
    a.adam = t.adam_.block_step();
    if (t.sync_) a.exchange = *t.sync_->exchange;
    a.adapt_lr = lr_follows_kl(t.config_);
    a.lr = t.adam_.lr_device();
    a.kl_target = t.config_.kl_target;
    a.min_lr = t.config_.min_learning_rate;
    a.max_lr = kl_lr_ceiling(t.config_);
    const auto parts = gradient.enqueue_parts(t.minibatch_view(0, e, b), t.params_.data(), iteration.data(), e,
                                              t.config_.epochs, s);
    a.parts = parts.rows;
    a.part_count = parts.count;
    ppo_step_kernel<<<1, nn::adam_fused_block, 0, s>>>(a);
    GMI_CUDA_TRY(cudaGetLastError());
  }

  void release_graph() noexcept { graph = cuda::graph_exec{}; }
  // Replays `graph`, capturing what `work` enqueues the first time.
  template <class Work>
  void replay(cudaStream_t s, Work&& work) {
    if (!graph) graph = cuda::instantiate(cuda::capture(s, [&](cudaStream_t) { work(); }));
    graph.launch(s);
  }

  // rollout_given: CPU actors wrote the rollout (ppo_trainer::iterate_collected); a graph of the other kind is dropped.
  void iterate(trainer& t, bool rollout_given = false) {
    const cudaStream_t s = t.policy_.stream;
    if (std::exchange(graph_given, rollout_given) != rollout_given) release_graph();
    const bool replayable_sync = t.sync_ && t.sync_->replayed;
    if (!warmed_up || (t.sync_ && !replayable_sync)) {
      // The first iteration runs eagerly (lazy module loading stays out of the capture); so does every iteration
      // of a trainer whose sync may wait on the host between kernels.
      enqueue_collect(t, rollout_given);
      enqueue_update(t);
      if (!t.sync_) GMI_CUDA_TRY(cudaStreamSynchronize(s));
      warmed_up = true;
      return;
    }
    const bool whole = !t.sync_ || statistics_in_kernel(t);
    if (!whole) enqueue_collect(t, rollout_given);
    replay(s, [&] {
      if (whole) enqueue_collect(t, rollout_given);
      enqueue_update(t);
    });
    if (t.sync_) {
      // The graph's sum_device calls (none where the steps exchange rows in their own kernel).
      const std::size_t sums = steps_in_one_kernel(t) ? 0 : static_cast<std::size_t>(t.config_.epochs) * t.minibatches_;
      t.sync_->replayed(sums, s);
    }
  }
};

}  // namespace gmi::rl::detail

namespace gmi::rl {

// How the GPU trainer forms Net's minibatch gradients ("warps", "tiles", "threads" or "gemm"), for result lines;
// throws config_error when the requested path is one Net does not fit.
template <class Net>
const char* minibatch_gradient_name(const nn::network_config& cfg = {}) {
  return detail::gradient_path_name(detail::minibatch_gradient<Net>::chosen_path(cfg));
}

}  // namespace gmi::rl

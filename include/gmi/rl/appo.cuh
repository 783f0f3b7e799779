#pragma once
// The CUDA halves of gmi::rl::appo_actor and appo_learner: the actor collects one environment per thread (the
// weights snapshot in shared memory); the learner evaluates one column per thread (unpack, values, log-probs,
// V-trace), then runs ppo.cuh's kernels for the update (minibatch_gradient's rows summed in order, Adam, the
// adaptive-KL step size). The first update runs eagerly (lazy module loading stays out of the capture); it is
// captured as a CUDA graph the second time and replayed from then on: an update is epochs x minibatches of small
// kernels whose launches, not their work, set the trainer's pace (every pointer it reads is fixed at
// construction, and the shuffle round and learning-rate rule read device counters). A synced learner (appo_sync.hpp)
// sums the group's gradient rows after each minibatch's gradient and gathers the group's normalizer moments after
// the epochs, all inside the update (so inside the graph).

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include <gmi/cuda/check.hpp>
#include <gmi/cuda/graph.hpp>
#include <gmi/rl/appo.hpp>
#include <gmi/rl/appo_actor.hpp>
#include <gmi/rl/ppo.cuh>

namespace gmi::rl::detail {

template <class E, class Net>
__global__ static void appo_actor_collect_kernel(appo_actor_view<E, Net> v, const float* snapshot) {
  extern __shared__ float shared_snapshot[];
  constexpr int size = static_cast<int>(appo_snapshot_layout<Net>::size);
  const float* s = snapshot;
  if constexpr (size * sizeof(float) <= 48 * 1024) {
    for (int q = threadIdx.x; q < size; q += blockDim.x) shared_snapshot[q] = snapshot[q];
    __syncthreads();
    s = shared_snapshot;
  }
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < static_cast<std::size_t>(v.num_envs)) v.collect(i, s);
}

template <class Net>
__global__ static void appo_evaluate_kernel(appo_evaluate_view<Net> v, const float* params) {
  extern __shared__ float shared_params[];
  const float* p = stage_params<Net>(params, shared_params);
  const std::size_t c = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c < static_cast<std::size_t>(v.columns)) v.evaluate(c, p);
}

template <class Net>
__global__ static void appo_weight_advantages_kernel(appo_evaluate_view<Net> v, std::uint32_t n, const float* stats) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    v.weight_advantage(i, stats);
}

template <class E, class Net>
struct appo_actor_device_ops {
  static void collect(const appo_actor_view<E, Net>& v, const float* snapshot, cudaStream_t s) {
    constexpr std::size_t bytes = appo_snapshot_layout<Net>::size * sizeof(float);
    const unsigned block = v.num_envs <= 4096 ? 32u : 128u;
    appo_actor_collect_kernel<E, Net><<<static_cast<unsigned>((v.num_envs + block - 1) / block), block,
                                        bytes <= 48 * 1024 ? bytes : 0, s>>>(v, snapshot);
    GMI_CUDA_TRY(cudaGetLastError());
  }
};

template <class Net>
struct appo_device_ops {
  using learner = appo_learner<Net, exec::cuda>;
  static constexpr int row = learner::row;

  minibatch_gradient<Net> gradient;
  cuda::device_buffer<std::uint64_t> update_count;  // the shuffle round's base, read by the gradient kernel
  cuda::graph_exec graph;                           // the whole update, from the second on
  bool warmed_up = false;
  std::uint64_t replays = 0;                        // updates that ran as one graph launch

  explicit appo_device_ops(learner& l) : gradient(l.minibatch_, l.policy_.sm_count), update_count(1) {
    update_count.fill_bytes(0, l.policy_.stream);
    const float unit[2] = {0.0f, 1.0f};  // the advantages' statistics without normalization
    GMI_CUDA_TRY(cudaMemcpyAsync(l.advantage_stats_.data(), unit, sizeof unit, cudaMemcpyHostToDevice, l.policy_.stream));
    GMI_CUDA_TRY(cudaStreamSynchronize(l.policy_.stream));
  }

  static constexpr std::size_t shared_bytes() { return params_in_shared<Net> ? Net::param_count * sizeof(float) : 0; }

  void update(learner& l) {
    if (!warmed_up || !l.config_.replay_updates) {
      enqueue_update(l);
      warmed_up = true;
      return;
    }
    const cudaStream_t s = l.policy_.stream;
    if (!graph) graph = cuda::instantiate(cuda::capture(s, [&](cudaStream_t) { enqueue_update(l); }));
    graph.launch(s);
    ++replays;
  }

  // A synced learner's normalizers: its batch's moments in its own slots (the others zero), the group's sum (an
  // all-gather: every slot holds one member's record plus zeros), then every member merges the records in rank
  // order, so the normalizers stay identical.
  static void update_synced_normalizers(learner& l) {
    const cudaStream_t s = l.policy_.stream;
    const ppo_config& c = l.config_.ppo;
    if (!c.normalize_obs && !c.normalize_value) return;
    const std::size_t world = static_cast<std::size_t>(l.sync_->world), rank = static_cast<std::size_t>(l.sync_->rank);
    double* obs_slots = l.moment_slots_.data();
    double* value_slots = obs_slots + world * learner::obs_record();
    GMI_CUDA_TRY(cudaMemsetAsync(obs_slots, 0, l.moment_slots_.size() * sizeof(double), s));
    if (c.normalize_obs)
      l.obs_norm_.moments(device_span<const float>(l.obs_.data(), l.obs_.size()),
                          device_span<double>(obs_slots + rank * learner::obs_record(), learner::obs_record()));
    if (c.normalize_value)
      l.value_norm_.moments(device_span<const float>(l.returns_.data(), l.returns_.size()),
                            device_span<double>(value_slots + rank * learner::value_record(), learner::value_record()));
    l.sync_->sum_doubles(obs_slots, l.moment_slots_.size(), s);
    if (c.normalize_obs) l.obs_norm_.merge_in_order(device_span<const double>(obs_slots, world * learner::obs_record()));
    if (c.normalize_value)
      l.value_norm_.merge_in_order(device_span<const double>(value_slots, world * learner::value_record()));
  }

  void enqueue_update(learner& l) {
    const cudaStream_t s = l.policy_.stream;
    const ppo_config& c = l.config_.ppo;
    const unsigned block = l.columns_ <= 4096 ? 32u : 128u;
    appo_evaluate_kernel<Net><<<static_cast<unsigned>((l.columns_ + block - 1) / block), block, shared_bytes(), s>>>(
        l.evaluate_view(), l.params_.data());
    GMI_CUDA_TRY(cudaGetLastError());
    if (c.normalize_advantage) {
      ppo_advantage_stats_kernel<<<1, 1024, 0, s>>>(l.advantages_.data(), static_cast<std::uint32_t>(l.total_),
                                                    l.advantage_stats_.data());
      GMI_CUDA_TRY(cudaGetLastError());
    }
    if (l.config_.normalize_before_weights) {
      const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((l.total_ + 255) / 256, 4096));
      appo_weight_advantages_kernel<Net><<<blocks, 256, 0, s>>>(l.evaluate_view(), static_cast<std::uint32_t>(l.total_),
                                                                l.advantage_stats_.data());
      GMI_CUDA_TRY(cudaGetLastError());
    }
    if (c.schedule == lr_schedule::linear) {
      ppo_linear_lr_kernel<<<1, 1, 0, s>>>(update_count.data(), l.adam_.lr_device(), c.learning_rate,
                                           c.min_learning_rate, l.lr_decay_span());
      GMI_CUDA_TRY(cudaGetLastError());
    }
    for (int e = 0; e < c.epochs; ++e) {
      for (std::size_t b = 0; b < l.minibatches_; ++b) {
        float* terms = l.term_log_.data() + (e * l.minibatches_ + b) * term_count;
        gradient.enqueue(l.minibatch_view(0, e, b), l.params_.data(), update_count.data(), e, c.epochs,
                         l.grads_.data(), terms, s);
        if (l.sync_) {  // the group's mean gradient and loss terms (so the adaptive-KL step size agrees too)
          l.sync_->sum_floats(l.grads_.data(), l.grads_.size(), s);
          ppo_average_rows_kernel<<<(row + 255) / 256, 256, 0, s>>>(l.grads_.data(), row, Net::param_count,
                                                                    static_cast<float>(l.sync_->world), terms);
          GMI_CUDA_TRY(cudaGetLastError());
        }
        l.adam_.step(device_span<float>(l.params_.data(), Net::param_count),
                     device_span<const float>(l.grads_.data(), Net::param_count));
        if (lr_follows_kl(c)) {
          ppo_adapt_lr_kernel<<<1, 1, 0, s>>>(terms, l.adam_.lr_device(), c.kl_target, c.min_learning_rate,
                                              kl_lr_ceiling(c));
          GMI_CUDA_TRY(cudaGetLastError());
        }
      }
    }
    if (l.sync_) {
      update_synced_normalizers(l);
    } else {
      if (c.normalize_obs) l.obs_norm_.update(device_span<const float>(l.obs_.data(), l.obs_.size()));
      if (c.normalize_value) l.value_norm_.update(device_span<const float>(l.returns_.data(), l.returns_.size()));
    }
    ppo_count_iteration_kernel<<<1, 1, 0, s>>>(update_count.data());
    GMI_CUDA_TRY(cudaGetLastError());
  }
};

}  // namespace gmi::rl::detail

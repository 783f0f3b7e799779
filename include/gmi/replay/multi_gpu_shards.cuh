#pragma once
// Device shards on several GPUs of one process sampled as one table (gpu_groups.hpp's algorithm): one
// device_shard_set per GPU (that GPU's tables); a sample gathers every shard's total into pinned host memory (one
// small copy a GPU, asynchronous, then one wait for all), computes the plan (plan_groups: each GPU's share of the
// draws, its seed and scale) on the host, and each GPU draws its share over its own shards on its own stream
// (device_shard_set::sample_global), its probabilities scaled to global ones (total of the GPU over the sum) and its
// smallest one copied back; after a second wait, each GPU computes its importance weights with the smallest
// probability of all GPUs. Each GPU's part of the batch stays on that GPU (a data-parallel learner there uses it).
// The totals go through pinned host memory whether or not the GPUs have peer access: the host computes the plan and
// launches each GPU's draw, so a peer copy of the totals would save no wait.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/replay/detail/global_draw.hpp>
#include <gmi/replay/detail/global_kernels.cuh>
#include <gmi/replay/device_placement.cuh>
#include <gmi/replay/gpu_groups.hpp>

namespace gmi::replay {

namespace detail {
// prob[b] *= scale (one rounding, as the host's product) and low[0] = the smallest positive result (1 if none): one
// block of global_weight_block threads.
__global__ static void scale_min_kernel(double* prob, std::int64_t n, double scale, double* low_out) {
  __shared__ double low[global_weight_block];
  double m = 1.0;
  for (std::int64_t b = threadIdx.x; b < n; b += blockDim.x) {
    prob[b] = product(prob[b], scale);
    if (prob[b] > 0.0 && prob[b] < m) m = prob[b];
  }
  const double p_min = block_min(m, low);
  if (threadIdx.x == 0) *low_out = p_min;
}
__global__ static void weights_of_kernel(const double* prob, std::int64_t n, double p_min, double beta,
                                         float* weight) {
  const std::int64_t b = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (b < n) weight[b] = importance_weight(prob[b], p_min, beta);
}

// One group's share on its device (the device current): its draws over its set's shards (sample_global with the
// group's seed, into out), their probabilities scaled to global ones and the smallest copied to low_host (pinned),
// all on the set's stream; the caller waits for that stream before reading low_host.
inline void draw_scaled_share(device_shard_set& set, const sampler& s, std::size_t share, std::size_t length,
                              std::uint64_t seed, double scale, global_device_batch& out, double* low_dev,
                              double* low_host) {
  set.sample_global(s, share, length, seed, 0.0, out);
  const cudaStream_t st = set.stream();
  scale_min_kernel<<<1, global_weight_block, 0, st>>>(out.batch.probability.data(), static_cast<std::int64_t>(share),
                                                       scale, low_dev);
  GMI_CUDA_TRY(cudaGetLastError());
  GMI_CUDA_TRY(cudaMemcpyAsync(low_host, low_dev, 8, cudaMemcpyDeviceToHost, st));
}
// The group's importance weights with the smallest probability of every group's draws, on the set's stream.
inline void enqueue_weights(device_shard_set& set, std::size_t share, double p_min, double beta,
                            global_device_batch& out) {
  const auto m = static_cast<std::int64_t>(share);
  weights_of_kernel<<<blocks_for(m), 256, 0, set.stream()>>>(out.batch.probability.data(), m, p_min, beta,
                                                             out.weight.data());
  GMI_CUDA_TRY(cudaGetLastError());
}
}  // namespace detail

// One GPU's tables: the device they live on (and were created on) and the tables.
struct gpu_shards {
  int device = 0;
  std::vector<device_table*> tables;
};

class multi_gpu_shard_set {
 public:
  // The tables outlive the set. Each GPU gets a device_shard_set (created with its device current) and pinned
  // buffers for its totals and smallest probability.
  explicit multi_gpu_shard_set(std::vector<gpu_shards> gpus, placement_rule rule = {}) : gpus_(std::move(gpus)) {
    require(!gpus_.empty() && gpus_.size() <= 64, "multi_gpu_shard_set GPUs", gpus_.size(), "1 .. 64");
    int prev = 0;
    GMI_CUDA_TRY(cudaGetDevice(&prev));
    for (std::size_t g = 0; g < gpus_.size(); ++g) {
      require(!gpus_[g].tables.empty(), "multi_gpu_shard_set GPU " + std::to_string(g) + " tables", 0, "1 or more");
      GMI_CUDA_TRY(cudaSetDevice(gpus_[g].device));
      sets_.push_back(std::make_unique<device_shard_set>(gpus_[g].tables, rule));
      totals_.emplace_back(gpus_[g].tables.size());
      low_.emplace_back(1);
      low_dev_.emplace_back(1);
    }
    GMI_CUDA_TRY(cudaSetDevice(prev));
  }

  // Each GPU's set and buffers freed with its device current.
  ~multi_gpu_shard_set() {
    int prev = 0;
    if (cudaGetDevice(&prev) != cudaSuccess) return;
    for (std::size_t g = 0; g < sets_.size(); ++g) {
      if (cudaSetDevice(gpus_[g].device) != cudaSuccess) continue;
      sets_[g].reset();
      low_dev_[g] = {};
    }
    (void)cudaSetDevice(prev);
  }
  multi_gpu_shard_set(const multi_gpu_shard_set&) = delete;
  multi_gpu_shard_set& operator=(const multi_gpu_shard_set&) = delete;

  // n draws over every shard of every GPU (prioritized by total priority, or uniform over all items); outs[g]: GPU
  // g's part (its share of draws, on its device: windows of `length` steps, keys, global probabilities, shard index
  // within that GPU's tables, importance weights). Two host waits (the totals, the smallest probabilities). Returns
  // the plan (each GPU's total, share, seed, scale). A GPU whose share is 0 gets outs[g].batch.batch = 0.
  group_plan sample(const sampler& s, std::size_t n, std::size_t length, std::uint64_t seed, double beta,
                    std::vector<global_device_batch>& outs) {
    std::size_t shards = 0;
    for (const gpu_shards& g : gpus_) shards += g.tables.size();
    check_global_sample(s, shards, n, beta);
    int prev = 0;
    GMI_CUDA_TRY(cudaGetDevice(&prev));
    const std::size_t G = gpus_.size();
    for (std::size_t g = 0; g < G; ++g) {  // the gather of the totals
      GMI_CUDA_TRY(cudaSetDevice(gpus_[g].device));
      sets_[g]->enqueue_totals(s, totals_[g].data());
    }
    std::vector<std::vector<double>> totals(G);
    for (std::size_t g = 0; g < G; ++g) {
      GMI_CUDA_TRY(cudaStreamSynchronize(sets_[g]->stream()));
      totals[g].assign(totals_[g].data(), totals_[g].data() + totals_[g].size());
    }
    group_plan plan = plan_groups(totals, n, seed);
    outs.resize(G);
    for (std::size_t g = 0; g < G; ++g) {  // each GPU's share, scaled, and its smallest probability
      outs[g].batch.batch = 0;
      low_[g].data()[0] = 1.0;
      if (plan.shares[g] == 0) continue;
      GMI_CUDA_TRY(cudaSetDevice(gpus_[g].device));
      detail::draw_scaled_share(*sets_[g], s, plan.shares[g], length, plan.seeds[g], plan.scale[g], outs[g],
                                low_dev_[g].data(), low_[g].data());
    }
    double p_min = 1.0;
    for (std::size_t g = 0; g < G; ++g) {
      if (plan.shares[g] == 0) continue;
      GMI_CUDA_TRY(cudaStreamSynchronize(sets_[g]->stream()));
      if (low_[g].data()[0] < p_min) p_min = low_[g].data()[0];
    }
    for (std::size_t g = 0; g < G; ++g) {  // the weights with every GPU's smallest probability
      if (plan.shares[g] == 0) continue;
      GMI_CUDA_TRY(cudaSetDevice(gpus_[g].device));
      detail::enqueue_weights(*sets_[g], plan.shares[g], p_min, beta, outs[g]);
    }
    GMI_CUDA_TRY(cudaSetDevice(prev));
    return plan;
  }

  // GPU g's set (its stream: where outs[g] is ready; its placement step).
  [[nodiscard]] device_shard_set& set(std::size_t g) { return *sets_.at(g); }
  [[nodiscard]] std::size_t gpus() const noexcept { return gpus_.size(); }
  [[nodiscard]] int device(std::size_t g) const { return gpus_.at(g).device; }

 private:
  std::vector<gpu_shards> gpus_;
  std::vector<std::unique_ptr<device_shard_set>> sets_;
  std::vector<gmi::cuda::pinned_buffer<double>> totals_, low_;
  std::vector<gmi::cuda::device_buffer<double>> low_dev_;
};

}  // namespace gmi::replay

#pragma once
// running_mean_std<exec::cuda>: the running statistics in device memory, updated from a device batch: the
// batch is cut into fixed sample ranges, each range's moments come from one block (Welford per lane, lanes merged
// in order), the ranges' moments are merged by a fixed tree (deterministic), and one block merges the batch into
// the record [count | mean | M2]. Needs nvcc.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <gmi/core/span.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/nn/normalizer.hpp>

namespace gmi::nn {

namespace detail {

inline constexpr int moments_features = 32;  // threadIdx.x: consecutive features, coalesced reads of a row
inline constexpr int moments_lanes = 16;     // threadIdx.y: sample lanes
// A batch is cut into at most moments_parts ranges of at least moments_min_part samples. Each lane's Welford
// update is a chain of dependent double divisions: one block walking 65536 samples took 0.87 ms a feature group
// (H200), so ranges go to blocks of their own.
inline constexpr int moments_parts = 256;
inline constexpr std::size_t moments_min_part = 256;

// The ranges a batch of n samples is cut into (1 .. moments_parts), and the samples per range.
inline int moments_part_count(std::size_t n) {
  const std::size_t parts = n / moments_min_part;
  return static_cast<int>(parts < 1 ? 1 : parts > moments_parts ? moments_parts : parts);
}

// Range blockIdx.y of x[n][dim] (`per` samples each, the last one shorter): its record [count | mean | M2] at
// out + blockIdx.y * (1 + 2 * dim).
__global__ static void batch_moments_kernel(const float* GMI_RESTRICT x, std::size_t n, std::size_t per, int dim,
                                            double* GMI_RESTRICT out) {
  __shared__ double sc[moments_lanes][moments_features], sm[moments_lanes][moments_features],
      sq[moments_lanes][moments_features];
  const int f = static_cast<int>(blockIdx.x) * moments_features + static_cast<int>(threadIdx.x);
  const int lane = static_cast<int>(threadIdx.y);
  const std::size_t begin = static_cast<std::size_t>(blockIdx.y) * per;
  const std::size_t end = begin + per < n ? begin + per : n;
  double* batch = out + static_cast<std::size_t>(blockIdx.y) * (1 + 2 * static_cast<std::size_t>(dim));
  double c = 0, mean = 0, m2 = 0;
  if (f < dim) {
    for (std::size_t s = begin + lane; s < end; s += moments_lanes) {
      const double v = x[s * dim + f];
      c += 1;
      const double d = v - mean;
      mean += d / c;
      m2 += d * (v - mean);
    }
  }
  sc[lane][threadIdx.x] = c;
  sm[lane][threadIdx.x] = mean;
  sq[lane][threadIdx.x] = m2;
  __syncthreads();
  if (lane != 0 || f >= dim) return;
  for (int k = 1; k < moments_lanes; ++k) {
    merge_moments(c, mean, m2, sc[k][threadIdx.x], sm[k][threadIdx.x], sq[k][threadIdx.x]);
    c += sc[k][threadIdx.x];
  }
  batch[1 + f] = mean;
  batch[1 + dim + f] = m2;
  if (f == 0) batch[0] = c;
}

// batch = the `parts` range records merged by a fixed tree (feature blockIdx.x; blockDim.x == moments_parts).
__global__ static void merge_parts_kernel(const double* GMI_RESTRICT parts_records, int parts, int dim,
                                          double* GMI_RESTRICT batch) {
  __shared__ double c[moments_parts], mean[moments_parts], m2[moments_parts];
  const int f = static_cast<int>(blockIdx.x), t = static_cast<int>(threadIdx.x);
  const std::size_t record = 1 + 2 * static_cast<std::size_t>(dim);
  c[t] = mean[t] = m2[t] = 0.0;
  if (t < parts) {
    const double* r = parts_records + static_cast<std::size_t>(t) * record;
    c[t] = r[0];
    mean[t] = r[1 + f];
    m2[t] = r[1 + dim + f];
  }
  __syncthreads();
  for (int half = moments_parts / 2; half > 0; half /= 2) {
    if (t < half) {
      merge_moments(c[t], mean[t], m2[t], c[t + half], mean[t + half], m2[t + half]);
      c[t] += c[t + half];
    }
    __syncthreads();
  }
  if (t == 0) {
    batch[1 + f] = mean[0];
    batch[1 + dim + f] = m2[0];
    if (f == 0) batch[0] = c[0];
  }
}

// One block: stats = merge(stats, other) under the window (normalizer.hpp); float caches refreshed. The count is read before anyone writes it.
__global__ static void merge_stats_kernel(double* stats, const double* GMI_RESTRICT other, int dim, double epsilon,
                                          double window, float* GMI_RESTRICT mean_f, float* GMI_RESTRICT std_f) {
  const double held = stats[0], cb = other ? other[0] : 0.0;
  const double ca = other ? kept_count(held, cb, window) : held;
  __syncthreads();
  for (int f = static_cast<int>(threadIdx.x); f < dim; f += static_cast<int>(blockDim.x)) {
    if (other && ca < held) stats[1 + dim + f] *= ca / held;
    if (other) merge_moments(ca, stats[1 + f], stats[1 + dim + f], cb, other[1 + f], other[1 + dim + f]);
    float_stats(ca + cb, stats[1 + f], stats[1 + dim + f], epsilon, mean_f[f], std_f[f]);
  }
  __syncthreads();
  if (threadIdx.x == 0) stats[0] = ca + cb;
}

// out = the `count` records [n | mean | M2] at `records`, merged in their order (merge_in_order, on the device):
// thread f merges feature f; thread 0 also adds the counts.
__global__ static void merge_records_kernel(const double* GMI_RESTRICT records, int count, int dim,
                                            double* GMI_RESTRICT out) {
  const std::size_t size = 1 + 2 * static_cast<std::size_t>(dim);
  for (int f = static_cast<int>(threadIdx.x); f < dim; f += static_cast<int>(blockDim.x)) {
    double n = records[0], mean = records[1 + f], m2 = records[1 + dim + f];
    for (int r = 1; r < count; ++r) {
      const double* b = records + static_cast<std::size_t>(r) * size;
      merge_moments(n, mean, m2, b[0], b[1 + f], b[1 + dim + f]);
      n += b[0];
    }
    out[1 + f] = mean;
    out[1 + dim + f] = m2;
  }
  if (threadIdx.x == 0) {
    double n = 0;
    for (int r = 0; r < count; ++r) n += records[static_cast<std::size_t>(r) * size];
    out[0] = n;
  }
}

__global__ static void normalize_kernel(normalizer_view v, const float* GMI_RESTRICT x, float* GMI_RESTRICT y,
                                        std::size_t total) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride)
    y[i] = v.normalize(static_cast<int>(i % static_cast<std::size_t>(v.dim)), x[i]);
}

}  // namespace detail

template <>
class running_mean_std<exec::cuda> {
 public:
  running_mean_std(int dim, normalizer_config config, exec::cuda policy)
      : dim_(dim), config_(config), policy_(policy) {
    gmi::require(dim >= 1, "normalizer dim", dim, ">= 1");
    config_.validate();
    const std::size_t record = 1 + 2 * static_cast<std::size_t>(dim);
    stats_ = cuda::device_buffer<double>(record);
    batch_ = cuda::device_buffer<double>(record);
    parts_ = cuda::device_buffer<double>(record * detail::moments_parts);
    cache_ = cuda::device_buffer<float>(2 * static_cast<std::size_t>(dim));
    stats_.fill_bytes(0, policy_.stream);
    refresh(nullptr);
  }

  [[nodiscard]] int dim() const noexcept { return dim_; }
  // The record [count | mean | M2] in device memory, what another instance merges.
  [[nodiscard]] device_span<const double> stats() const noexcept { return {stats_.data(), stats_.size()}; }
  // A host copy of the record; waits for the stream.
  [[nodiscard]] std::vector<double> stats_on_host() const {
    std::vector<double> out(stats_.size());
    GMI_CUDA_TRY(cudaMemcpyAsync(out.data(), stats_.data(), stats_.size_bytes(), cudaMemcpyDeviceToHost, policy_.stream));
    GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));
    return out;
  }

  // Folds a batch x[n][dim] (device memory) in. Asynchronous.
  void update(device_span<const float> x) {
    gmi::require(x.size() % std::size_t(dim_) == 0, "normalizer update: batch size", x.size(),
                 "a multiple of dim " + std::to_string(dim_));
    if (x.size() / dim_ == 0) return;
    moments(x, batch_.span());
    refresh(batch_.data());
  }

  // Writes the record [n | mean | M2] of a batch x[n][dim] to `out` (device memory), what update() merges;
  // instances that each take in part of one batch exchange these and merge them all (merge_in_order), so they
  // end with the same statistics. Asynchronous; an empty batch writes nothing.
  void moments(device_span<const float> x, device_span<double> out) const {
    gmi::require(x.size() % std::size_t(dim_) == 0, "normalizer moments: batch size", x.size(),
                 "a multiple of dim " + std::to_string(dim_));
    gmi::require(out.size() == stats_.size(), "normalizer moments: record size", out.size(),
                 "== 1 + 2 * dim = " + std::to_string(stats_.size()));
    const std::size_t n = x.size() / dim_;
    if (n == 0) return;
    const int parts = detail::moments_part_count(n);
    const std::size_t per = (n + static_cast<std::size_t>(parts) - 1) / static_cast<std::size_t>(parts);
    const dim3 block(detail::moments_features, detail::moments_lanes);
    const dim3 grid(static_cast<unsigned>((dim_ + detail::moments_features - 1) / detail::moments_features),
                    static_cast<unsigned>(parts));
    detail::batch_moments_kernel<<<grid, block, 0, policy_.stream>>>(x.data(), n, per, dim_,
                                                                     parts == 1 ? out.data() : parts_.data());
    GMI_CUDA_TRY(cudaGetLastError());
    if (parts > 1) {
      detail::merge_parts_kernel<<<static_cast<unsigned>(dim_), detail::moments_parts, 0, policy_.stream>>>(
          parts_.data(), parts, dim_, out.data());
      GMI_CUDA_TRY(cudaGetLastError());
    }
  }

  // Merges another record [count | mean | M2] of the same dim, in device memory.
  void merge(device_span<const double> other) {
    gmi::require(other.size() == stats_.size(), "normalizer merge: record size", other.size(),
                 "== 1 + 2 * dim = " + std::to_string(stats_.size()));
    refresh(other.data());
  }

  // Merges k records [count | mean | M2] laid end to end in device memory, first merged with each other in their
  // order (nn::merge_in_order) and then into the statistics as one batch: instances that each took part of one
  // batch and gathered every part's record end with the same statistics, bit for bit. Asynchronous.
  void merge_in_order(device_span<const double> records) {
    gmi::require(!records.empty() && records.size() % stats_.size() == 0, "normalizer merge_in_order: record values",
                 records.size(), "a positive multiple of 1 + 2 * dim = " + std::to_string(stats_.size()));
    const int count = static_cast<int>(records.size() / stats_.size());
    detail::merge_records_kernel<<<1, 256, 0, policy_.stream>>>(records.data(), count, dim_, batch_.data());
    GMI_CUDA_TRY(cudaGetLastError());
    refresh(batch_.data());
  }

  // Replaces the statistics with a record in device memory.
  void assign(device_span<const double> record) {
    gmi::require(record.size() == stats_.size(), "normalizer assign: record size", record.size(),
                 "== 1 + 2 * dim = " + std::to_string(stats_.size()));
    GMI_CUDA_TRY(cudaMemcpyAsync(stats_.data(), record.data(), stats_.size_bytes(), cudaMemcpyDeviceToDevice,
                                 policy_.stream));
    refresh(nullptr);
  }

  // Device pointers: pass by value to a kernel and call normalize(i, x) per element.
  [[nodiscard]] normalizer_view view() const noexcept {
    return {cache_.data(), cache_.data() + dim_, dim_, config_.clip, config_.symlog, config_.center};
  }

  void normalize(device_span<const float> x, device_span<float> y) const {
    gmi::require(y.size() == x.size(), "normalizer normalize: output size", y.size(), "== input size " + std::to_string(x.size()));
    if (x.empty()) return;
    const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((x.size() + 255) / 256, 4096));
    detail::normalize_kernel<<<blocks, 256, 0, policy_.stream>>>(view(), x.data(), y.data(), x.size());
    GMI_CUDA_TRY(cudaGetLastError());
  }

 private:
  void refresh(const double* other) {
    detail::merge_stats_kernel<<<1, 256, 0, policy_.stream>>>(stats_.data(), other, dim_, config_.epsilon,
                                                              config_.window, cache_.data(), cache_.data() + dim_);
    GMI_CUDA_TRY(cudaGetLastError());
  }

  int dim_;
  normalizer_config config_;
  exec::cuda policy_;
  cuda::device_buffer<double> stats_, batch_;
  cuda::device_buffer<double> parts_;  // the ranges' records of a batch (moments_parts of them at most)
  cuda::device_buffer<float> cache_;  // mean_f[dim] then std_f[dim]
};

}  // namespace gmi::nn

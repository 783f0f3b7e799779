#pragma once
// The CPU-staged baseline (how Reverb and most Python replays feed a GPU learner): the table in host memory,
// windows sampled and gathered by CPU threads into pinned buffers, then copied to the device. Same samplers,
// same items for a seed as the device table: benches compare the two on equal work.

#include <cuda_runtime_api.h>

#include <vector>

#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/replay/host_table.hpp>

namespace gmi::replay {

class cpu_staged {
 public:
  explicit cpu_staged(table_spec spec, unsigned gather_threads = 1, rate_limiter limiter = rate_limiter::min_size(1),
                      std::chrono::milliseconds timeout = std::chrono::seconds(10))
      : table_(std::move(spec), std::move(limiter), timeout), threads_(gather_threads) {
    require(gather_threads >= 1 && gather_threads <= 256, "cpu_staged gather threads", gather_threads, "1 .. 256");
  }

  [[nodiscard]] host_table& table() noexcept { return table_; }

  // Samples and gathers on the CPU into pinned memory, then copies the batch to device buffers on stream s
  // and waits for the copy: the batch is on the device when this returns.
  void sample(const sampler& smp, std::size_t n, std::size_t length, std::uint64_t seed, cudaStream_t s) {
    const auto& spec = table_.spec();
    if (pinned_.size() != spec.columns.size() || n * length != staged_rows_) {
      staged_rows_ = n * length;
      pinned_.clear();
      device_.clear();
      for (const column& c : spec.columns) {
        pinned_.emplace_back(staged_rows_ * c.width);
        device_.emplace_back(staged_rows_ * c.width);
      }
      mask_pinned_ = gmi::cuda::pinned_buffer<float>(staged_rows_);
      mask_device_ = gmi::cuda::device_buffer<float>(staged_rows_);
    }
    std::vector<void*> dst;
    for (auto& p : pinned_) dst.push_back(p.data());
    table_.sample_into(smp, n, length, seed, info_, dst, mask_pinned_.data(), threads_);
    for (std::size_t c = 0; c < pinned_.size(); ++c)
      GMI_CUDA_TRY(cudaMemcpyAsync(device_[c].data(), pinned_[c].data(), pinned_[c].size_bytes(), cudaMemcpyHostToDevice, s));
    GMI_CUDA_TRY(cudaMemcpyAsync(mask_device_.data(), mask_pinned_.data(), mask_pinned_.size_bytes(), cudaMemcpyHostToDevice, s));
    GMI_CUDA_TRY(cudaStreamSynchronize(s));
  }

  [[nodiscard]] const sample_info& info() const noexcept { return info_; }
  [[nodiscard]] const std::uint32_t* device_column(std::size_t c) const { return device_[c].data(); }
  [[nodiscard]] const float* device_mask() const { return mask_device_.data(); }

 private:
  host_table table_;
  unsigned threads_;
  std::size_t staged_rows_ = 0;
  sample_info info_;
  std::vector<gmi::cuda::pinned_buffer<std::uint32_t>> pinned_;
  std::vector<gmi::cuda::device_buffer<std::uint32_t>> device_;
  gmi::cuda::pinned_buffer<float> mask_pinned_;
  gmi::cuda::device_buffer<float> mask_device_;
};

}  // namespace gmi::replay

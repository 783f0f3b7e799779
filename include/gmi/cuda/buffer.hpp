#pragma once
// Owning buffers: device_buffer<T> (cudaMalloc) and pinned_buffer<T> (page-locked host memory, cudaMallocHost),
// with spans over them and asynchronous copies on a stream.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include <gmi/core/span.hpp>
#include <gmi/cuda/check.hpp>

namespace gmi::cuda {

namespace detail {
inline std::size_t checked_bytes(std::size_t count, std::size_t element_size) {
  if (element_size != 0 && count > std::numeric_limits<std::size_t>::max() / element_size) {
    throw gmi::config_error(gmi::got_need("buffer element count", count, "a size whose byte count fits in size_t"));
  }
  return count * element_size;
}
}  // namespace detail

// Device bytes held through device_buffer by the calling thread, now and at most since the last reset: a GMI
// (one thread) measures its own footprint this way, e.g. for the plan explorer's memory projection. Buffers
// moved to and freed on another thread count there (the count never goes below 0).
struct thread_device_bytes {
  std::uint64_t now = 0, peak = 0;
};
namespace detail {
inline thread_local thread_device_bytes device_bytes_of_thread{};
inline void count_device_bytes(std::int64_t delta) noexcept {
  auto& c = device_bytes_of_thread;
  const std::int64_t next = static_cast<std::int64_t>(c.now) + delta;
  c.now = next > 0 ? static_cast<std::uint64_t>(next) : 0;
  if (c.now > c.peak) c.peak = c.now;
}
}  // namespace detail
[[nodiscard]] inline thread_device_bytes device_bytes_of_this_thread() noexcept { return detail::device_bytes_of_thread; }
inline void reset_device_bytes_peak() noexcept { detail::device_bytes_of_thread.peak = detail::device_bytes_of_thread.now; }

template <class T>
class device_buffer {
  static_assert(std::is_trivially_copyable_v<T>, "gmi::cuda::device_buffer holds trivially copyable types only");

 public:
  device_buffer() = default;
  explicit device_buffer(std::size_t count) : size_(count) {
    if (count) {
      const cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&data_), detail::checked_bytes(count, sizeof(T)));
      if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        std::size_t free_bytes = 0, total = 0;
        cudaMemGetInfo(&free_bytes, &total);
        throw gmi::cuda_error(static_cast<int>(e),
                              gmi::got_need("device allocation (bytes)", count * sizeof(T),
                                            "<= free device memory (" + std::to_string(free_bytes) + " bytes)"));
      }
      GMI_CUDA_TRY(e);
      detail::count_device_bytes(static_cast<std::int64_t>(count * sizeof(T)));
    }
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~device_buffer() { release(); }

  [[nodiscard]] T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  [[nodiscard]] device_span<T> span() const noexcept { return {data_, size_}; }
  operator device_span<T>() const noexcept { return span(); }              // NOLINT
  operator device_span<const T>() const noexcept { return {data_, size_}; }  // NOLINT

  // Byte-wise fill (0 for zeros), on the stream.
  void fill_bytes(int byte, cudaStream_t s) { GMI_CUDA_TRY(cudaMemsetAsync(data_, byte, size_bytes(), s)); }

 private:
  void release() noexcept {
    if (data_) {
      cudaFree(data_);
      detail::count_device_bytes(-static_cast<std::int64_t>(size_bytes()));
    }
    data_ = nullptr;
    size_ = 0;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

template <class T>
class pinned_buffer {
  static_assert(std::is_trivially_copyable_v<T>, "gmi::cuda::pinned_buffer holds trivially copyable types only");

 public:
  pinned_buffer() = default;
  explicit pinned_buffer(std::size_t count) : size_(count) {
    if (count) GMI_CUDA_TRY(cudaMallocHost(reinterpret_cast<void**>(&data_), detail::checked_bytes(count, sizeof(T))));
  }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;
  pinned_buffer(pinned_buffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  pinned_buffer& operator=(pinned_buffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~pinned_buffer() { release(); }

  [[nodiscard]] T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  [[nodiscard]] host_span<T> span() const noexcept { return {data_, size_}; }
  T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T* begin() const noexcept { return data_; }
  T* end() const noexcept { return data_ + size_; }

 private:
  void release() noexcept {
    if (data_) cudaFreeHost(data_);
    data_ = nullptr;
    size_ = 0;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

// Asynchronous copies on a stream; sizes must match (config_error otherwise). T is taken from the destination
// only, so a span of T (or a buffer) converts to the const source without spelling the type.
template <class T>
void copy(device_span<T> dst, host_span<const std::type_identity_t<T>> src, cudaStream_t s) {
  gmi::require(dst.size() == src.size(), "copy to device: element count", src.size(), "== destination size " + std::to_string(dst.size()));
  GMI_CUDA_TRY(cudaMemcpyAsync(dst.data(), src.data(), src.size_bytes(), cudaMemcpyHostToDevice, s));
}
template <class T>
void copy(host_span<T> dst, device_span<const std::type_identity_t<T>> src, cudaStream_t s) {
  gmi::require(dst.size() == src.size(), "copy to host: element count", src.size(), "== destination size " + std::to_string(dst.size()));
  GMI_CUDA_TRY(cudaMemcpyAsync(dst.data(), src.data(), src.size_bytes(), cudaMemcpyDeviceToHost, s));
}
template <class T>
void copy(device_span<T> dst, device_span<const std::type_identity_t<T>> src, cudaStream_t s) {
  gmi::require(dst.size() == src.size(), "device copy: element count", src.size(), "== destination size " + std::to_string(dst.size()));
  GMI_CUDA_TRY(cudaMemcpyAsync(dst.data(), src.data(), src.size_bytes(), cudaMemcpyDeviceToDevice, s));
}

}  // namespace gmi::cuda

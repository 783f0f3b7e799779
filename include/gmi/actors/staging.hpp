#pragma once
// Host arrays the CPU actors and the GPU hand each other: page-aligned, and page-locked (cudaHostRegister) when
// a CUDA device is present, so the GPU's copies of observations and actions run as DMA without a staging copy.
// On machines without a GPU they are plain host memory and everything else works the same.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include <gmi/core/error.hpp>
#include <gmi/core/span.hpp>

namespace gmi::actors {

// Whether this process sees a CUDA device (asked once).
[[nodiscard]] inline bool cuda_device_present() {
  static const bool present = [] {
    int n = 0;
    const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    if (!ok) (void)cudaGetLastError();  // clear the sticky "no device" error for later callers
    return ok;
  }();
  return present;
}

template <class T>
class staging_buffer {
  static_assert(std::is_trivially_copyable_v<T>, "gmi::actors::staging_buffer holds trivially copyable types only");

 public:
  staging_buffer() = default;
  explicit staging_buffer(std::size_t count) : size_(count) {
    if (!count) return;
    constexpr std::size_t page = 4096;
    const std::size_t bytes = (count * sizeof(T) + page - 1) / page * page;
    data_ = static_cast<T*>(std::aligned_alloc(page, bytes));
    if (!data_) throw std::bad_alloc();
    std::memset(static_cast<void*>(data_), 0, bytes);
    if (cuda_device_present()) pinned_ = cudaHostRegister(data_, bytes, cudaHostRegisterDefault) == cudaSuccess;
    if (!pinned_) (void)cudaGetLastError();
  }
  staging_buffer(const staging_buffer&) = delete;
  staging_buffer& operator=(const staging_buffer&) = delete;
  staging_buffer(staging_buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)), pinned_(std::exchange(o.pinned_, false)) {}
  staging_buffer& operator=(staging_buffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      pinned_ = std::exchange(o.pinned_, false);
    }
    return *this;
  }
  ~staging_buffer() { release(); }

  [[nodiscard]] T* data() noexcept { return data_; }
  [[nodiscard]] const T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool pinned() const noexcept { return pinned_; }
  [[nodiscard]] host_span<T> span(std::size_t first, std::size_t count) noexcept { return {data_ + first, count}; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }

 private:
  void release() noexcept {
    if (!data_) return;
    if (pinned_) (void)cudaHostUnregister(data_);
    std::free(data_);
    data_ = nullptr;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
  bool pinned_ = false;
};

}  // namespace gmi::actors

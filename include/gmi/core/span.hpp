#pragma once
// Spans over host or device memory. The memory space is part of the type, so a device span can not be
// passed where host memory is expected (and the other way round) without saying so.

#include <cstddef>
#include <type_traits>

#include <gmi/core/hd.hpp>

namespace gmi {

struct host_memory {};
struct device_memory {};

template <class T, class Space>
class memory_span {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using space = Space;

  constexpr memory_span() = default;
  GMI_HD constexpr memory_span(T* data, std::size_t size) noexcept : data_(data), size_(size) {}
  // A span of T converts to a span of const T in the same space.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  GMI_HD constexpr memory_span(memory_span<U, Space> other) noexcept : data_(other.data()), size_(other.size()) {}

  GMI_HD constexpr T* data() const noexcept { return data_; }
  GMI_HD constexpr std::size_t size() const noexcept { return size_; }
  GMI_HD constexpr std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  GMI_HD constexpr bool empty() const noexcept { return size_ == 0; }
  GMI_HD constexpr T& operator[](std::size_t i) const noexcept { return data_[i]; }
  GMI_HD constexpr T* begin() const noexcept { return data_; }
  GMI_HD constexpr T* end() const noexcept { return data_ + size_; }
  GMI_HD constexpr memory_span subspan(std::size_t offset, std::size_t count) const noexcept {
    return {data_ + offset, count};
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

template <class T>
using host_span = memory_span<T, host_memory>;
template <class T>
using device_span = memory_span<T, device_memory>;

}  // namespace gmi

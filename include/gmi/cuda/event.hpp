#pragma once
// RAII CUDA events: ordering between streams, and device-side timing.

#include <cuda_runtime_api.h>

#include <utility>

#include <gmi/cuda/check.hpp>

namespace gmi::cuda {

class event {
 public:
  enum class timing { enabled, disabled };

  explicit event(timing t = timing::disabled) {
    GMI_CUDA_TRY(cudaEventCreateWithFlags(&handle_, t == timing::disabled ? cudaEventDisableTiming : cudaEventDefault));
  }
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  event(event&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  event& operator=(event&& other) noexcept {
    if (this != &other) {
      if (handle_) cudaEventDestroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ~event() {
    if (handle_) cudaEventDestroy(handle_);
  }

  [[nodiscard]] cudaEvent_t get() const noexcept { return handle_; }

  void record(cudaStream_t s) { GMI_CUDA_TRY(cudaEventRecord(handle_, s)); }
  // Makes s wait (on the device) for the work recorded before this event.
  void wait_on(cudaStream_t s) const { GMI_CUDA_TRY(cudaStreamWaitEvent(s, handle_, 0)); }
  void synchronize() const { GMI_CUDA_TRY(cudaEventSynchronize(handle_)); }
  [[nodiscard]] bool ready() const {
    const cudaError_t e = cudaEventQuery(handle_);
    if (e == cudaErrorNotReady) return false;
    GMI_CUDA_TRY(e);
    return true;
  }

  // Milliseconds between two recorded timing events.
  [[nodiscard]] friend float elapsed_ms(const event& start, const event& stop) {
    float ms = 0;
    GMI_CUDA_TRY(cudaEventElapsedTime(&ms, start.handle_, stop.handle_));
    return ms;
  }

 private:
  cudaEvent_t handle_ = nullptr;
};

}  // namespace gmi::cuda

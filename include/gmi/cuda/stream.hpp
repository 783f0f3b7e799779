#pragma once
// RAII CUDA streams. gmi never launches on the legacy default stream: every GMI owns non-blocking streams.

#include <cuda_runtime_api.h>

#include <utility>

#include <gmi/cuda/check.hpp>

namespace gmi::cuda {

class stream {
 public:
  // A non-blocking stream on the current device; priority: lower is higher (cudaDeviceGetStreamPriorityRange).
  explicit stream(int priority = 0) {
    GMI_CUDA_TRY(cudaStreamCreateWithPriority(&handle_, cudaStreamNonBlocking, priority));
  }
  // Adopts a stream created elsewhere (a green-context stream); destroyed here unless owned == false.
  stream(cudaStream_t adopted, bool owned) noexcept : handle_(adopted), owned_(owned) {}
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  stream(stream&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), owned_(std::exchange(other.owned_, false)) {}
  stream& operator=(stream&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
      owned_ = std::exchange(other.owned_, false);
    }
    return *this;
  }
  ~stream() { reset(); }

  [[nodiscard]] cudaStream_t get() const noexcept { return handle_; }
  operator cudaStream_t() const noexcept { return handle_; }  // NOLINT: a stream is used where a handle is

  void synchronize() const { GMI_CUDA_TRY(cudaStreamSynchronize(handle_)); }
  // true when all work queued so far has finished (never blocks).
  [[nodiscard]] bool ready() const {
    const cudaError_t e = cudaStreamQuery(handle_);
    if (e == cudaErrorNotReady) return false;
    GMI_CUDA_TRY(e);
    return true;
  }

 private:
  void reset() noexcept {
    if (handle_ && owned_) cudaStreamDestroy(handle_);
    handle_ = nullptr;
  }
  cudaStream_t handle_ = nullptr;
  bool owned_ = true;
};

}  // namespace gmi::cuda

#pragma once
// cuBLAS status checking (throws gmi::cuda_error with the status name) and an RAII handle bound to a stream.

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <source_location>
#include <string>
#include <utility>

#include <gmi/core/error.hpp>

namespace gmi::nn::detail {

inline void cublas_check(cublasStatus_t s, const char* expr, std::source_location where) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw gmi::cuda_error(static_cast<int>(s),
                          std::string(expr) + ": " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")",
                          where);
  }
}

class cublas_handle {
 public:
  cublas_handle() = default;
  explicit cublas_handle(cudaStream_t s) {
    cublas_check(cublasCreate(&handle_), "cublasCreate", std::source_location::current());
    cublas_check(cublasSetStream(handle_, s), "cublasSetStream", std::source_location::current());
  }
  cublas_handle(const cublas_handle&) = delete;
  cublas_handle& operator=(const cublas_handle&) = delete;
  cublas_handle(cublas_handle&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  cublas_handle& operator=(cublas_handle&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  ~cublas_handle() { reset(); }
  [[nodiscard]] cublasHandle_t get() const noexcept { return handle_; }

 private:
  void reset() noexcept {
    if (handle_) cublasDestroy(handle_);
    handle_ = nullptr;
  }
  cublasHandle_t handle_ = nullptr;
};

}  // namespace gmi::nn::detail

#define GMI_NN_CUBLAS_TRY(expr) ::gmi::nn::detail::cublas_check((expr), #expr, ::std::source_location::current())

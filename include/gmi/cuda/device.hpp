#pragma once
// Which CUDA devices this process can use, asked without throwing: a machine with no driver or no GPU
// answers with a status that says so.

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string>

#include <gmi/core/status.hpp>
#include <gmi/cuda/check.hpp>

namespace gmi::cuda {

// Number of visible CUDA devices, or unavailable("no NVIDIA driver ..." / "no CUDA device ...").
inline result<int> device_count() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e == cudaErrorInsufficientDriver) {
    cudaGetLastError();
    return status::unavailable("no NVIDIA driver: cudaGetDeviceCount returned cudaErrorInsufficientDriver");
  }
  if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0)) {
    cudaGetLastError();
    return status::unavailable("no CUDA device visible (CUDA_VISIBLE_DEVICES=" +
                               std::string(std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES")
                                                                                 : "<unset>") +
                               ")");
  }
  if (e != cudaSuccess) {
    cudaGetLastError();
    return status::failed(std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                          ")");
  }
  return n;
}

// ok when at least `needed` devices are visible, else the reason.
inline status require_devices(int needed = 1) {
  auto n = device_count();
  if (!n) return n.error();
  if (*n < needed) {
    return status::unavailable("need " + std::to_string(needed) + " CUDA devices, found " + std::to_string(*n));
  }
  return status::ok();
}

struct device_info {
  int ordinal = 0;
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  std::size_t total_memory = 0;
  std::size_t l2_bytes = 0;
};

inline device_info describe_device(int ordinal) {
  cudaDeviceProp p{};
  GMI_CUDA_TRY(cudaGetDeviceProperties(&p, ordinal));
  return {ordinal, p.name, p.multiProcessorCount, p.major, p.minor, p.totalGlobalMem,
          static_cast<std::size_t>(p.l2CacheSize)};
}

}  // namespace gmi::cuda

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

// Tears down the primary context of every device this process has one on (cudaDeviceReset), for a process that
// is done with the GPU and about to exit. Only then does the driver remove the file it keeps in /dev/shm for the
// process's interprocess events (cuda.shm.0.<pid in hex>.1, 80 KiB): an exit without it, destroyed events or not,
// leaves the file behind (measured on an H200, docs/runtime.md). Never throws; nothing without a driver.
inline void release_primary_contexts() noexcept {
  using device_get_fn = CUresult (*)(CUdevice*, int);
  using state_fn = CUresult (*)(CUdevice, unsigned*, int*);
  static const auto device_get = detail::driver_entry<device_get_fn>("cuDeviceGet");
  static const auto get_state = detail::driver_entry<state_fn>("cuDevicePrimaryCtxGetState");
  int n = 0;
  if (!device_get || !get_state || cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  for (int d = 0; d < n; ++d) {
    CUdevice dev = 0;
    unsigned flags = 0;
    int active = 0;
    if (device_get(&dev, d) != CUDA_SUCCESS || get_state(dev, &flags, &active) != CUDA_SUCCESS || !active) continue;
    if (cudaSetDevice(d) == cudaSuccess) cudaDeviceReset();
    cudaGetLastError();
  }
}

inline device_info describe_device(int ordinal) {
  cudaDeviceProp p{};
  GMI_CUDA_TRY(cudaGetDeviceProperties(&p, ordinal));
  return {ordinal, p.name, p.multiProcessorCount, p.major, p.minor, p.totalGlobalMem,
          static_cast<std::size_t>(p.l2CacheSize)};
}

}  // namespace gmi::cuda

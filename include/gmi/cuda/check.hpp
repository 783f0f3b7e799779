#pragma once
// GMI_CUDA_TRY support for CUDA runtime (cudaError_t) and driver (CUresult) results. Driver symbols are
// reached through cudaGetDriverEntryPointByVersion, so nothing links libcuda and a machine without a
// driver still runs host code and gets a clear status instead of a loader error.

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <source_location>
#include <string>

#include <gmi/core/cuda_try.hpp>
#include <gmi/core/error.hpp>

namespace gmi::cuda::detail {

// Looks up a driver API function by name for the CUDA 13.0 ABI; nullptr when there is no driver or no symbol.
template <class Fn>
Fn driver_entry(const char* name) noexcept {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 13000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();  // the lookup error is not sticky; keep it out of later checks
    return nullptr;
  }
  return reinterpret_cast<Fn>(fn);
}

inline std::string driver_error_text(CUresult r) {
  using get_fn = CUresult (*)(CUresult, const char**);
  const char* name = nullptr;
  const char* text = nullptr;
  static const auto get_name = driver_entry<get_fn>("cuGetErrorName");
  static const auto get_string = driver_entry<get_fn>("cuGetErrorString");
  if (get_name) get_name(r, &name);
  if (get_string) get_string(r, &text);
  return std::string(name ? name : "CUresult ") + (name ? "" : std::to_string(static_cast<int>(r))) + " (" +
         (text ? text : "no description") + ")";
}

}  // namespace gmi::cuda::detail

namespace gmi::cuda {
using detail::driver_entry;  // driver API entry points for the layers that need one (partition, comm)
}  // namespace gmi::cuda

namespace gmi::detail {

inline void check_call(cudaError_t e, const char* expr, std::source_location where) {
  if (e != cudaSuccess) {
    throw cuda_error(static_cast<int>(e),
                     std::string(expr) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")", where);
  }
}

inline void check_call(CUresult r, const char* expr, std::source_location where) {
  if (r != CUDA_SUCCESS) {
    throw cuda_error(static_cast<int>(r), std::string(expr) + ": " + cuda::detail::driver_error_text(r), where);
  }
}

}  // namespace gmi::detail

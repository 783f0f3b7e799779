#pragma once
// exec::cuda: for_each over an index range as a grid-stride CUDA kernel on the policy's stream. Needs nvcc.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

#include <gmi/cuda/check.hpp>
#include <gmi/exec/policy.hpp>

namespace gmi::exec {

namespace detail {
// Internal linkage: kernels compiled for different SM lists in different translation units never collide.
template <class F>
__global__ static void for_each_kernel(std::size_t n, F f) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) f(i);
}
}  // namespace detail

// Launches f(i) for every i in [0, n) on p.stream; returns without waiting. F must be callable on the device.
template <class F>
void for_each(const cuda& p, std::size_t n, F f) {
  if (n == 0) return;
  const std::size_t blocks = std::min<std::size_t>((n + p.block_size - 1) / p.block_size, 1u << 20);
  detail::for_each_kernel<<<static_cast<unsigned>(blocks), p.block_size, 0, p.stream>>>(n, f);
  GMI_CUDA_TRY(cudaGetLastError());
}

inline void synchronize(const cuda& p) { GMI_CUDA_TRY(cudaStreamSynchronize(p.stream)); }

}  // namespace gmi::exec

#pragma once
// Programmatic dependent launch (sm_90): a kernel launched with launch_overlapped may be scheduled before the
// kernel ahead of it on the stream has finished, so the launch's latency overlaps that kernel's tail. The
// launched kernel must call wait_for_previous_grid() before it touches anything the previous kernel writes (that
// wait returns once the previous grid has finished and its writes are visible); a kernel may call
// allow_next_grid() to let the next overlapped launch start before it finishes. Both are no-ops for a kernel
// launched the ordinary way. Captured into CUDA graphs as programmatic edges. Needs nvcc.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include <gmi/cuda/check.hpp>

namespace gmi::cuda {

// Waits until the grid this one overlaps has finished and its memory writes are visible.
__device__ inline void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next overlapped launch on this stream begin (once every block of this grid has called it or exited).
__device__ inline void allow_next_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// kernel<<<grid, block, shared_bytes, stream>>>(args...), allowed to overlap the kernel ahead of it.
template <class... Params, class... Args>
void launch_overlapped(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t stream,
                       Args&&... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  GMI_CUDA_TRY(cudaLaunchKernelEx(&config, kernel, static_cast<Params>(std::forward<Args>(args))...));
}

}  // namespace gmi::cuda

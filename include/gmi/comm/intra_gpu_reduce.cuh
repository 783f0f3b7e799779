#pragma once
// The intra-GPU step of the hierarchical allreduce: one kernel sums the flat gradient buffers of the GMIs of
// one GPU (pointers shared in-process or mapped through CUDA IPC) and writes the sum to one or more outputs.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include <gmi/cuda/check.hpp>

namespace gmi::comm {

inline constexpr int max_local_gmis = 16;  // GMIs of one GPU in one reduce (MPS allows 48 clients; 16 is plenty)

namespace detail {
struct reduce_args {
  const float* in[max_local_gmis];
  float* out[max_local_gmis];
  int inputs;
  int outputs;
  std::size_t count;
  // When set (a word in mapped host memory): a kernel that finds it non-zero touches no buffer. The
  // hierarchical allreduce sets it when its group breaks, so work already queued behind a device-side wait
  // that the host then releases never reads the buffer of a GMI that died.
  const volatile std::uint32_t* skip_if_set;
};

// Each thread reads element i of every input before writing element i of every output, so an output may
// also be an input (in-place reduce).
template <bool Vectorised>
__global__ static void reduce_broadcast_kernel(reduce_args a) {
  if (a.skip_if_set) {
    __shared__ int skip;
    if (threadIdx.x == 0) skip = *a.skip_if_set != 0;
    __syncthreads();
    if (skip) return;
  }
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  const std::size_t first = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  std::size_t scalar_begin = 0;
  if constexpr (Vectorised) {
    const std::size_t n4 = a.count / 4;
    for (std::size_t i = first; i < n4; i += stride) {
      float4 s = reinterpret_cast<const float4*>(a.in[0])[i];
      for (int k = 1; k < a.inputs; ++k) {
        const float4 v = reinterpret_cast<const float4*>(a.in[k])[i];
        s.x += v.x;
        s.y += v.y;
        s.z += v.z;
        s.w += v.w;
      }
      for (int k = 0; k < a.outputs; ++k) reinterpret_cast<float4*>(a.out[k])[i] = s;
    }
    scalar_begin = n4 * 4;
  }
  for (std::size_t i = scalar_begin + first; i < a.count; i += stride) {
    float s = a.in[0][i];
    for (int k = 1; k < a.inputs; ++k) s += a.in[k][i];
    for (int k = 0; k < a.outputs; ++k) a.out[k][i] = s;
  }
}

// Launches the kernel on prepared arguments (no checks, no allocation: the per-call path of the hierarchical
// allreduce, whose arguments are checked once at setup). max_blocks caps the grid; the grid-stride loop covers
// the rest.
inline constexpr unsigned uncapped_reduce_blocks = 2048;  // fills an H100/H200 several times over
inline void launch_reduce(const reduce_args& a, cudaStream_t stream, unsigned max_blocks = uncapped_reduce_blocks) {
  if (a.count == 0) return;
  bool aligned = true;
  for (int k = 0; k < a.inputs; ++k) aligned = aligned && reinterpret_cast<std::uintptr_t>(a.in[k]) % 16 == 0;
  for (int k = 0; k < a.outputs; ++k) aligned = aligned && reinterpret_cast<std::uintptr_t>(a.out[k]) % 16 == 0;
  constexpr int threads = 256;
  const std::size_t work = aligned ? (a.count + 3) / 4 : a.count;
  const unsigned blocks = static_cast<unsigned>(
      std::min<std::size_t>((work + threads - 1) / threads, std::clamp(max_blocks, 1u, uncapped_reduce_blocks)));
  if (aligned) {
    reduce_broadcast_kernel<true><<<blocks, threads, 0, stream>>>(a);
  } else {
    reduce_broadcast_kernel<false><<<blocks, threads, 0, stream>>>(a);
  }
  GMI_CUDA_TRY(cudaGetLastError());
}
}  // namespace detail

// outputs[j][i] = sum_k inputs[k][i] for i < count, on the stream. Up to max_local_gmis of each.
inline void reduce_broadcast(std::span<const float* const> inputs, std::span<float* const> outputs, std::size_t count,
                             cudaStream_t stream) {
  if (inputs.empty() || inputs.size() > max_local_gmis) {
    throw config_error(got_need("intra-GPU reduce inputs", inputs.size(), "1.." + std::to_string(max_local_gmis)));
  }
  if (outputs.empty() || outputs.size() > max_local_gmis) {
    throw config_error(got_need("intra-GPU reduce outputs", outputs.size(), "1.." + std::to_string(max_local_gmis)));
  }
  detail::reduce_args a{};
  for (std::size_t k = 0; k < inputs.size(); ++k) a.in[k] = inputs[k];
  for (std::size_t k = 0; k < outputs.size(); ++k) a.out[k] = outputs[k];
  a.inputs = static_cast<int>(inputs.size());
  a.outputs = static_cast<int>(outputs.size());
  a.count = count;
  detail::launch_reduce(a, stream);
}

// out[i] = sum_k inputs[k][i] (out may be one of the inputs).
inline void reduce_into(std::span<const float* const> inputs, float* out, std::size_t count, cudaStream_t stream) {
  float* const outs[1] = {out};
  reduce_broadcast(inputs, outs, count, stream);
}

}  // namespace gmi::comm

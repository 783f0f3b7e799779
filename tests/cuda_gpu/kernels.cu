// Kernels of the cuda_gpu tests, behind plain host functions (kernels.hpp).
#include "cuda_gpu/kernels.hpp"

#include <gmi/cuda/check.hpp>
#include <gmi/comm/comm_clock.cuh>
#include <gmi/cuda/graph.hpp>

namespace gmi_test {
namespace {

__global__ void scale_add_kernel(float* data, std::size_t n, float scale, float add) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * scale + add;
}

__global__ void write_index_kernel(int* out, std::size_t n, int value) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value + static_cast<int>(i);
}

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void wait_ns_kernel(unsigned long long ns) {
  const unsigned long long start = gmi::comm::detail::global_ns();
  while (gmi::comm::detail::global_ns() - start < ns) {
  }
}

__global__ void add_ns_kernel(unsigned long long* total, unsigned long long ns) { atomicAdd(total, ns); }

unsigned blocks_for(std::size_t n, unsigned threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

}  // namespace

void scale_add(cudaStream_t s, float* data, std::size_t n, float scale, float add) {
  scale_add_kernel<<<blocks_for(n, 256), 256, 0, s>>>(data, n, scale, add);
  GMI_CUDA_TRY(cudaGetLastError());
}

void write_index(cudaStream_t s, int* out, std::size_t n, int value) {
  write_index_kernel<<<blocks_for(n, 256), 256, 0, s>>>(out, n, value);
  GMI_CUDA_TRY(cudaGetLastError());
}

void spin(cudaStream_t s, int blocks, int threads, long long cycles) {
  spin_kernel<<<blocks, threads, 0, s>>>(cycles);
  GMI_CUDA_TRY(cudaGetLastError());
}

int spin_blocks_per_sm(int threads) {
  int blocks = 0;
  GMI_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, spin_kernel, threads, 0));
  return blocks;
}

double comm_clock_seconds(cudaStream_t s, int spans, unsigned long long ns, bool graph, unsigned long long kernel_ns) {
  gmi::comm::comm_clock clock(s);
  const auto one = [&](cudaStream_t on) {
    clock.start(on);
    wait_ns_kernel<<<1, 1, 0, on>>>(ns);
    GMI_CUDA_TRY(cudaGetLastError());
    clock.stop(on);
    wait_ns_kernel<<<1, 1, 0, on>>>(ns);  // outside the span
    GMI_CUDA_TRY(cudaGetLastError());
  };
  if (graph) {
    const gmi::cuda::graph_exec g = gmi::cuda::instantiate(gmi::cuda::capture(s, one));
    for (int i = 0; i < spans; ++i) g.launch(s);
  } else {
    for (int i = 0; i < spans; ++i) one(s);
  }
  add_ns_kernel<<<1, 1, 0, s>>>(clock.total(), kernel_ns);
  GMI_CUDA_TRY(cudaGetLastError());
  return clock.seconds(s);
}

}  // namespace gmi_test

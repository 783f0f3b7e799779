// Kernels of the cuda_gpu tests, behind plain host functions (kernels.hpp).
#include "cuda_gpu/kernels.hpp"

#include <gmi/cuda/check.hpp>

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

}  // namespace gmi_test

#include "partition_gpu/kernels.hpp"

#include <gmi/cuda/check.hpp>

namespace {

__global__ void spin_record_sm_kernel(long long cycles, int* sm_of_block) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  if (threadIdx.x == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    sm_of_block[blockIdx.x] = static_cast<int>(sm);
  }
}

}  // namespace

namespace gmi_test {

constexpr int spin_threads = 128;

void spin_record_sm(cudaStream_t s, int blocks, long long cycles, int* sm_of_block) {
  spin_record_sm_kernel<<<blocks, spin_threads, 0, s>>>(cycles, sm_of_block);
  GMI_CUDA_TRY(cudaGetLastError());
}

int spin_record_sm_blocks_per_sm() {
  int blocks = 0;
  GMI_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, spin_record_sm_kernel, spin_threads, 0));
  return blocks;
}

}  // namespace gmi_test

#include "partition_gpu/kernels.hpp"

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

void spin_record_sm(cudaStream_t s, int blocks, long long cycles, int* sm_of_block) {
  spin_record_sm_kernel<<<blocks, 128, 0, s>>>(cycles, sm_of_block);
}

}  // namespace gmi_test

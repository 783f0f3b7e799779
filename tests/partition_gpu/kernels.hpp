#pragma once
// Host entry points of the partition_gpu kernels (kernels.cu), so the doctest files compile with g++.

#include <cuda_runtime_api.h>

namespace gmi_test {

// `blocks` blocks each spin for `cycles` clocks and record the SM they ran on in sm_of_block[block].
// Blocks of 128 threads.
void spin_record_sm(cudaStream_t s, int blocks, long long cycles, int* sm_of_block);

// How many spin_record_sm blocks fit on one SM at once (the occupancy calculator's answer).
int spin_record_sm_blocks_per_sm();

}  // namespace gmi_test

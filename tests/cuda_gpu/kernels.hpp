#pragma once
// Host entry points of the cuda_gpu tests' kernels (kernels.cu), so the doctest files compile with g++.

#include <cuda_runtime_api.h>

#include <cstddef>

namespace gmi_test {

// data[i] = data[i] * scale + add, for i in [0, n).
void scale_add(cudaStream_t s, float* data, std::size_t n, float scale, float add);

// out[i] = value + i, for i in [0, n).
void write_index(cudaStream_t s, int* out, std::size_t n, int value);

// `blocks` blocks of `threads` threads, each spinning for `cycles` SM clock cycles: fixed work per block, so
// the time taken is proportional to blocks / (SMs available x blocks resident per SM).
void spin(cudaStream_t s, int blocks, int threads, long long cycles);

// How many spin blocks of `threads` threads fit on one SM at once.
int spin_blocks_per_sm(int threads);

// A comm::comm_clock's seconds after `spans` spans on `s`, each around a one-thread kernel that waits `ns`
// nanoseconds on the global timer, with as long a wait outside every span; with `graph`, the spans (and the waits
// outside them) captured once as a CUDA graph and the graph launched `spans` times; `kernel_ns` more added from a
// kernel through total().
double comm_clock_seconds(cudaStream_t s, int spans, unsigned long long ns, bool graph, unsigned long long kernel_ns);

}  // namespace gmi_test

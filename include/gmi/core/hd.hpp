#pragma once
// Function annotations that let one definition compile for host and device (nvcc) or host only (g++).

#if defined(__CUDACC__)
#define GMI_HD __host__ __device__
#define GMI_DEVICE __device__
#define GMI_HOST __host__
#else
#define GMI_HD
#define GMI_DEVICE
#define GMI_HOST
#endif

#if defined(__CUDA_ARCH__)
#define GMI_IN_DEVICE_CODE 1
#else
#define GMI_IN_DEVICE_CODE 0
#endif

#define GMI_RESTRICT __restrict__

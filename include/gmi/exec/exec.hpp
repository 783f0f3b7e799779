#pragma once
// exec/: execution policies and for_each. exec/cuda.cuh (kernels) is added when compiled by nvcc.
#include <gmi/exec/host.hpp>
#include <gmi/exec/policy.hpp>
#if defined(__CUDACC__)
#include <gmi/exec/cuda.cuh>
#endif

#pragma once
// gmi: the umbrella header. Everything that compiles with the host compiler alone; under nvcc, the kernel
// headers (.cuh) of each layer are added.
#include <gmi/core/core.hpp>
#include <gmi/cuda/cuda.hpp>
#include <gmi/exec/exec.hpp>

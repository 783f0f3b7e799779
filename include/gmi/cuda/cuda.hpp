#pragma once
// cuda/: RAII wrappers over the CUDA runtime and driver (streams, events, buffers, graphs, green contexts) and
// NVML loaded at run time.
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/device.hpp>
#include <gmi/cuda/event.hpp>
#include <gmi/cuda/gpm.hpp>
#include <gmi/cuda/graph.hpp>
#include <gmi/cuda/green_context.hpp>
#include <gmi/cuda/nvml.hpp>
#include <gmi/cuda/stream.hpp>

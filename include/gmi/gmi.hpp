#pragma once
// gmi: the umbrella header. Every layer's host headers; under nvcc also the kernel headers (.cuh) and the
// launcher gmi::run, which instantiates the CUDA paths.
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/comm/none.hpp>
#include <gmi/concepts/agent.hpp>
#include <gmi/concepts/env.hpp>
#include <gmi/core/core.hpp>
#include <gmi/cuda/cuda.hpp>
#include <gmi/envs/registry.hpp>
#include <gmi/exec/exec.hpp>
#include <gmi/layout/layouts.hpp>
#include <gmi/metrics/metrics.hpp>
#include <gmi/nn/nn.hpp>
#include <gmi/partition/none.hpp>
#include <gmi/pipeline/pipeline.hpp>
#include <gmi/rl/checkpoint.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/runtime/flags.hpp>
#include <gmi/trainers/ppo.hpp>
#if defined(__CUDACC__)
#include <gmi/pipeline/run.cuh>
#include <gmi/rl/env_batch.cuh>
#include <gmi/rl/ppo.cuh>
#endif

#pragma once
// gmi: the umbrella header. Every layer's host headers; under nvcc also the kernel headers (.cuh) and the
// launcher gmi::run, which instantiates the CUDA paths (under a host compiler gmi::run fails with a sentence).
#include <gmi/agents/categorical_mlp.hpp>
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/comm/channel.hpp>
#include <gmi/comm/device_share.hpp>
#include <gmi/comm/ip_allreduce.hpp>
#include <gmi/comm/nccl.hpp>
#include <gmi/comm/none.hpp>
#include <gmi/comm/plans.hpp>
#include <gmi/comm/shm_segment.hpp>
#include <gmi/comm/spsc_ring.hpp>
#include <gmi/comm/weights_channel.hpp>
#include <gmi/concepts/agent.hpp>
#include <gmi/concepts/env.hpp>
#include <gmi/core/core.hpp>
#include <gmi/cuda/cuda.hpp>
#include <gmi/envs/registry.hpp>
#include <gmi/exec/exec.hpp>
#include <gmi/layout/layouts.hpp>
#include <gmi/metrics/metrics.hpp>
#include <gmi/nn/nn.hpp>
#include <gmi/partition/partition.hpp>
#include <gmi/pipeline/cpu_actors.hpp>
#include <gmi/pipeline/pipeline.hpp>
#include <gmi/pipeline/serving_gmis.hpp>
#include <gmi/plan/explorer.hpp>
#include <gmi/io/gmi_file.hpp>
#include <gmi/io/safetensors.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/rl/policy_server.hpp>
#include <gmi/rl/ppo.hpp>
#include <gmi/rl/episode_window.hpp>
#include <gmi/runtime/gmis.hpp>
#include <gmi/runtime/flags.hpp>
#include <gmi/runtime/runtime.hpp>
#include <gmi/trainers/ppo.hpp>
#include <gmi/trainers/sac.hpp>
#if defined(__CUDACC__)
#include <gmi/comm/hierarchical.cuh>
#include <gmi/comm/intra_gpu_reduce.cuh>
#include <gmi/rl/batched_serving.cuh>
#include <gmi/pipeline/run.cuh>
#include <gmi/rl/env_batch.cuh>
#include <gmi/rl/policy_server.cuh>
#include <gmi/rl/ppo.cuh>
#else
#include <gmi/comm/hierarchical_options.hpp>  // the Comm a pipeline names (its CUDA half is hierarchical.cuh)
#include <gmi/pipeline/run_needs_nvcc.hpp>    // gmi::run: a sentence saying it needs nvcc
#endif

// The PPO runs of runs.hpp with the anchor's Ant network (60-256-128-64-8), in their own translation unit (its
// batched collection, gemm gradients and whole-network kernels compile beside runs.cu's).
#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/lq_proxy.hpp>
#include <gmi/nn/lt_mlp.cuh>
#include <gmi/rl/ppo.cuh>

#include <string>

#include "one_iteration.cuh"
#include "runs.hpp"

using ppo_gpu_runs::one_iteration;

// The anchor's Ant network (60-256-128-64-8): its weights do not fit in shared memory beside a tile, so the tile
// kernel reads them from global memory.
using isaac_ant_net = gmi::agents::gaussian_mlp<gmi::nn::layers<256, 128, 64>>::network<60, 8>;
static_assert(gmi::rl::detail::tile_gradient<isaac_ant_net>::fits && !gmi::rl::detail::tile_gradient<isaac_ant_net>::shared_weights);
// 256 units wide: a wide network (rl/wide_rule.hpp), so the cuBLASLt products ("gemm") by default.
static_assert(gmi::rl::detail::minibatch_gradient<isaac_ant_net>::default_path == gmi::rl::detail::gradient_path::gemm);

gradient_path_run isaac_ant_kernels_run(const std::string& precision, const std::string& kernels, int iterations,
                                        const std::string& backward) {
  gmi::rl::ppo_config c;
  c.minibatch = 8192;
  c.epochs = 2;
  c.network.precision = gmi::nn::parse_precision(precision);
  c.network.kernels = gmi::nn::parse_layer_kernels(kernels);
  c.network.backward = gmi::nn::parse_backward_kernels(backward);
  gmi::cuda::stream s;
  gmi::rl::ppo_trainer<gmi::envs::ant_proxy, isaac_ant_net, gmi::exec::cuda> t(512, 7, c, {},
                                                                               gmi::exec::cuda{.stream = s.get()});
  for (int i = 0; i < iterations; ++i) t.iterate();
  t.synchronize();
  gradient_path_run r;
  const auto p = t.params();
  r.params.resize(p.size());
  GMI_CUDA_TRY(cudaMemcpy(r.params.data(), p.data(), p.size() * sizeof(float), cudaMemcpyDeviceToHost));
  const auto l = t.losses();
  r.policy_loss = l.policy_loss;
  r.value_loss = l.value_loss;
  const gmi::nn::lt_mlp<typename isaac_ant_net::net> m(gmi::exec::cuda{.stream = s.get()}, 1, c.network);
  r.path = m.path();
  r.backward_path = m.backward_path();
  return r;
}
gradient_path_run isaac_ant_iteration(const std::string& path) {
  return one_iteration<gmi::envs::ant_proxy, isaac_ant_net>(path);
}

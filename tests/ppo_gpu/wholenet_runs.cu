#include "wholenet_runs.hpp"

#include <algorithm>

#include <gmi/cuda/check.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/lq_proxy.hpp>
#include <gmi/nn/actor_critic.hpp>
#include <gmi/rl/batched_serving.cuh>

namespace ppo_gpu {
namespace {
using ant_ac = gmi::nn::gaussian_actor_critic<60, 8, gmi::nn::layers<256, 128, 64>>;
using shadow_hand_ac = gmi::nn::gaussian_actor_critic<211, 20, gmi::nn::layers<512, 512, 512, 256>>;

std::vector<float> download(const float* p, std::size_t n) {
  std::vector<float> v(n);
  GMI_CUDA_TRY(cudaMemcpy(v.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
  return v;
}
}  // namespace

serving_run ant_serving_run(const std::string& precision, const std::string& kernels, int envs, int steps, bool graph) {
  const gmi::nn::network_config cfg{.precision = gmi::nn::parse_precision(precision),
                                    .kernels = gmi::nn::parse_layer_kernels(kernels)};
  gmi::cuda::stream s;
  gmi::rl::batched_server<gmi::envs::ant_proxy, ant_ac> server(envs, 5, gmi::exec::cuda{.stream = s.get()},
                                                                std::max(1, steps), cfg);
  if (graph) {
    server.serve(steps);  // the first call: one eager step, then the captured window's replay
  } else {
    for (int k = 0; k < steps + 1; ++k) server.step();  // as many steps as serve(steps)'s first call runs
  }
  server.synchronize();
  const auto n = static_cast<std::size_t>(envs);
  return {server.path(), download(server.actions(), n * 8), download(server.log_probs(), n),
          download(server.observations(), n * 60), download(server.rewards(), n)};
}

std::string shadow_hand_serving_path(const std::string& precision, const std::string& kernels, int envs) {
  const gmi::nn::network_config cfg{.precision = gmi::nn::parse_precision(precision),
                                    .kernels = gmi::nn::parse_layer_kernels(kernels)};
  gmi::cuda::stream s;
  gmi::rl::batched_server<gmi::envs::shadow_hand_proxy, shadow_hand_ac> server(
      envs, 5, gmi::exec::cuda{.stream = s.get()}, 1, cfg);
  server.step();
  server.synchronize();
  return server.path();
}

}  // namespace ppo_gpu

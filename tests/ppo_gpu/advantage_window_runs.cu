#include "advantage_window_runs.hpp"

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/spring_chain.hpp>
#include <gmi/rl/ppo.cuh>

namespace {
using task = gmi::envs::spring_chain;
using net = gmi::agents::gaussian_mlp<gmi::nn::layers<64, 64>>::network<task::obs_dim, task::act_dim>;

template <class T, class ToHost>
advantage_window_run finish(T& t, int iterations, ToHost to_host) {
  for (int i = 0; i < iterations; ++i) t.iterate();
  t.synchronize();
  return {to_host(t.minibatch_view(t.iteration() - 1, 0, 0).advantage_stats, 2),
          to_host(t.params().data(), t.params().size())};
}
}  // namespace

advantage_window_run advantage_window_iterations(bool gpu, int window, int iterations) {
  gmi::rl::ppo_config c;
  c.minibatch = 1024;
  c.epochs = 2;
  c.advantage_window = window;
  if (!gpu) {
    gmi::rl::ppo_trainer<task, net, gmi::exec::host> t(256, 17, c, {}, gmi::exec::host{});
    return finish(t, iterations, [](const float* p, std::size_t n) { return std::vector<float>(p, p + n); });
  }
  gmi::cuda::stream s;
  gmi::rl::ppo_trainer<task, net, gmi::exec::cuda> t(256, 17, c, {}, gmi::exec::cuda{.stream = s.get()});
  return finish(t, iterations, [](const float* p, std::size_t n) {
    std::vector<float> out(n);
    GMI_CUDA_TRY(cudaMemcpy(out.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
    return out;
  });
}

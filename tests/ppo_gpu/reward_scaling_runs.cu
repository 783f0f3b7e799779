#include "reward_scaling_runs.hpp"

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/point_reach.hpp>
#include <gmi/rl/ppo.cuh>

namespace {
using task = gmi::envs::point_reach;
using net = gmi::agents::gaussian_mlp<gmi::nn::layers<64, 64>>::network<task::obs_dim, task::act_dim>;

template <class T, class ToHost>
void finish(T& t, int iterations, ToHost to_host, reward_scaling_run& r) {
  for (int i = 0; i < iterations; ++i) t.iterate();
  t.synchronize();
  const auto v = t.rollout_view();
  r.rewards = to_host(v.rewards, static_cast<std::size_t>(t.num_envs()) * t.config().horizon);
  r.params = to_host(t.params().data(), t.params().size());
  const auto ck = t.save_state();
  r.running = ck.template get<float>("reward_norm.running");
  r.stats = ck.template get<double>("reward_norm.stats");
  r.collection = t.collection_name();
}
}  // namespace

reward_scaling_run reward_scaling_iterations(const std::string& collection, int iterations) {
  gmi::rl::ppo_config c;
  c.minibatch = 1024;
  c.epochs = 2;
  c.normalize_value = false;
  c.reward_scaling = true;
  reward_scaling_run r;
  if (collection.empty()) {
    gmi::rl::ppo_trainer<task, net, gmi::exec::host> t(256, 13, c, {}, gmi::exec::host{});
    finish(t, iterations, [](const float* p, std::size_t n) { return std::vector<float>(p, p + n); }, r);
    r.collection = "host";
    return r;
  }
  gmi::rl::request_collection_path(collection);
  {
    gmi::cuda::stream s;
    gmi::rl::ppo_trainer<task, net, gmi::exec::cuda> t(256, 13, c, {}, gmi::exec::cuda{.stream = s.get()});
    finish(t, iterations,
           [](const float* p, std::size_t n) {
             std::vector<float> out(n);
             GMI_CUDA_TRY(cudaMemcpy(out.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
             return out;
           },
           r);
  }
  gmi::rl::request_collection_path("");
  return r;
}

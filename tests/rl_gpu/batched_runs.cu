#include "batched_runs.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/envs/lq_proxy.hpp>
#include <gmi/nn/normalizer.cuh>
#include <gmi/rl/batched_rollout.cuh>
#include <gmi/rl/batched_serving.cuh>
#include <gmi/rl/ppo.hpp>

namespace {
namespace rl = gmi::rl;
namespace nn = gmi::nn;
using gmi::cuda::device_buffer;

using ant_net = gmi::agents::gaussian_mlp<nn::layers<256, 128, 64>>::network<60, 8>;
using cartpole_wide_net = gmi::agents::gaussian_mlp<nn::layers<256, 256>>::network<4, 1>;

template <class T>
std::vector<T> host(const device_buffer<T>& b) {
  std::vector<T> v(b.size());
  GMI_CUDA_TRY(cudaMemcpy(v.data(), b.data(), b.size() * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}
double rel(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    const double d = std::fabs(double(a[k]) - b[k]) / std::max(1.0, std::fabs(double(a[k])));
    worst = std::max(worst, std::isfinite(d) ? d : 1e30);
  }
  return worst;
}

// One rollout's storage (ppo_trainer's arrays).
template <class E, class Net>
struct arrays {
  int n, h;
  device_buffer<float> current_obs, obs, actions, log_probs, values, rewards, advantages, returns;
  device_buffer<std::uint8_t> ends;
  device_buffer<std::uint64_t> blocks;
  arrays(int n_, int h_, cudaStream_t s)
      : n(n_), h(h_), current_obs(std::size_t(n) * E::obs_dim), obs(std::size_t(n) * h * E::obs_dim),
        actions(std::size_t(n) * h * E::act_dim), log_probs(std::size_t(n) * h), values(std::size_t(n) * (h + 1)),
        rewards(std::size_t(n) * h), advantages(std::size_t(n) * h), returns(std::size_t(n) * h),
        ends(std::size_t(n) * h), blocks(std::size_t(n)) {
    blocks.fill_bytes(0, s);
  }
  rl::ppo_rollout_view<E, Net> view(const rl::env_batch<E, gmi::exec::cuda>& envs, nn::normalizer_view on,
                                    nn::normalizer_view vn) {
    return {envs.view(), on, vn, true, current_obs.data(), obs.data(), actions.data(), log_probs.data(),
            values.data(), rewards.data(), ends.data(), advantages.data(), returns.data(), blocks.data(),
            rl::detail::policy_stream_seed(5), n, h, 0.99f, 0.95f, true};
  }
};

template <class E, class Net>
__global__ void thread_collect_kernel(rl::ppo_rollout_view<E, Net> v, const float* params) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < static_cast<std::size_t>(v.num_envs)) v.collect(i, params);
}

template <class E, class Net>
batched_compare run(nn::precision prec, int n, int horizon, int max_steps) {
  gmi::cuda::stream s;
  const gmi::exec::cuda on{.stream = s.get()};
  typename E::params ep{};
  ep.max_steps = max_steps;
  rl::env_batch<E, gmi::exec::cuda> env_a(n, 3, ep, on), env_b(n, 3, ep, on);
  nn::running_mean_std<gmi::exec::cuda> obs_norm(E::obs_dim, {}, on), value_norm(1, {}, on);
  const std::vector<float> init = rl::detail::initial_params<Net>(9);
  device_buffer<float> params(init.size());
  GMI_CUDA_TRY(cudaMemcpy(params.data(), init.data(), init.size() * sizeof(float), cudaMemcpyHostToDevice));
  arrays<E, Net> a(n, horizon, s.get()), b(n, horizon, s.get());
  env_a.reset(a.current_obs.span(), s.get());
  env_b.reset(b.current_obs.span(), s.get());
  // Observation statistics that are not the identity: those of the first observations.
  obs_norm.update(gmi::device_span<const float>(a.current_obs.data(), a.current_obs.size()));
  const auto va = a.view(env_a, obs_norm.view(), value_norm.view());
  const auto vb = b.view(env_b, obs_norm.view(), value_norm.view());
  thread_collect_kernel<E, Net><<<(n + 63) / 64, 64, 0, s.get()>>>(va, params.data());
  GMI_CUDA_TRY(cudaGetLastError());
  rl::batched_rollout<E, Net> batched(std::size_t(n), env_b.view().params, nn::network_config{.precision = prec}, on);
  batched.collect(vb, params.data());
  GMI_CUDA_TRY(cudaStreamSynchronize(s.get()));
  batched_compare r;
  r.path = batched.path();
  r.actions = rel(host(a.actions), host(b.actions));
  r.log_probs = rel(host(a.log_probs), host(b.log_probs));
  r.values = rel(host(a.values), host(b.values));
  r.rewards = rel(host(a.rewards), host(b.rewards));
  r.advantages = rel(host(a.advantages), host(b.advantages));
  r.obs = std::max(rel(host(a.obs), host(b.obs)), rel(host(a.current_obs), host(b.current_obs)));
  const auto ea = host(a.ends), eb = host(b.ends);
  for (std::size_t k = 0; k < ea.size(); ++k) {
    r.ends_differ += ea[k] != eb[k];
    r.ends += ea[k] != 0;
  }
  const auto ba = host(a.blocks), bb = host(b.blocks);
  for (std::size_t k = 0; k < ba.size(); ++k) r.blocks_differ += ba[k] != bb[k];
  return r;
}

nn::precision parse(const std::string& p) { return nn::parse_precision(p, "precision"); }
}  // namespace

batched_compare compare_batched_collection(const std::string& task, const std::string& precision, int num_envs,
                                           int horizon, int max_steps) {
  if (task == "ant") return run<gmi::envs::ant_proxy, ant_net>(parse(precision), num_envs, horizon, max_steps);
  return run<gmi::envs::cartpole, cartpole_wide_net>(parse(precision), num_envs, horizon, max_steps);
}

double batched_server_graph_vs_eager(int num_envs, int steps) {
  gmi::cuda::stream s1, s2;
  const nn::network_config cfg{.precision = nn::precision::fp32};
  rl::batched_server<gmi::envs::ant_proxy, ant_net> eager(num_envs, 4, gmi::exec::cuda{.stream = s1.get()}, steps, cfg);
  rl::batched_server<gmi::envs::ant_proxy, ant_net> graph(num_envs, 4, gmi::exec::cuda{.stream = s2.get()}, steps, cfg);
  for (int k = 0; k < steps + 1; ++k) eager.step();  // serve() runs one eager step before its first window
  graph.serve(steps);
  eager.synchronize();
  graph.synchronize();
  std::vector<float> a(std::size_t(num_envs) * 8), b(a.size());
  GMI_CUDA_TRY(cudaMemcpy(a.data(), eager.actions(), a.size() * sizeof(float), cudaMemcpyDeviceToHost));
  GMI_CUDA_TRY(cudaMemcpy(b.data(), graph.actions(), b.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return rel(a, b);
}

#include "runs.hpp"

#include <algorithm>

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/envs/lq_proxy.hpp>
#include <gmi/rl/ppo.cuh>

#include "one_iteration.cuh"

#include <cstdlib>
#include <string>

namespace {
using net = gmi::agents::gaussian_mlp<>::network<4, 1>;

template <class Policy>
ppo_run_result run(const Policy& policy, int num_envs, unsigned long long seed, int iterations, int minibatch, int epochs,
                   bool stop_when_solved) {
  gmi::rl::ppo_config c;
  c.minibatch = minibatch;
  c.epochs = epochs;
  gmi::rl::ppo_trainer<gmi::envs::cartpole, net, Policy> t(num_envs, seed, c, {}, policy);
  ppo_run_result r{};
  auto to_host = [&](auto span) {
    std::vector<float> out(span.size());
    if constexpr (Policy::on_device) {
      GMI_CUDA_TRY(cudaMemcpy(out.data(), span.data(), span.size() * sizeof(float), cudaMemcpyDeviceToHost));
    } else {
      std::copy(span.begin(), span.end(), out.begin());
    }
    return out;
  };
  r.best_return = 0;
  for (int i = 0; i < iterations; ++i) {
    t.iterate();
    if (i == 0) {
      t.synchronize();
      const auto v = t.rollout_view();
      const std::size_t n = static_cast<std::size_t>(num_envs) * c.horizon;
      r.first_values = to_host(gmi::memory_span<float, typename decltype(t)::memory_space>(v.values, n + num_envs));
      r.first_rewards = to_host(gmi::memory_span<float, typename decltype(t)::memory_space>(v.rewards, n));
    }
    if (stop_when_solved && i % 5 == 4) {
      const auto e = t.episodes();
      if (e.episodes >= 32) r.best_return = std::max(r.best_return, e.mean_return());
      if (r.best_return >= 450) {
        r.iterations = i + 1;
        break;
      }
    }
    r.iterations = i + 1;
  }
  t.synchronize();
  r.params = to_host(t.params());
  const auto l = t.losses();
  r.policy_loss = l.policy_loss;
  r.value_loss = l.value_loss;
  r.approx_kl = l.approx_kl;
  return r;
}
}  // namespace

bool gpu_resume_matches_straight_run() {
  gmi::cuda::stream s;
  const gmi::exec::cuda on{.stream = s.get()};
  gmi::rl::ppo_config c;
  gmi::rl::ppo_trainer<gmi::envs::cartpole, net, gmi::exec::cuda> straight(512, 4, c, {}, on), first(512, 4, c, {}, on),
      resumed(512, 4, c, {}, on);
  for (int i = 0; i < 6; ++i) straight.iterate();
  for (int i = 0; i < 3; ++i) first.iterate();
  resumed.load_state(first.save_state());
  for (int i = 0; i < 3; ++i) resumed.iterate();
  return straight.save_state().get_f32("policy.params") == resumed.save_state().get_f32("policy.params");
}

ppo_run_result run_cartpole_ppo(bool on_gpu, int num_envs, unsigned long long seed, int iterations, int minibatch,
                                int epochs, bool stop_when_solved) {
  if (on_gpu) {
    gmi::cuda::stream s;
    return run(gmi::exec::cuda{.stream = s.get()}, num_envs, seed, iterations, minibatch, epochs, stop_when_solved);
  }
  return run(gmi::exec::host{}, num_envs, seed, iterations, minibatch, epochs, stop_when_solved);
}

linear_lr_run gpu_linear_lr_run(int iterations) {
  gmi::cuda::stream s;
  const gmi::exec::cuda on{.stream = s.get()};
  gmi::rl::ppo_config c;
  c.schedule = gmi::rl::lr_schedule::linear;
  const int envs = 256;
  const double per_iteration = static_cast<double>(envs) * c.horizon;
  c.lr_decay_env_steps = per_iteration * (iterations - 2);  // the last two iterations at the floor
  using trainer = gmi::rl::ppo_trainer<gmi::envs::cartpole, net, gmi::exec::cuda>;
  trainer t(envs, 3, c, {}, on), first(envs, 3, c, {}, on);
  linear_lr_run r;
  for (int i = 0; i < iterations; ++i) {
    t.iterate();
    r.lrs.push_back(t.losses().learning_rate);
    r.want.push_back(gmi::rl::linear_learning_rate(c.learning_rate, c.min_learning_rate, i, iterations - 2));
  }
  for (int i = 0; i < iterations / 2; ++i) first.iterate();
  trainer resumed(envs, 3, c, {}, on);
  resumed.load_state(first.save_state());
  for (int i = iterations / 2; i < iterations; ++i) {
    resumed.iterate();
    r.resumed_lrs.push_back(resumed.losses().learning_rate);
  }
  return r;
}

namespace {
using ppo_gpu_runs::one_iteration;
using wide_net = gmi::agents::gaussian_mlp<gmi::nn::layers<64, 64>>::network<23, 9>;
static_assert(gmi::rl::detail::minibatch_gradient<wide_net>::default_path == gmi::rl::detail::gradient_path::tiles);
static_assert(gmi::rl::detail::minibatch_gradient<net>::default_path == gmi::rl::detail::gradient_path::warps);
static_assert(gmi::rl::detail::tile_gradient<wide_net>::shared_weights);
}  // namespace

gradient_path_run cartpole_iteration(const std::string& path) { return one_iteration<gmi::envs::cartpole, net>(path); }
gradient_path_run wide_proxy_iteration(const std::string& path) {
  return one_iteration<gmi::envs::franka_cabinet_proxy, wide_net>(path);
}

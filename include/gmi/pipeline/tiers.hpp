#pragma once
// The two lower throughput tiers, measured on engines of their own before a run trains: env-step (every
// environment stepped with uniform random actions, no policy) and serving (policy inference + sampling + env
// step, nothing stored).

#include <chrono>
#include <cstdint>
#include <vector>

#include <gmi/core/rng.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/exec/exec.hpp>
#include <gmi/rl/env_batch.hpp>

namespace gmi::detail {

struct random_actions_fn {
  float* actions;
  std::uint64_t seed;
  std::uint64_t round;
  GMI_HD void operator()(std::size_t k) const {
    gmi::rng r(seed, k, round);
    actions[k] = r.uniform(-1.0f, 1.0f);
  }
};

// Env-step tier: every environment stepped with uniform random actions in [-1, 1], no policy.
template <class Env, class Policy>
double measure_env_tier(int num_envs, std::uint64_t seed, const typename Env::params& params, const Policy& policy,
                        double seconds) {
  rl::env_batch<Env, Policy> envs(num_envs, seed ^ 0xE5E5ull, params, policy);
  using array = typename rl::env_batch<Env, Policy>::template span<float>;
  const std::size_t n = static_cast<std::size_t>(num_envs);
  auto make = [&](std::size_t count) {
    if constexpr (Policy::on_device) return cuda::device_buffer<float>(count);
    else return std::vector<float>(count);
  };
  auto actions = make(n * Env::act_dim), obs = make(n * Env::obs_dim), rewards = make(n);
  auto make_u8 = [&]() {
    if constexpr (Policy::on_device) return cuda::device_buffer<std::uint8_t>(n);
    else return std::vector<std::uint8_t>(n);
  };
  auto term = make_u8(), trunc = make_u8();
  CUstream_st* stream = nullptr;
  if constexpr (Policy::on_device) stream = policy.stream;
  using span_u8 = typename rl::env_batch<Env, Policy>::template span<std::uint8_t>;
  using span_cf = typename rl::env_batch<Env, Policy>::template span<const float>;
  envs.reset(array(obs.data(), obs.size()), stream);
  auto step_batch = [&](std::uint64_t round) {
    exec::for_each(policy, actions.size(), random_actions_fn{actions.data(), seed, round});
    envs.step(span_cf(actions.data(), actions.size()), array(obs.data(), obs.size()),
              array(rewards.data(), rewards.size()), span_u8(term.data(), n), span_u8(trunc.data(), n), stream);
  };
  for (int k = 0; k < 10; ++k) step_batch(k);
  exec::synchronize(policy);
  std::uint64_t steps = 0, round = 10;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int k = 0; k < 50; ++k) step_batch(round++);
    exec::synchronize(policy);
    steps += 50;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return static_cast<double>(steps) * num_envs / elapsed;
}

// Serving tier: policy inference + sampling + env step, nothing stored.
template <class Trainer>
double measure_serve_tier(Trainer& t, int steps_per_launch, double seconds) {
  t.serve(steps_per_launch);
  t.synchronize();
  std::uint64_t steps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int k = 0; k < 4; ++k) t.serve(steps_per_launch);
    t.synchronize();
    steps += 4ull * steps_per_launch;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return static_cast<double>(steps) * t.num_envs() / elapsed;
}


}  // namespace gmi::detail

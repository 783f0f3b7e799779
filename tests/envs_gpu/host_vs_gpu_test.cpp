// Every task, same seed and actions: host threads and CUDA kernels give the same trajectories. Random draws
// (resets) are bit-identical; the dynamics agree to float rounding (sinf/cosf/sqrtf and FMA contraction differ
// by an ulp or so between the host library and CUDA), so values are compared with |a - b| <= 1e-3 (1 + |b|)
// and the terminated/truncated flags exactly.
#include <doctest/doctest.h>

#include <cmath>

#include <gmi/envs/registry.hpp>

#include "gpu_runs.hpp"

namespace {
template <class T>
trajectory run_host(int n, int steps, std::uint64_t seed, std::uint64_t action_seed) {
  gmi::rl::env_batch<T> b(n, seed);
  std::vector<float> obs(std::size_t(n) * T::obs_dim), act(std::size_t(n) * T::act_dim), rew(n);
  std::vector<std::uint8_t> te(n), tr(n);
  trajectory out;
  b.reset({obs.data(), obs.size()});
  out.obs = obs;
  for (int t = 0; t < steps; ++t) {
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < T::act_dim; ++k) act[std::size_t(i) * T::act_dim + k] = test_action(action_seed, t, i, T::act_dim, k);
    b.step({act.data(), act.size()}, {obs.data(), obs.size()}, {rew.data(), rew.size()}, {te.data(), te.size()},
           {tr.data(), tr.size()});
    out.obs.insert(out.obs.end(), obs.begin(), obs.end());
    out.rewards.insert(out.rewards.end(), rew.begin(), rew.end());
    out.terminated.insert(out.terminated.end(), te.begin(), te.end());
    out.truncated.insert(out.truncated.end(), tr.begin(), tr.end());
  }
  out.stats = b.read_stats();
  return out;
}

int mismatches(const std::vector<float>& a, const std::vector<float>& b) {
  int bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i) bad += !(std::fabs(a[i] - b[i]) <= 1e-3f * (1.0f + std::fabs(b[i])));
  return bad;
}
}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("envs_gpu.host_and_gpu_trajectories_agree_for_every_task" * doctest::timeout(300)) {
    gmi::envs::for_each_task([]<class T>() {
      CAPTURE(T::name);
      const bool proxy = T::obs_dim > 40;
      const int n = proxy ? 16 : 256, steps = proxy ? 40 : 300;
      const trajectory h = run_host<T>(n, steps, 2024, 7);
      const trajectory g = run_gpu(T::name, n, steps, 2024, 7);
      REQUIRE(h.obs.size() == g.obs.size());
      CHECK(mismatches(h.obs, g.obs) == 0);
      CHECK(mismatches(h.rewards, g.rewards) == 0);
      CHECK(h.terminated == g.terminated);
      CHECK(h.truncated == g.truncated);
      CHECK(h.stats.episodes == g.stats.episodes);
      CHECK(h.stats.length_sum == g.stats.length_sum);
      CHECK(h.stats.return_sum == doctest::Approx(g.stats.return_sum).epsilon(1e-4));
      // The first observations come from the RNG alone (plus observe): bit-identical for the non-proxy tasks,
      // whose resets draw uniforms only.
      if (!proxy) {
        CHECK(std::vector<float>(h.obs.begin(), h.obs.begin() + n * T::obs_dim) ==
              std::vector<float>(g.obs.begin(), g.obs.begin() + n * T::obs_dim));
      }
    });
  }

  TEST_CASE("envs_gpu.fused_kernel_entry_point_matches_the_host") {
    const int n = 1000, steps = 300;
    const std::vector<float> g = run_gpu_fused_cartpole(n, steps, 5);
    gmi::rl::env_batch<gmi::envs::cartpole> b(n, 5);
    const auto v = b.view();
    std::vector<float> h(std::size_t(n) * 4);
    for (int i = 0; i < n; ++i) {
      float* o = &h[std::size_t(i) * 4];
      v.reset_one(i, o);
      for (int t = 0; t < steps; ++t) {
        const float a = 0.1f * o[0] + 0.2f * o[1] + 3.0f * o[2] + 0.5f * o[3];
        v.step_one(i, &a, o);
      }
    }
    CHECK(mismatches(h, g) == 0);
  }

  TEST_CASE("envs_gpu.bad_counts_are_refused_before_allocating") {
    CHECK_THROWS_AS(run_gpu("cartpole", 0, 1, 1, 1), gmi::config_error);
    CHECK_THROWS_AS(run_gpu("shadow_hand_proxy", 2000000000, 1, 1, 1), gmi::config_error);
    CHECK_THROWS_AS(run_gpu("no_such_task", 4, 1, 1, 1), gmi::config_error);
  }
}

#pragma once
// anchor_proxy<Obs, Act>: the PyTorch anchor's workload proxy (shared/anchors/torch_isaacgym_style.py, class
// Proxy): a heavier task's observation and action sizes with cheap elementwise "physics", so a serving benchmark
// measures the policy network. Used for the ShadowHand-size (211/20) and Ant-size (60/8) MLP serving comparisons.
// Not a learning task: see the *_proxy LQ tasks for that.

#include <cmath>
#include <cstdint>
#include <vector>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>

namespace gmi::envs {

template <int ObsDim, int ActDim>
struct anchor_proxy {
  using env_concept = gmi::env_tag;
  static constexpr const char* name = "anchor_proxy";
  static constexpr int obs_dim = ObsDim, act_dim = ActDim;
  static constexpr int substeps = 4;  // the anchor's default

  struct params {
    const float* table = nullptr;  // W[act][obs] ~ N(0, 0.01^2), bound by the driver
    std::uint64_t model_seed = 1;
    int max_steps = 1000;          // the anchor ends every episode at t >= 1000 (a time limit)
  };
  struct state {
    float x[ObsDim];
  };

  static std::vector<float> make_table(const params& p) {
    std::vector<float> w(static_cast<std::size_t>(ActDim) * ObsDim);
    gmi::rng r(p.model_seed, 0xA9C40u);
    for (auto& v : w) v = 0.01f * r.normal();
    return w;
  }
  GMI_HD static void bind_table(params& p, const float* table) { p.table = table; }

  // The anchor starts at N(0, 0.1^2) and resets finished episodes to 0; one distribution for both here.
  GMI_HD static void reset(state& s, gmi::rng& r, const params&) {
    for (int k = 0; k < ObsDim; ++k) s.x[k] = 0.1f * r.normal();
  }

  // x += 0.01 (tanh(a W) - 0.1 x), `substeps` times (a W is the same every substep); reward -mean(x^2).
  GMI_HD static gmi::transition step(state& s, const float* action, gmi::rng&, const params& p) {
    float reward = 0.0f;
    for (int k = 0; k < ObsDim; ++k) {
      float u = 0.0f;
      for (int j = 0; j < ActDim; ++j) u += action[j] * p.table[j * ObsDim + k];
      const float drive = tanhf(u);
      float x = s.x[k];
      for (int sub = 0; sub < substeps; ++sub) x += 0.01f * (drive - 0.1f * x);
      s.x[k] = x;
      reward += x * x;
    }
    return {-reward / ObsDim, false};
  }

  GMI_HD static void observe(const state& s, float* obs, const params&) {
    for (int k = 0; k < ObsDim; ++k) obs[k] = s.x[k];
  }
};

static_assert(gmi::env<anchor_proxy<211, 20>>);

}  // namespace gmi::envs

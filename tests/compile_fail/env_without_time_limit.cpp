// params without max_steps: the driver could not truncate episodes, so the type is refused.
#include <gmi/concepts/env.hpp>

struct my_env {
  using env_concept = gmi::env_tag;
  static constexpr int obs_dim = 1, act_dim = 1;
  struct params {
#ifndef GMI_EXPECT_COMPILE_FAIL
    int max_steps = 10;
#endif
    float scale = 1;
  };
  struct state {
    float x;
  };
  static void reset(state& s, gmi::rng&, const params&) { s.x = 0; }
  static gmi::transition step(state& s, const float* a, gmi::rng&, const params& p) {
    s.x += p.scale * a[0];
    return {-s.x * s.x, false};
  }
  static void observe(const state& s, float* o, const params&) { o[0] = s.x; }
};

static_assert(gmi::check_env<my_env>());

int main() { return 0; }

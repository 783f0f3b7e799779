// A type that opts in to gmi::env but has no step function is refused with a sentence naming the member.
#include <gmi/concepts/env.hpp>

struct my_env {
  using env_concept = gmi::env_tag;
  static constexpr int obs_dim = 2, act_dim = 1;
  struct params {
    int max_steps = 10;
  };
  struct state {
    float x, v;
  };
  static void reset(state& s, gmi::rng&, const params&) { s = {0, 0}; }
#ifndef GMI_EXPECT_COMPILE_FAIL
  static gmi::transition step(state& s, const float* a, gmi::rng&, const params&) {
    s.v += a[0];
    s.x += s.v;
    return {-s.x * s.x, false};
  }
#endif
  static void observe(const state& s, float* o, const params&) {
    o[0] = s.x;
    o[1] = s.v;
  }
};

static_assert(gmi::check_env<my_env>());

int main() { return 0; }

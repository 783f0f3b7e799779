// A type with the right members that does not opt in to gmi::env is refused with a sentence saying how to opt in.
#include <gmi/concepts/env.hpp>

struct my_env {
#ifndef GMI_EXPECT_COMPILE_FAIL
  using env_concept = gmi::env_tag;
#endif
  static constexpr int obs_dim = 1, act_dim = 1;
  struct params {
    int max_steps = 10;
  };
  struct state {
    float x;
  };
  static void reset(state& s, gmi::rng&, const params&) { s.x = 0; }
  static gmi::transition step(state& s, const float* a, gmi::rng&, const params&) {
    s.x += a[0];
    return {-s.x * s.x, false};
  }
  static void observe(const state& s, float* o, const params&) { o[0] = s.x; }
};

static_assert(gmi::check_env<my_env>());

int main() { return 0; }

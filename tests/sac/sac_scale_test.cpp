// Gradient steps per vector step (sac_config::updates_per_vector_step), the replay ratio, and gmi::run's GPU
// defaults (pipeline/sac_defaults.hpp: rl::sac_gpu_scale for every setting no flag gave).
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>

#include <gmi/core/error.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/pipeline/sac_defaults.hpp>
#include <gmi/rl/sac.hpp>
#include <gmi/rl/sac_config.hpp>

namespace {
using namespace gmi;

TEST_CASE("sac.config.updates_per_vector_step") {
  rl::sac_config c;
  CHECK(c.updates_for(8, 8) == 8.0);  // per transition: 1 each
  CHECK(c.replay_ratio(8) == 256.0);
  c.updates_per_vector_step = 3.0f;
  CHECK(c.updates_for(8, 8) == 3.0);  // a whole vector step: exactly the setting
  CHECK(c.updates_for(4, 8) == 1.5);  // half of one (an actor's message in split roles)
  CHECK(c.replay_ratio(8) == doctest::Approx(256.0 * 3 / 8));
  c.updates_per_vector_step = 0.0f;
  CHECK_THROWS_WITH_AS(c.validate(), "sac.updates_per_vector_step: got 0, need in (0, 4096] (or nullopt: updates_per_step)",
                       config_error);
  c.updates_per_vector_step = NAN;
  CHECK_THROWS_AS(c.validate(), config_error);
  c.updates_per_vector_step = 64.0f;
  CHECK_NOTHROW(c.validate());
}

// The trainer owes updates_per_vector_step gradient steps per step of its environments, carried over between
// steps when fractional, whatever updates_per_step says.
TEST_CASE("sac.trainer.updates_per_vector_step") {
  rl::sac_config c;
  c.batch = 16;
  c.warmup_steps = 16;
  c.replay_capacity = 1000;
  c.updates_per_step = 5.0f;          // replaced
  c.updates_per_vector_step = 1.5f;
  rl::sac_trainer<envs::pendulum, rl::sac_networks<3, 1, 8>> t(c, 4, 3);
  t.train(12);
  CHECK(t.updates() == 0);  // warming up
  t.train(16);              // the step reaching warm-up: 1.5 owed, 1 run
  CHECK(t.updates() == 1);
  t.train(20);              // 0.5 + 1.5 owed: 2 more
  CHECK(t.updates() == 3);
  t.train(32);              // 3 more vector steps: 4.5 owed, 4 run
  CHECK(t.updates() == 7);
  CHECK(t.env_steps() == 32);
}

TEST_CASE("sac.gpu_scale_defaults") {
  const auto apply = [](std::set<std::string> given) {
    run_options o;
    o.num_envs = 16;
    detail::apply_sac_gpu_scale(o, [&](const char* f) { return given.count(f) > 0; });
    return o;
  };
  using g = rl::sac_gpu_scale;
  // No flag: every GPU setting; the result validates, and its replay ratio is batch x updates / envs.
  run_options o = apply({});
  CHECK(o.num_envs == g::num_envs);
  CHECK(o.sac.batch == g::batch);
  REQUIRE(o.sac.updates_per_vector_step.has_value());
  CHECK(*o.sac.updates_per_vector_step == g::updates_per_vector_step);
  CHECK(o.sac.warmup_steps == g::warmup_steps);
  CHECK(o.sac.replay_capacity == g::replay_capacity);
  CHECK(o.sac.n_step == g::n_step);
  CHECK(o.sac.cuda_graph);
  CHECK_NOTHROW(o.sac.validate());
  CHECK(o.sac.replay_ratio(std::size_t(o.num_envs)) ==
        doctest::Approx(double(g::batch) * g::updates_per_vector_step / g::num_envs));
  // Flags win: the values they set stay; --sac-updates-per-step keeps the per-transition rate.
  o = apply({"--num-envs", "--sac-updates-per-step", "--sac-warmup-steps", "--sac-replay-capacity"});
  CHECK(o.num_envs == 16);
  CHECK(o.sac.batch == g::batch);
  CHECK_FALSE(o.sac.updates_per_vector_step.has_value());
  CHECK(o.sac.warmup_steps == rl::sac_config{}.warmup_steps);
  CHECK(o.sac.replay_capacity == rl::sac_config{}.replay_capacity);
  // --sac-n-step wins; split roles keep one-step transitions (their actors send those).
  o = apply({"--sac-n-step"});
  CHECK(o.sac.n_step == 1);
  run_options split;
  split.split_roles = true;
  detail::apply_sac_gpu_scale(split, [](const char*) { return false; });
  CHECK(split.sac.n_step == 1);
  o = apply({"--sac-updates-per-vector-step"});
  CHECK_FALSE(o.sac.updates_per_vector_step.has_value());  // the flag's own value (unset here) stays
  // A batch larger than the GPU warm-up: the warm-up and the capacity follow it, so the config still validates.
  run_options big;
  big.sac.batch = 65536;
  detail::apply_sac_gpu_scale(big, [](const char* f) { return std::string(f) == "--sac-batch"; });
  CHECK(big.sac.warmup_steps == 65536);
  CHECK_NOTHROW(big.sac.validate());
}

}  // namespace

// Placement by metric: the faster side wins at the default threshold, the threshold overrides it, bad profiles
// are refused in one line, and a real CPU step is timed.
#include <doctest/doctest.h>

#include <string>

#include <gmi/actors/cores.hpp>
#include <gmi/actors/host_sim.hpp>
#include <gmi/envs/pendulum.hpp>
#include <gmi/plan/placement.hpp>

namespace plan = gmi::plan;

TEST_CASE("plan.placement.faster_side_wins") {
  // 8 cores at 50 us per step: 160 K steps/s; the GPU does 4096 envs in 10 ms: 409.6 K steps/s.
  plan::placement_profile p{"ant", 4096, 8, 50e-6, 10e-3};
  auto c = plan::choose_placement(p);
  CHECK(c.chosen == plan::placement::gpu_simulation);
  CHECK(c.cpu_steps_per_s == doctest::Approx(160e3));
  CHECK(c.gpu_steps_per_s == doctest::Approx(409.6e3));
  // A small batch: 256 envs in the same 10 ms is 25.6 K steps/s; CPU actors win.
  p.batch = 256;
  CHECK(plan::choose_placement(p).chosen == plan::placement::cpu_actors);
  const auto line = plan::choose_placement(p).line();
  CHECK(line["bench"] == "placement");
  CHECK(line["chosen"] == "cpu");
}

TEST_CASE("plan.placement.threshold_overrides") {
  const plan::placement_profile p{"ant", 4096, 8, 50e-6, 10e-3};  // gpu 2.56x cpu
  CHECK(plan::choose_placement(p, {2.0}).chosen == plan::placement::gpu_simulation);
  CHECK(plan::choose_placement(p, {3.0}).chosen == plan::placement::cpu_actors);
}

TEST_CASE("plan.placement.bad_profiles_refused_in_one_line") {
  CHECK_THROWS_WITH_AS((void)plan::choose_placement({"ant", 0, 8, 50e-6, 1e-3}),
                       doctest::Contains("placement batch for ant: got 0"), gmi::config_error);
  CHECK_THROWS_WITH_AS((void)plan::choose_placement({"ant", 64, 8, 0, 1e-3}),
                       doctest::Contains("cpu_seconds_per_step"), gmi::config_error);
  CHECK_THROWS_WITH_AS((void)plan::choose_placement({"ant", 64, 8, 1e-5, 1e-3}, {0.0}),
                       doctest::Contains("placement threshold: got 0"), gmi::config_error);
}

TEST_CASE("plan.placement.times_a_real_cpu_step") {
  gmi::actors::pin_this_thread(gmi::actors::available_cores().front());
  gmi::actors::env_sim<gmi::envs::pendulum> sim(1, 3u);
  float obs[3], action[1] = {0.5f};
  sim.reset_one(0, obs);
  const double t = plan::seconds_per_call([&] { (void)sim.step_one(0, action, obs, nullptr); }, 10, 1000, 0.01);
  CHECK(t > 0);
  CHECK(t < 1e-3);
}

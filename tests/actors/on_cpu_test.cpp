// actors::on_cpu<Env> in a pipeline's env slot: gmi::train runs PPO with the environments on CPU actors.
#include <doctest/doctest.h>

#include <string>

#include <gmi/actors/cores.hpp>
#include <gmi/plan/placement.hpp>

#include "on_cpu_runs.hpp"

TEST_SUITE("cpu") {
  // gmi::train on host threads with on_cpu<cartpole, 2>: the engine is the actors' (a compile-time fact checked
  // here), the run reaches its step limit, and its weights equal ppo_on_actors run directly for as many
  // iterations with the same seed (the pipeline adds nothing to the training).
  TEST_CASE("actors.on_cpu.trains_through_gmi_train" * doctest::timeout(240)) {
    if (gmi::actors::available_cores().size() < 2) {
      MESSAGE("[gmi] SKIPPED: on_cpu<cartpole, 2> needs 2 cores");
      return;
    }
    const auto o = train_cartpole_on_cpu(64 * 16 * 6);
    CAPTURE(o.error);
    REQUIRE(o.error.empty());
    CHECK(o.engine_is_actors);
    CHECK(o.reason == "step limit");
    CHECK(o.iterations == 6);
    CHECK(o.env_steps == doctest::Approx(64 * 16 * 6));
    CHECK(o.serve_rate > 0);
    CHECK(o.train_rate > 0);
    REQUIRE(!o.weights.empty());
    CHECK(o.weights == o.reference);
  }

  // What still can not work with CPU actors is refused before anything starts, in one line naming the option.
  TEST_CASE("actors.on_cpu.refuses_what_cannot_work") {
    const std::string split = on_cpu_refusal("split_roles");
    CHECK(split.find("--split-roles with CPU actors (actors::on_cpu): got true, need colocated roles") != std::string::npos);
    CHECK(split.find('\n') == std::string::npos);
    CHECK(on_cpu_refusal("cores_without_actors").find("--actor-cores-per-gmi with env cartpole: got 2, need 0") !=
          std::string::npos);
    CHECK(on_cpu_refusal("cpu_cores_without_actors").find("--partition: got \"cpu_cores\", need none, mps") !=
          std::string::npos);
    const std::string cores = on_cpu_refusal("too_many_cores");
    CHECK(cores.find("actor cores for 2 GMIs: got \"2 x 4096\", need <= ") != std::string::npos);
    CHECK(cores.find('\n') == std::string::npos);
  }

  // The placement threshold: the command line overrides the default (plan::default_placement_threshold), and a
  // value that is not a finite number > 0 is refused in one line, on the command line (exit code 2) and from a config.
  TEST_CASE("actors.on_cpu.placement_threshold_override_and_refusal") {
    CHECK(parse_on_cpu_cli({}).placement_threshold == gmi::plan::default_placement_threshold);
    const auto set = parse_on_cpu_cli({"--autotune-placement-threshold", "2.5", "--actor-cores-per-gmi", "3"});
    CHECK(set.exit_code == -1);
    CHECK(set.placement_threshold == 2.5);
    CHECK(set.actor_cores_per_gmi == 3);
    CHECK(parse_on_cpu_cli({"--autotune-placement-threshold", "0"}).exit_code == 2);
    CHECK(parse_on_cpu_cli({"--autotune-placement-threshold", "-3"}).exit_code == 2);
    CHECK(parse_on_cpu_cli({"--actor-cores-per-gmi", "-1"}).exit_code == 2);
    CHECK(parse_on_cpu_cli({"--partition", "cpu_cores"}).exit_code == -1);
    const std::string msg = on_cpu_refusal("threshold");
    CHECK(msg.find("--autotune-placement-threshold: got -1, need a finite value > 0") != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }

  // A plan's CPU/GPU ratio sets actor cores per GMI, GMIs per GPU and envs per GMI (envs per core x cores x 2
  // groups, as the sweep ran); a point that is no measurement is refused in one line.
  TEST_CASE("actors.on_cpu.plan_ratio_applied") {
    std::string error;
    CHECK(applied_ratio(7, 64, 2, &error) == std::vector<int>{7, 2, 7 * 64 * 2});
    CHECK(applied_ratio(1, 16, 1, &error) == std::vector<int>{1, 1, 32});
    CHECK(error.empty());
    CHECK(applied_ratio(0, 16, 1, &error).empty());
    CHECK(error.find("cpu_actor_ratio.chosen.cores_per_gmi: got 0, need >= 1") != std::string::npos);
  }

  // A saved plan's CPU/GPU ratio reaches a run on host threads end to end (gmi::run --device host --plan): the plan's
  // sweep chooses 1 actor core per GMI, 16 envs per core, 2 GMIs per GPU, and the run's end line shows 2 host GMIs
  // of 1 actor core each (disjoint) with 1 x 16 x 2 = 32 environments each. A plan without a ratio is one line.
  TEST_CASE("actors.on_cpu.ratio_plan_applied_on_host" * doctest::timeout(240)) {
    if (gmi::actors::available_cores().size() < 2) {
      MESSAGE("[gmi] SKIPPED: 2 host GMIs of one actor core each need 2 cores");
      return;
    }
    const auto o = train_on_ratio_plan("/tmp/gmi-test-ratio-plan.json", "/tmp/gmi-test-ratio-plan.jsonl", true);
    CAPTURE(o.error);
    REQUIRE(o.error.empty());
    CHECK(o.chosen_cores == 1);
    CHECK(o.chosen_envs_per_core == 16);
    CHECK(o.chosen_gmis == 2);
    CHECK(o.exit_code == 0);
    CHECK(o.gmis == 2);
    CHECK(o.actor_cores_per_gmi == 1);
    CHECK(o.num_envs == 32);
    REQUIRE(o.actor_cores.size() == 2);
    CHECK(o.actor_cores[0].size() == 1);
    CHECK(o.actor_cores[1].size() == 1);
    CHECK(o.actor_cores[0] != o.actor_cores[1]);
    const auto none = train_on_ratio_plan("/tmp/gmi-test-plan-no-ratio.json", "/tmp/gmi-test-plan-no-ratio.jsonl", false);
    CHECK(none.error.find("on host threads: cpu_actor_ratio: got \"none\", need a plan with the CPU/GPU ratio") !=
          std::string::npos);
    CHECK(none.error.find('\n') == std::string::npos);
  }

  // --population with CPU actors on host threads: 2 members, each its own actor core (disjoint) and seed (7, 8),
  // train alone to their step limit (4 iterations of 64 envs x 16 steps each) and are reported side by side.
  TEST_CASE("actors.on_cpu.population_of_host_gmis" * doctest::timeout(240)) {
    if (gmi::actors::available_cores().size() < 2) {
      MESSAGE("[gmi] SKIPPED: 2 host GMIs of one actor core each need 2 cores");
      return;
    }
    const auto o = train_population_on_cpu("/tmp/gmi-test-population-on-cpu.jsonl");
    CAPTURE(o.error);
    REQUIRE(o.error.empty());
    CHECK(o.exit_code == 0);
    CHECK(o.gmis == 2);
    REQUIRE(o.members.size() == 2);
    CHECK(o.members[0].seed == 7);
    CHECK(o.members[1].seed == 8);
    for (const auto& m : o.members) {
      CHECK(m.reason == "step limit");
      CHECK(m.iterations == 4);
      CHECK(m.actor_cores.size() == 1);
      // Its own file: a progress line at each of its 4 decisions (--log-interval 0) and an end line, with its seed.
      CHECK(m.file_seed == m.seed);
      CHECK(m.progress_lines == 4);
      CHECK(m.end_lines == 1);
      CHECK(m.file_iterations == 4);
      CHECK(m.wall_points == m.curve_points);
    }
    CHECK(o.members[0].file_rank == 0);
    CHECK(o.members[1].file_rank == 1);
    CHECK(o.members[0].actor_cores != o.members[1].actor_cores);
  }
}

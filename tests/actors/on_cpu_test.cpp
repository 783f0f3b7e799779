// actors::on_cpu<Env> in a pipeline's env slot: gmi::train runs PPO with the environments on CPU actors.
#include <doctest/doctest.h>

#include <string>

#include <gmi/actors/cores.hpp>

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

  // Options asking for more GMIs are refused before anything starts, naming the option and its value.
  TEST_CASE("actors.on_cpu.refuses_several_gmis") {
    const std::string population = on_cpu_several_gmis_refusal("population");
    CHECK(population.find("--population with CPU actors (actors::on_cpu): got true, need one GMI") != std::string::npos);
    const std::string gmis = on_cpu_several_gmis_refusal("gmis");
    CHECK(gmis.find("--gmis-per-gpu with CPU actors (actors::on_cpu): got 4, need one GMI") != std::string::npos);
    const std::string gpus = on_cpu_several_gmis_refusal("gpus");
    CHECK(gpus.find("--gpus with CPU actors (actors::on_cpu): got \"all\"") != std::string::npos);
  }

  TEST_CASE("actors.on_cpu.refuses_a_synced_group") {
    const std::string msg = on_cpu_sync_refusal();
    CHECK(msg.find("CPU actors (actors::on_cpu)") != std::string::npos);
    CHECK(msg.find("one GMI") != std::string::npos);
  }
}

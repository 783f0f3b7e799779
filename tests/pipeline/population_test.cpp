// Population mode's members: from seeds alone or a sweep file, and every bad sweep refused with one line.
#include <doctest/doctest.h>

#include <cstdio>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gmi/pipeline/population.hpp>

using nlohmann::json;

TEST_SUITE("cpu") {
TEST_CASE("pipeline.population.seeds_from_the_base_seed") {
  gmi::rl::ppo_config base;
  base.learning_rate = 5e-4f;
  const auto m = gmi::population_from(json(), base, 7, 4);
  REQUIRE(m.size() == 4);
  for (int r = 0; r < 4; ++r) {
    CHECK(m[r].seed == 7u + r);
    CHECK(m[r].ppo.learning_rate == doctest::Approx(5e-4));
    CHECK(m[r].overrides == json{{"seed", 7 + r}});
  }
}

TEST_CASE("pipeline.population.sweep_entries_override_the_run") {
  gmi::rl::ppo_config base;
  const json sweep = json::parse(R"([{"seed": 3}, {"lr": 1e-3, "clip": 0.1}, {"lr_schedule": "constant", "epochs": 4}])");
  const auto m = gmi::population_from(sweep, base, 100, 3);
  REQUIRE(m.size() == 3);
  CHECK(m[0].seed == 3u);
  CHECK(m[0].ppo.learning_rate == base.learning_rate);
  CHECK(m[1].seed == 101u);  // no seed in the entry: base seed + rank
  CHECK(m[1].ppo.learning_rate == doctest::Approx(1e-3));
  CHECK(m[1].ppo.clip == doctest::Approx(0.1));
  CHECK(m[2].ppo.schedule == gmi::rl::lr_schedule::constant);
  CHECK(m[2].ppo.epochs == 4);
  CHECK(m[2].overrides.at("seed") == 102);
}

TEST_CASE("pipeline.population.bad_sweeps_are_refused") {
  const gmi::rl::ppo_config base;
  auto refused = [&](const std::string& text, int members, const std::string& part) {
    CAPTURE(text);
    CHECK_THROWS_WITH_AS(gmi::population_from(json::parse(text), base, 1, members), doctest::Contains(part.c_str()),
                         gmi::config_error);
  };
  refused(R"([{"seed": 1}])", 2, "sweep entries: got 1, need 2");
  refused(R"({"seed": 1})", 1, "a JSON array");
  refused(R"([{"learning_rate": 1e-3}])", 1, "sweep entry 0 key: got \"learning_rate\"");
  refused(R"([{"lr": "fast"}])", 1, "sweep entry 0 \"lr\": got \"fast\", need a number");
  refused(R"([{"epochs": 2.5}])", 1, "a whole number");
  refused(R"([{"seed": -1}])", 1, "need >= 0");
  refused(R"([{"clip": 1.5}])", 1, "sweep entry 0: ppo.clip");
  refused(R"([{"lr_schedule": "cosine"}])", 1, "\"constant\", \"adaptive\", \"linear\" or \"kl_capped\"");
  refused(R"([3])", 1, "sweep entry 0: got \"3\", need an object");
  refused(R"([{"bounds_loss_coef": -1}])", 1, "sweep entry 0: ppo.bounds_loss_coef: got -1, need >= 0");
  // the control: a valid sweep of the same shape passes
  CHECK(gmi::population_from(json::parse(R"([{"clip": 0.3}])"), base, 1, 1).size() == 1);
  CHECK(gmi::population_from(json::parse(R"([{"bounds_loss_coef": 0.01}])"), base, 1, 1)[0].ppo.bounds_loss_coef ==
        doctest::Approx(0.01));
}

TEST_CASE("pipeline.population.sweep_files") {
  const std::string path = "/tmp/gmi-population-test-" + std::to_string(::getpid()) + ".json";
  {
    std::ofstream(path) << "[{\"seed\": 1}, {\"seed\": 2}";  // cut short
  }
  CHECK_THROWS_WITH_AS(gmi::read_sweep_file(path), doctest::Contains("invalid JSON"), gmi::config_error);
  {
    std::ofstream(path) << "[{\"seed\": 1}, {\"seed\": 2}]";
  }
  CHECK(gmi::read_sweep_file(path).size() == 2);
  std::remove(path.c_str());
  CHECK_THROWS_WITH_AS(gmi::read_sweep_file(path), doctest::Contains("a readable JSON file"), gmi::config_error);
}
}

// Plans as files: JSON round trip, atomic save, and refusal of a plan made for another machine.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "plan/synthetic.hpp"

namespace plan = gmi::plan;
using gmi_test::GiB;
using gmi_test::MiB;

namespace {

struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    path = std::filesystem::temp_directory_path() /
           ("gmi-plan-test-" + std::to_string(::getpid()) + "-" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::filesystem::create_directories(path);
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// A small search on 2 synthetic H100s with the saturating model, a fake clock (3 s per trial) and a mapping
// decision from two synthetic measurements: the example of docs/plan.md.
plan::plan example_plan() {
  gmi_test::fake_clock clock;
  gmi_test::recording_trial trial{gmi_test::saturating_model, &clock, 3.0};
  plan::explore_options o;
  o.partitions = {"mps"};
  o.max_gmis_per_gpu = 2;
  o.max_envs = 16384;
  o.can_implement = gmi_test::accept_all;
  o.clock = clock.fn();
  o.budget_seconds = 120;
  const plan::candidate best{"mps", 2, 16384};
  const double colocated = gmi_test::saturating_model(best).throughput;
  const double split = 0.4 * colocated;  // the synthetic split layout: 40% of the colocated throughput
  o.mapping = plan::decide_mapping(colocated, split);
  return plan::explore(gmi_test::fake_topology(2, 80 * GiB), trial.fn(), o);
}

}  // namespace

TEST_SUITE("cpu") {
TEST_CASE("plan.file.json_round_trip") {
  const plan::plan p = example_plan();
  CHECK(p.chosen == plan::candidate{"mps", 2, 16384});
  REQUIRE(p.mapping);
  CHECK(p.mapping->choice == plan::mapping_kind::colocated);
  const std::string text = plan::to_text(p);
  if (const char* out = std::getenv("GMI_PLAN_EXAMPLE_JSON"); out && *out) std::ofstream(out) << text;
  const plan::plan q = plan::from_text(text);
  CHECK(plan::to_text(q) == text);
  CHECK(q.chosen == p.chosen);
  CHECK(q.alpha == p.alpha);
  CHECK(q.projected_throughput == p.projected_throughput);
  CHECK(q.made_for.gpus == 2);
  REQUIRE(q.trials.size() == p.trials.size());
  CHECK(q.trials[1].sat == p.trials[1].sat);
  CHECK_FALSE(q.trials[0].sat);  // a first point has no ratios: null in JSON
  CHECK(q.trials.back().decision == p.trials.back().decision);
  CHECK(q.mapping->reason == p.mapping->reason);

  const auto j = nlohmann::json::parse(text);
  CHECK(j.at("format") == "gmi plan");
  CHECK(j.at("trials")[0].at("r_top").is_null());

  plan::plan unmeasured = p;
  unmeasured.mapping.reset();
  const auto u = nlohmann::json::parse(plan::to_text(unmeasured));
  CHECK(u.at("mapping") == "not measured");
  CHECK_FALSE(plan::from_text(plan::to_text(unmeasured)).mapping);
}

TEST_CASE("plan.file.trials_of_round_trip_default_and_refusal") {
  plan::plan p = example_plan();
  CHECK(p.trials_of == "serving");  // the explorer does not know; gmi::autotune sets it
  p.trials_of = "colocated";
  auto j = nlohmann::json::parse(plan::to_text(p));
  CHECK(j.at("trials_of") == "colocated");
  CHECK(plan::from_text(j.dump()).trials_of == "colocated");
  j.erase("trials_of");  // a plan saved before the field existed: serving trials made it
  CHECK(plan::from_text(j.dump()).trials_of == "serving");
  j["trials_of"] = "split";
  CHECK_THROWS_WITH_AS((void)plan::from_text(j.dump(), "plan p.json"),
                       "plan p.json: trials_of: got \"split\", need serving or colocated", gmi::config_error);
}

TEST_CASE("plan.file.split_candidate_of_a_measured_mapping") {
  plan::plan p = example_plan();
  CHECK_FALSE(p.split_chosen);
  CHECK(nlohmann::json::parse(plan::to_text(p)).at("split_chosen").is_null());
  p.trials_of = "colocated";
  p.mapping = plan::decide_mapping(1.0e6, 3.0e6);
  p.split_chosen = plan::candidate{"mps", 4, 2048};
  const std::string text = plan::to_text(p);
  const plan::plan q = plan::from_text(text);
  REQUIRE(q.split_chosen);
  CHECK(*q.split_chosen == plan::candidate{"mps", 4, 2048});
  CHECK(q.mapping->choice == plan::mapping_kind::split);
  CHECK(plan::to_text(q) == text);
  auto j = nlohmann::json::parse(text);
  j["split_chosen"] = nullptr;  // split chosen, but not where to run it
  CHECK_THROWS_WITH_AS((void)plan::from_text(j.dump(), "plan p.json"),
                       "plan p.json: mapping: got \"split without split_chosen\", need the split layout's candidate "
                       "when the mapping chose split",
                       gmi::config_error);
  j["split_chosen"] = {{"partition", "mps"}, {"gmis_per_gpu", 1}, {"envs_per_gmi", 2048}};
  CHECK_THROWS_WITH_AS((void)plan::from_text(j.dump(), "plan p.json"),
                       "plan p.json: split_chosen.gmis_per_gpu: got 1, need >= 2 (a trainer and a serving GMI)",
                       gmi::config_error);
}

TEST_CASE("plan.file.save_is_atomic_and_load_reads_it_back") {
  scratch_dir dir;
  const auto path = dir.path / "plan.json";
  const plan::plan p = example_plan();
  plan::save(p, path);
  plan::save(p, path);  // over an existing file
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path)) ++files;
  CHECK(files == 1);  // no temporary left behind
  const plan::plan q = plan::load(path, p.made_for);
  CHECK(plan::to_text(q) == plan::to_text(p));

  CHECK_THROWS_WITH_AS((void)plan::load(dir.path / "missing.json", p.made_for),
                       ("plan " + (dir.path / "missing.json").string() + ": can not open (No such file or directory)").c_str(),
                       gmi::config_error);
  std::ofstream(dir.path / "bad.json") << "{\"format\": \"gmi plan\", \"version\": 2}";
  CHECK_THROWS_WITH_AS((void)plan::load(dir.path / "bad.json", p.made_for),
                       ("plan " + (dir.path / "bad.json").string() + ": version: got 2, need 1").c_str(),
                       gmi::config_error);
  std::ofstream(dir.path / "junk.json") << "not json";
  CHECK_THROWS_AS((void)plan::load(dir.path / "junk.json", p.made_for), gmi::config_error);
}

TEST_CASE("plan.file.a_plan_for_another_machine_is_refused") {
  scratch_dir dir;
  const auto path = dir.path / "plan.json";
  plan::plan p = example_plan();
  p.made_for = plan::machine::of(gmi_test::fake_topology(8, 80 * GiB, "NVIDIA A100-SXM4-80GB"));
  plan::save(p, path);
  const std::string where = "plan " + path.string() + ": ";
  SUBCASE("other count and model") {
    CHECK_THROWS_WITH_AS((void)plan::load(path, plan::machine::of(gmi_test::fake_topology(1, 79 * GiB))),
                         (where + "made for 8 x NVIDIA A100-SXM4-80GB (80.0 GiB), this machine has 1 x NVIDIA H100 "
                                  "80GB HBM3 (79.0 GiB)").c_str(),
                         gmi::config_error);
  }
  SUBCASE("same count, other model") {
    CHECK_THROWS_AS((void)plan::load(path, plan::machine::of(gmi_test::fake_topology(8, 80 * GiB))), gmi::config_error);
  }
  SUBCASE("same model name, other memory") {
    CHECK_THROWS_WITH_AS(
        (void)plan::load(path, plan::machine::of(gmi_test::fake_topology(8, 40 * GiB, "NVIDIA A100-SXM4-80GB"))),
        (where + "made for 8 x NVIDIA A100-SXM4-80GB (80.0 GiB), this machine has 8 x NVIDIA A100-SXM4-80GB (40.0 GiB)")
            .c_str(),
        gmi::config_error);
  }
  SUBCASE("a machine without GPU") {
    CHECK_THROWS_WITH_AS((void)plan::load(path, plan::machine::of(plan::host_only("no NVIDIA driver"))),
                         (where + "made for 8 x NVIDIA A100-SXM4-80GB (80.0 GiB), this machine has no GPU").c_str(),
                         gmi::config_error);
  }
  SUBCASE("memory within 1% is the same GPU") {
    const auto q = plan::load(path, plan::machine::of(gmi_test::fake_topology(8, 80 * GiB - 400 * MiB,
                                                                              "NVIDIA A100-SXM4-80GB")));
    CHECK(q.chosen == p.chosen);
  }
}
}

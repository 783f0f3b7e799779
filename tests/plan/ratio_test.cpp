// The CPU/GPU ratio planner: the best point of a measured sweep for a goal, the sweep's result lines, and the
// choice saved in the plan and re-decided on load (malformed entries refused in one line, fuzzed).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gmi/plan/plan.hpp>
#include <gmi/plan/ratio.hpp>

namespace plan = gmi::plan;

namespace {
// A sweep with a throughput peak at 4 cores x 64 envs and an energy peak at 2 cores x 64 envs; 7 cores is within
// 1% of the throughput peak.
std::vector<plan::ratio_point> sweep() {
  return {{1, 64, 1, 20000, 90.0},   {2, 64, 1, 39000, 120.0}, {4, 64, 1, 70000, 110.0},
          {7, 64, 1, 69500, 80.0},   {4, 16, 1, 50000, 95.0},  {2, 64, 2, 60000, std::nullopt}};
}
bool same_ratio(const plan::ratio_point& a, const plan::ratio_point& b) {
  return a.cores_per_gmi == b.cores_per_gmi && a.envs_per_core == b.envs_per_core && a.gmis_per_gpu == b.gmis_per_gpu;
}
std::string one_line_error(const std::string& text) {
  try {
    (void)plan::from_text(text, "plan x.json");
  } catch (const gmi::config_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("plan.ratio.best_point_for_each_goal") {
    const auto s = sweep();
    CHECK(same_ratio(plan::choose_ratio(s).chosen, {4, 64, 1}));
    CHECK(same_ratio(plan::choose_ratio(s, plan::ratio_goal::efficiency).chosen, {2, 64, 1}));
    // Within 5% of the best, 4 cores beat 7 (fewer cores per GPU); within 50%, 2 cores x 64 envs (8-core tie
    // with 2 x 2 GMIs: the higher rate).
    CHECK(same_ratio(plan::choose_ratio(s, plan::ratio_goal::throughput, 0.05).chosen, {4, 64, 1}));
    CHECK(same_ratio(plan::choose_ratio(s, plan::ratio_goal::throughput, 0.5).chosen, {2, 64, 1}));
  }

  TEST_CASE("plan.ratio.within_tolerance_of_the_best_on_random_sweeps") {
    std::mt19937_64 g(38);
    std::uniform_real_distribution<double> rate(1e3, 1e6);
    std::uniform_int_distribution<int> count(1, 16);
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<plan::ratio_point> s(std::size_t(count(g)));
      for (auto& p : s) p = {count(g), count(g) * 16, count(g) % 4 + 1, rate(g), rate(g) / 1e3};
      for (const auto goal : {plan::ratio_goal::throughput, plan::ratio_goal::efficiency}) {
        const double tol = trial % 2 ? 0.05 : 0.0;
        const auto c = plan::choose_ratio(s, goal, tol);
        double best = 0;
        for (const auto& p : s) best = std::max(best, *plan::ratio_value(p, goal));
        CHECK(*plan::ratio_value(c.chosen, goal) >= (1 - tol) * best);
        CHECK(std::any_of(s.begin(), s.end(), [&](const auto& p) { return same_ratio(p, c.chosen); }));
      }
    }
  }

  TEST_CASE("plan.ratio.refusals") {
    CHECK_THROWS_WITH_AS((void)plan::choose_ratio({}), "ratio sweep points: got 0, need >= 1", gmi::config_error);
    auto s = sweep();
    s[3].cores_per_gmi = 0;
    CHECK_THROWS_WITH_AS((void)plan::choose_ratio(s), "ratio point 3.cores_per_gmi: got 0, need >= 1", gmi::config_error);
    s = sweep();
    for (auto& p : s) p.steps_per_joule.reset();
    CHECK_THROWS_WITH_AS((void)plan::choose_ratio(s, plan::ratio_goal::efficiency),
                         doctest::Contains("ratio sweep points with steps_per_joule: got 0"), gmi::config_error);
    CHECK_THROWS_AS((void)plan::choose_ratio(sweep(), plan::ratio_goal::throughput, 1.0), gmi::config_error);
  }

  TEST_CASE("plan.ratio.points_from_sweep_lines") {
    std::istringstream in(
        R"({"bench":"cpu_gpu_ratio","metric":"steps_per_s","median":1000,"gmis_per_gpu":1,"cores_per_gmi":2,"envs_per_core":16})"
        "\n"
        R"({"bench":"cpu_gpu_ratio","metric":"steps_per_joule","median":5,"gmis_per_gpu":1,"cores_per_gmi":2,"envs_per_core":16})"
        "\n\n"
        R"({"bench":"cpu_gpu_ratio","metric":"steps_per_joule","absent":{"gpu_absent":"no NVML"}})"
        "\n"
        R"({"bench":"cpu_actors","metric":"steps_per_s_per_core","median":9})"
        "\n"
        R"({"bench":"cpu_gpu_ratio","metric":"steps_per_s","median":3000,"gmis_per_gpu":2,"cores_per_gmi":1,"envs_per_core":64})"
        "\n");
    const auto pts = plan::ratio_points_from_lines(in, "sweep.jsonl");
    REQUIRE(pts.size() == 2);
    CHECK(same_ratio(pts[0], {2, 16, 1}));
    CHECK(pts[0].steps_per_s == 1000);
    CHECK(pts[0].steps_per_joule == 5.0);
    CHECK(same_ratio(pts[1], {1, 64, 2}));
    CHECK(!pts[1].steps_per_joule);
    std::istringstream bad("{\"bench\":\"cpu_gpu_ratio\"\n");
    CHECK_THROWS_WITH_AS((void)plan::ratio_points_from_lines(bad, "s.jsonl"), doctest::Contains("s.jsonl:1: not a ratio sweep line"),
                         gmi::config_error);
    std::istringstream orphan(
        R"({"bench":"cpu_gpu_ratio","metric":"steps_per_joule","median":5,"gmis_per_gpu":1,"cores_per_gmi":2,"envs_per_core":16})");
    CHECK_THROWS_WITH_AS((void)plan::ratio_points_from_lines(orphan, "s.jsonl"), doctest::Contains("without steps_per_s"),
                         gmi::config_error);
  }

  TEST_CASE("plan.ratio.saved_in_the_plan_and_reloaded") {
    plan::plan p;
    p.made_for.gpus = 0;
    p.chosen = {"mps", 1, 1024};
    const std::string without = plan::to_text(p);
    CHECK(without.find("cpu_actor_ratio") == std::string::npos);
    CHECK(!plan::from_text(without).cpu_actor_ratio);
    p.cpu_actor_ratio = plan::choose_ratio(sweep(), plan::ratio_goal::efficiency);
    const plan::plan back = plan::from_text(plan::to_text(p));
    REQUIRE(back.cpu_actor_ratio);
    CHECK(same_ratio(back.cpu_actor_ratio->chosen, {2, 64, 1}));
    CHECK(back.cpu_actor_ratio->goal == plan::ratio_goal::efficiency);
    CHECK(back.cpu_actor_ratio->sweep.size() == sweep().size());
    CHECK(!back.cpu_actor_ratio->sweep[5].steps_per_joule);
    CHECK(plan::to_text(back) == plan::to_text(p));
  }

  // The plan records the sweep's measured optimum for each goal beside the choice (cores per GMI, envs per core,
  // GMIs per GPU with the point's steps/s and steps/J), even when the tolerance chose another point; an optimum
  // its own sweep does not give is refused on load in one line, and a sweep without energy records none.
  TEST_CASE("plan.ratio.optimum_recorded_with_both_rates") {
    plan::plan p;
    p.chosen = {"mps", 1, 1024};
    p.cpu_actor_ratio = plan::choose_ratio(sweep(), plan::ratio_goal::throughput, 0.5);
    CHECK(same_ratio(p.cpu_actor_ratio->chosen, {2, 64, 1}));
    CHECK(same_ratio(p.cpu_actor_ratio->best_steps_per_s, {4, 64, 1}));
    REQUIRE(p.cpu_actor_ratio->best_steps_per_joule);
    CHECK(same_ratio(*p.cpu_actor_ratio->best_steps_per_joule, {2, 64, 1}));
    const auto j = nlohmann::ordered_json::parse(plan::to_text(p));
    const auto& o = j["cpu_actor_ratio"]["optimum"];
    CHECK(o["steps_per_s"]["cores_per_gmi"] == 4);
    CHECK(o["steps_per_s"]["steps_per_s"] == 70000.0);
    CHECK(o["steps_per_s"]["steps_per_joule"] == 110.0);
    CHECK(o["steps_per_joule"]["cores_per_gmi"] == 2);
    CHECK(o["steps_per_joule"]["steps_per_joule"] == 120.0);
    const plan::plan back = plan::from_text(j.dump());
    CHECK(same_ratio(back.cpu_actor_ratio->best_steps_per_s, {4, 64, 1}));
    auto edited = j;
    edited["cpu_actor_ratio"]["optimum"]["steps_per_s"] = j["cpu_actor_ratio"]["sweep"][0];
    const std::string e = one_line_error(edited.dump());
    CHECK(e == "plan x.json: cpu_actor_ratio.optimum.steps_per_s: got \"1 cores/GMI, 64 envs/core, 1 GMIs/GPU\", need the "
               "sweep's best steps/s point (4 cores/GMI, 64 envs/core, 1 GMIs/GPU)");
    auto no_energy = sweep();
    for (auto& q : no_energy) q.steps_per_joule.reset();
    const auto c = plan::choose_ratio(no_energy);
    CHECK(!c.best_steps_per_joule);
    p.cpu_actor_ratio = c;
    CHECK(nlohmann::ordered_json::parse(plan::to_text(p))["cpu_actor_ratio"]["optimum"]["steps_per_joule"].is_null());
    auto missing = j;
    missing["cpu_actor_ratio"]["optimum"]["steps_per_joule"] = nullptr;
    CHECK(one_line_error(missing.dump()).find("cpu_actor_ratio.optimum.steps_per_joule: got \"null\"") != std::string::npos);
  }

  TEST_CASE("plan.ratio.malformed_entries_refused_in_one_line") {
    plan::plan p;
    p.chosen = {"mps", 1, 1024};
    p.cpu_actor_ratio = plan::choose_ratio(sweep());
    const auto good = nlohmann::ordered_json::parse(plan::to_text(p));
    REQUIRE(one_line_error(good.dump()).empty());
    // Values no field accepts (null is valid only for steps_per_joule, so it is tried on the others).
    const std::vector<nlohmann::ordered_json> bad_values = {0, -1, -3.5, "12", true, nlohmann::ordered_json::array(),
                                                            nlohmann::ordered_json::object()};
    const std::vector<std::string> fields = {"cores_per_gmi", "envs_per_core", "gmis_per_gpu", "steps_per_s",
                                             "steps_per_joule"};
    std::mt19937_64 g(2026);
    int refused = 0;
    for (int trial = 0; trial < 300; ++trial) {
      auto j = good;
      auto& r = j["cpu_actor_ratio"];
      const int kind = int(g() % 6);
      const std::size_t at = g() % r["sweep"].size();
      auto& entry = g() % 3 == 0 ? r["chosen"] : r["sweep"][at];
      const std::string field = fields[g() % fields.size()];
      switch (kind) {
        case 0: entry[field] = bad_values[g() % bad_values.size()]; break;
        case 1: entry.erase(field); break;
        case 2:
          if (field == "steps_per_joule") entry[field] = -2.0;
          else entry[field] = nullptr;
          break;
        case 3: r["goal"] = g() % 2 ? nlohmann::ordered_json("fastest") : nlohmann::ordered_json(7); break;
        case 4: r["chosen"] = r["sweep"][g() % 2 ? 0 : 1]; break;  // not the sweep's own choice (index 2)
        case 5: r[g() % 2 ? "sweep" : "tolerance"] = g() % 2 ? nlohmann::ordered_json(-0.5) : nlohmann::ordered_json::array(); break;
      }
      const std::string e = one_line_error(j.dump());
      CAPTURE(trial);
      CAPTURE(j["cpu_actor_ratio"].dump());
      CHECK(!e.empty());
      CHECK(e.find('\n') == std::string::npos);
      CHECK(e.rfind("plan x.json: ", 0) == 0);
      refused += !e.empty();
    }
    CHECK(refused == 300);
    // One exact message: a hand-edited choice the sweep does not support.
    auto j = good;
    j["cpu_actor_ratio"]["chosen"] = j["cpu_actor_ratio"]["sweep"][0];
    CHECK(one_line_error(j.dump()) ==
          "plan x.json: cpu_actor_ratio.chosen: got \"1 cores/GMI, 64 envs/core, 1 GMIs/GPU\", need the sweep's own choice "
          "(4, 64, 1)");
  }
  TEST_CASE("plan.placement.saved_in_the_plan_and_checked_on_load") {
    plan::plan p;
    p.chosen = {"mps", 1, 1024};
    p.task_placement = plan::choose_placement({"ant_v4", 4096, 14, 5e-5, 2e-3});
    REQUIRE(p.task_placement->chosen == plan::placement::gpu_simulation);  // 2.05 M vs 0.28 M steps/s
    const plan::plan back = plan::from_text(plan::to_text(p));
    REQUIRE(back.task_placement);
    CHECK(back.task_placement->chosen == plan::placement::gpu_simulation);
    CHECK(plan::to_text(back) == plan::to_text(p));
    auto j = nlohmann::ordered_json::parse(plan::to_text(p));
    j["placement"]["chosen"] = "cpu";
    CHECK(one_line_error(j.dump()) ==
          "plan x.json: placement.chosen: got \"cpu\", need what its rates and threshold give (gpu)");
    j["placement"]["chosen"] = "tpu";
    CHECK(one_line_error(j.dump()) == "plan x.json: placement.chosen: got \"tpu\", need cpu or gpu");
    for (const char* field : {"cpu_steps_per_s", "gpu_steps_per_s", "threshold", "batch"}) {
      for (const auto& bad : {nlohmann::ordered_json(0), nlohmann::ordered_json(-1), nlohmann::ordered_json("1"),
                              nlohmann::ordered_json(nullptr), nlohmann::ordered_json(true)}) {
        auto k = nlohmann::ordered_json::parse(plan::to_text(p));
        k["placement"][field] = bad;
        const std::string e = one_line_error(k.dump());
        CAPTURE(field);
        CHECK(e.rfind("plan x.json: ", 0) == 0);
        CHECK(e.find('\n') == std::string::npos);
      }
    }
  }
}

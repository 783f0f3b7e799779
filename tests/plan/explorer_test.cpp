// Algorithm 1 on synthetic models: visit order, memory stop, saturation stop, budget stop and its errors, fallback.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "plan/synthetic.hpp"

namespace plan = gmi::plan;
using gmi_test::GiB;
using gmi_test::KiB;
using gmi_test::MiB;

namespace {

using visit = std::pair<int, int>;

std::vector<visit> rows(std::vector<int> gmis, std::vector<std::vector<int>> envs) {
  std::vector<visit> out;
  for (std::size_t i = 0; i < gmis.size(); ++i) {
    for (int e : envs[i]) out.emplace_back(gmis[i], e);
  }
  return out;
}

std::vector<std::pair<visit, plan::verdict>> decisions(const plan::plan& p) {
  std::vector<std::pair<visit, plan::verdict>> out;
  for (const auto& r : p.trials) out.push_back({{r.what.gmis_per_gpu, r.what.envs_per_gmi}, r.decision});
  return out;
}

const std::vector<int> doubling_128_32768{128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768};

}  // namespace

TEST_SUITE("cpu") {
TEST_CASE("plan.explorer.visits_rows_from_the_upper_bound_down_and_envs_doubling") {
  gmi_test::recording_trial trial{gmi_test::linear_model};
  plan::explore_options o;
  o.max_gmis_per_gpu = 3;
  o.max_envs = 1024;
  o.can_implement = gmi_test::accept_all;
  const auto p = plan::explore(gmi_test::fake_topology(2, 80 * GiB), trial.fn(), o);
  CHECK(trial.visits == rows({3, 2, 1}, {{128, 256, 512, 1024}, {128, 256, 512, 1024}, {128, 256, 512, 1024}}));
  // Linear throughput never saturates; the most environments in total wins: 3 x 1024.
  CHECK(p.chosen == plan::candidate{"none", 3, 1024});
  CHECK(p.gpu_throughput == doctest::Approx(1000.0 * 3 * 1024));
  CHECK(p.projected_throughput == doctest::Approx(2 * 1000.0 * 3 * 1024));
  CHECK(p.selection == "algorithm 1");
  CHECK(p.stopped_by == "every row finished");
  REQUIRE(p.trials.size() == 12);
  CHECK(p.trials[0].decision == plan::verdict::first_point);  // a row's first point is never a candidate
  CHECK(p.trials[1].decision == plan::verdict::best);
  CHECK(p.trials[4].decision == plan::verdict::first_point);
  CHECK(p.trials[5].decision == plan::verdict::candidate);
}

TEST_CASE("plan.explorer.default_rows_start_at_the_papers_10_or_the_backend_limit") {
  gmi_test::recording_trial trial{gmi_test::linear_model};
  plan::explore_options o;
  o.max_envs = 256;
  o.can_implement = gmi_test::accept_all;
  const auto topo = gmi_test::fake_topology(1, 80 * GiB);
  SUBCASE("none: 10 .. 1") {
    (void)plan::explore(topo, trial.fn(), o);
    REQUIRE(trial.visits.size() == 20);
    CHECK(trial.visits.front() == visit{10, 128});
    CHECK(trial.visits.back() == visit{1, 256});
  }
  SUBCASE("mig: a cap of 60 is bounded by 7 instances per GPU") {
    o.partitions = {"mig"};
    o.max_gmis_per_gpu = 60;
    const auto p = plan::explore(topo, trial.fn(), o);
    CHECK(trial.visits.front() == visit{7, 128});
    CHECK(p.chosen.partition == "mig");
  }
  SUBCASE("mps: a cap of 60 is bounded by 48 clients") {
    o.partitions = {"mps"};
    o.max_gmis_per_gpu = 60;
    (void)plan::explore(topo, trial.fn(), o);
    CHECK(trial.visits.front() == visit{48, 128});
  }
  SUBCASE("two backends, one after the other") {
    o.partitions = {"mps", "none"};
    o.max_gmis_per_gpu = 2;
    std::vector<std::string> seen;
    trial.model = [&](const plan::candidate& c) {
      seen.push_back(c.partition);
      return gmi_test::linear_model(c);
    };
    (void)plan::explore(topo, trial.fn(), o);
    CHECK(seen == std::vector<std::string>{"mps", "mps", "mps", "mps", "none", "none", "none", "none"});
  }
}

TEST_CASE("plan.explorer.refused_rows_are_recorded_and_skipped") {
  gmi_test::recording_trial trial{gmi_test::linear_model};
  plan::explore_options o;
  o.max_gmis_per_gpu = 3;
  o.max_envs = 256;
  o.can_implement = [](const std::string&, int g) {
    return g == 2 ? gmi::status::invalid("gmis_per_gpu: got 2, need not 2") : gmi::status::ok();
  };
  const auto p = plan::explore(gmi_test::fake_topology(1, 80 * GiB), trial.fn(), o);
  CHECK(trial.visits == rows({3, 1}, {{128, 256}, {128, 256}}));
  REQUIRE(p.trials.size() == 5);
  CHECK(p.trials[2].decision == plan::verdict::row_refused);
  CHECK(p.trials[2].note == "gmis_per_gpu: got 2, need not 2");

  o.can_implement = [](const std::string&, int) { return gmi::status::unavailable("no MPS daemon"); };
  try {
    (void)plan::explore(gmi_test::fake_topology(1, 80 * GiB), trial.fn(), o);
    FAIL("expected a config_error");
  } catch (const gmi::config_error& e) {
    CHECK(std::string(e.what()) ==
          "plan explorer: no row could run: none x 3: no MPS daemon; none x 2: no MPS daemon; none x 1: no MPS daemon");
  }
}

TEST_CASE("plan.explorer.memory_stop_before_a_trial_that_would_not_fit") {
  // 16 GiB GPUs, a GMI needs 1 GiB + 1 MiB per environment: shares 4, 5.33, 8, 16 GiB for 4, 3, 2, 1 GMIs.
  gmi_test::recording_trial trial{gmi_test::linear_model};
  plan::explore_options o;
  o.max_gmis_per_gpu = 4;
  o.can_implement = gmi_test::accept_all;
  const auto p = plan::explore(gmi_test::fake_topology(4, 16 * GiB), trial.fn(), o);
  CHECK(trial.visits == rows({4, 3, 2, 1}, {{128, 256, 512, 1024, 2048},
                                            {128, 256, 512, 1024, 2048, 4096},
                                            {128, 256, 512, 1024, 2048, 4096},
                                            {128, 256, 512, 1024, 2048, 4096, 8192}}));
  std::vector<visit> stops;
  for (const auto& r : p.trials) {
    if (r.decision == plan::verdict::memory_stop) {
      stops.emplace_back(r.what.gmis_per_gpu, r.what.envs_per_gmi);
      CHECK_FALSE(r.measured);
      REQUIRE(r.projected_memory_bytes);
      CHECK(*r.projected_memory_bytes == doctest::Approx(static_cast<double>(GiB + MiB * r.what.envs_per_gmi)));
      CHECK(*r.projected_memory_bytes > static_cast<double>(r.memory_share_bytes));
    }
  }
  CHECK(stops == std::vector<visit>{{4, 4096}, {3, 8192}, {2, 8192}, {1, 16384}});
  CHECK(p.chosen == plan::candidate{"none", 3, 4096});  // 3 x 4096 = 12288 envs per GPU, the most that fit
  CHECK(p.projected_throughput == doctest::Approx(4 * 1000.0 * 3 * 4096));
}

TEST_CASE("plan.explorer.saturation_stop_with_a_saturating_model") {
  gmi_test::recording_trial trial{gmi_test::saturating_model};
  plan::explore_options o;
  o.max_gmis_per_gpu = 4;
  o.can_implement = gmi_test::accept_all;
  SUBCASE("default alpha") {
    CHECK(o.alpha == 0.1);
    const auto p = plan::explore(gmi_test::fake_topology(2, 16 * GiB), trial.fn(), o);
    using v = plan::verdict;
    const auto F = v::first_point, B = v::best, C = v::candidate;
    // Expected from an independent implementation of Algorithm 1 with this model (Sat values in comments).
    const std::vector<std::pair<visit, plan::verdict>> expected{
        {{4, 128}, F},   {{4, 256}, B},   {{4, 512}, B},   {{4, 1024}, B},  {{4, 2048}, B},
        {{4, 4096}, B},  {{4, 8192}, B} /* Sat 0.139 */,   {{4, 16384}, v::memory_stop},
        {{3, 128}, F},   {{3, 256}, C},   {{3, 512}, C},   {{3, 1024}, C},  {{3, 2048}, C},
        {{3, 4096}, C},  {{3, 8192}, B} /* 0.179 */,       {{3, 16384}, v::saturated} /* Sat 0.0865 */,
        {{2, 128}, F},   {{2, 256}, C},   {{2, 512}, C},   {{2, 1024}, C},  {{2, 2048}, C},
        {{2, 4096}, C},  {{2, 8192}, C},  {{2, 16384}, B} /* 0.125 */,      {{2, 32768}, v::memory_stop},
        {{1, 128}, F},   {{1, 256}, C},   {{1, 512}, C},   {{1, 1024}, C},  {{1, 2048}, C},
        {{1, 4096}, C},  {{1, 8192}, C},  {{1, 16384}, C}, {{1, 32768}, B} /* 0.118 */};
    CHECK(decisions(p) == expected);
    const auto& sat = p.trials[15];
    REQUIRE(sat.sat);
    CHECK(*sat.sat == doctest::Approx(0.0865).epsilon(1e-3));
    CHECK(sat.note == "Sat 0.087 < alpha 0.100");
    CHECK(p.chosen == plan::candidate{"none", 1, 32768});
    const double n = 32768;
    CHECK(p.projected_throughput == doctest::Approx(2 * 1e7 * n / (n + 4096)));
  }
  SUBCASE("a larger alpha stops rows earlier") {
    o.alpha = 0.2;
    const auto p = plan::explore(gmi_test::fake_topology(2, 16 * GiB), trial.fn(), o);
    CHECK(trial.visits == rows({4, 3, 2, 1}, {{128, 256, 512, 1024, 2048, 4096, 8192},
                                              {128, 256, 512, 1024, 2048, 4096, 8192},
                                              {128, 256, 512, 1024, 2048, 4096, 8192, 16384},
                                              doubling_128_32768}));
    CHECK(p.alpha == 0.2);
    // (4, 8192) Sat 0.139, (3, 8192) 0.179, (2, 16384) 0.125, (1, 32768) 0.118 now saturate; (1, 16384) Sat 0.225.
    CHECK(p.chosen == plan::candidate{"none", 1, 16384});
  }
}

TEST_CASE("plan.explorer.saturation_of_follows_lines_17_to_22") {
  const auto s = plan::saturation_of(100, 150, 1000, 2000, 0.1);  // R_top 0.5, R_mem 1
  REQUIRE(s.sat);
  CHECK(*s.r_top == doctest::Approx(0.5));
  CHECK(*s.r_mem == doctest::Approx(1.0));
  CHECK(*s.sat == doctest::Approx(0.5));
  CHECK_FALSE(s.saturated);
  CHECK(plan::saturation_of(100, 105, 1000, 2000, 0.1).saturated);   // Sat 0.05
  CHECK(plan::saturation_of(100, 90, 1000, 2000, 0.1).saturated);    // throughput fell
  CHECK_FALSE(plan::saturation_of(100, 120, 0, 0, 0.1).saturated);   // no memory measured: grew, not saturated
  CHECK(plan::saturation_of(100, 100, 1000, 1000, 0.1).saturated);   // nothing grew
  CHECK_FALSE(plan::saturation_of(100, 110, 1000, 1000, 0.1).sat);   // R_mem 0: Sat undefined
}

TEST_CASE("plan.explorer.budget_stop_keeps_the_best_so_far") {
  gmi_test::fake_clock clock;
  gmi_test::recording_trial trial{gmi_test::linear_model, &clock, 10.0};
  plan::explore_options o;
  o.max_gmis_per_gpu = 2;
  o.can_implement = gmi_test::accept_all;
  o.budget_seconds = 55;  // 10 s trials: after 5, 50 s + 10 s > 55 s
  o.clock = clock.fn();
  const auto p = plan::explore(gmi_test::fake_topology(1, 80 * GiB), trial.fn(), o);
  CHECK(trial.visits == rows({2}, {{128, 256, 512, 1024, 2048}}));
  REQUIRE(p.trials.size() == 6);
  CHECK(p.trials.back().decision == plan::verdict::budget_stop);
  CHECK(p.trials.back().what == plan::candidate{"none", 2, 4096});
  CHECK(p.stopped_by == "budget: 50 s spent + 10 s (longest trial) > budget 55 s, after 5 trials");
  CHECK(p.chosen == plan::candidate{"none", 2, 2048});
  CHECK(p.explore_seconds == doctest::Approx(50));
}

TEST_CASE("plan.explorer.budget_too_small_for_one_trial") {
  gmi_test::fake_clock clock;
  gmi_test::recording_trial trial{gmi_test::linear_model, &clock, 20.0};
  plan::explore_options o;
  o.can_implement = gmi_test::accept_all;
  o.clock = clock.fn();
  o.budget_seconds = 10;
  SUBCASE("estimated") {
    o.estimated_trial_seconds = 30;
    try {
      (void)plan::explore(gmi_test::fake_topology(1, 80 * GiB), trial.fn(), o);
      FAIL("expected a config_error");
    } catch (const gmi::config_error& e) {
      CHECK(std::string(e.what()) == "plan explorer budget: got \"10 s\", need at least one trial: estimated 30 s per trial");
    }
    CHECK(trial.visits.empty());
  }
  SUBCASE("measured") {
    try {
      (void)plan::explore(gmi_test::fake_topology(1, 80 * GiB), trial.fn(), o);
      FAIL("expected a config_error");
    } catch (const gmi::config_error& e) {
      CHECK(std::string(e.what()) == "plan explorer budget: got \"10 s\", need at least one trial: the first trial "
                                     "(none 10 GMIs x 128 envs) took 20 s (measured)");
    }
    CHECK(trial.visits.size() == 1);
  }
}

TEST_CASE("plan.explorer.a_failed_trial_stops_its_row") {
  gmi_test::recording_trial trial{[](const plan::candidate& c) {
    if (c.gmis_per_gpu == 2 && c.envs_per_gmi == 512) return plan::trial_result::failed("out of memory");
    if (c.gmis_per_gpu == 1 && c.envs_per_gmi == 256) throw std::runtime_error("GMI 0 exited with signal 11");
    return gmi_test::linear_model(c);
  }};
  plan::explore_options o;
  o.max_gmis_per_gpu = 2;
  o.max_envs = 1024;
  o.can_implement = gmi_test::accept_all;
  const auto p = plan::explore(gmi_test::fake_topology(1, 80 * GiB), trial.fn(), o);
  CHECK(trial.visits == rows({2, 1}, {{128, 256, 512}, {128, 256}}));
  CHECK(p.trials[2].decision == plan::verdict::failed);
  CHECK(p.trials[2].note == "out of memory");
  CHECK(p.trials[4].note == "trial threw: GMI 0 exited with signal 11");
  CHECK(p.chosen == plan::candidate{"none", 2, 256});
}

TEST_CASE("plan.explorer.fallback_when_no_point_passes_the_checks") {
  // Throughput flat: every row saturates at its second point, so Algorithm 1 keeps nothing.
  gmi_test::recording_trial trial{[](const plan::candidate& c) {
    return plan::trial_result::measured(1e6 * c.gmis_per_gpu, GiB + MiB * static_cast<std::uint64_t>(c.envs_per_gmi));
  }};
  plan::explore_options o;
  o.max_gmis_per_gpu = 3;
  o.can_implement = gmi_test::accept_all;
  const auto p = plan::explore(gmi_test::fake_topology(1, 80 * GiB), trial.fn(), o);
  CHECK(trial.visits == rows({3, 2, 1}, {{128, 256}, {128, 256}, {128, 256}}));
  CHECK(p.selection.rfind("fallback:", 0) == 0);
  CHECK(p.chosen == plan::candidate{"none", 3, 128});  // the highest measured throughput, first measured on ties

  gmi_test::recording_trial failing{[](const plan::candidate&) { return plan::trial_result::failed("no GPU"); }};
  CHECK_THROWS_WITH_AS((void)plan::explore(gmi_test::fake_topology(1, 80 * GiB), failing.fn(), o),
                       "plan explorer: all 3 trials failed; first: none 3 GMIs x 128 envs: no GPU", gmi::error);
}

TEST_CASE("plan.explorer.rejects_bad_options_and_machines") {
  gmi_test::recording_trial trial{gmi_test::linear_model};
  plan::explore_options o;
  o.can_implement = gmi_test::accept_all;
  CHECK_THROWS_WITH_AS((void)plan::explore(plan::host_only("no NVIDIA driver: test"), trial.fn(), o),
                       "plan explorer machine: got \"no GPU (no NVIDIA driver: test)\", need at least one GPU",
                       gmi::config_error);
  auto mixed = gmi_test::fake_topology(2, 80 * GiB);
  mixed.gpus[1].name = "NVIDIA A100-SXM4-80GB";
  CHECK_THROWS_AS((void)plan::explore(mixed, trial.fn(), o), gmi::config_error);
  o.partitions = {"tpu"};
  CHECK_THROWS_WITH_AS((void)plan::explore(gmi_test::fake_topology(1, GiB), trial.fn(), o),
                       "partition: got \"tpu\", need none, mps, green_context, mig or cpu_cores", gmi::config_error);
  o.partitions = {"none"};
  o.max_envs = 64;
  CHECK_THROWS_WITH_AS((void)plan::explore(gmi_test::fake_topology(1, GiB), trial.fn(), o),
                       "plan explorer max_envs: got 64, need >= min_envs (128)", gmi::config_error);
  CHECK(trial.visits.empty());
}

TEST_CASE("plan.explorer.progress_line_per_table_row") {
  gmi_test::fake_clock clock;
  gmi_test::recording_trial trial{gmi_test::linear_model, &clock, 2.5};
  plan::explore_options o;
  o.max_gmis_per_gpu = 4;
  o.max_envs = 4096;
  o.can_implement = gmi_test::accept_all;
  o.clock = clock.fn();
  std::vector<std::string> lines;
  o.progress = [&](const plan::trial_record& r) { lines.push_back(plan::describe(r)); };
  const auto p = plan::explore(gmi_test::fake_topology(4, 16 * GiB), trial.fn(), o);
  REQUIRE(lines.size() == p.trials.size());
  CHECK(lines[0] == "none 4 GMIs x 128 envs: 512.0k steps/s/GPU, 1.12 GiB/GMI of 4.00 GiB -> first_point [2.5 s]");
  CHECK(lines[1] == "none 4 GMIs x 256 envs: 1.02M steps/s/GPU, 1.25 GiB/GMI of 4.00 GiB, Sat 9.000 -> best "
                    "(4.10M steps/s projected) [2.5 s]");
  CHECK(lines[5] == "none 4 GMIs x 4096 envs: not run -> memory_stop: projected 5.00 GiB per GMI > share 4.00 GiB "
                    "(GPU memory / 4)");
}

TEST_CASE("plan.profiler.memory_projection_is_a_least_squares_line") {
  plan::memory_projection m;
  CHECK_FALSE(m.at(512));
  m.add(128, 1000 + 10 * 128);
  CHECK_FALSE(m.at(512));  // one point: no line
  m.add(256, 1000 + 10 * 256);
  m.add(512, 1000 + 10 * 512);
  REQUIRE(m.line());
  CHECK(m.line()->first == doctest::Approx(1000));
  CHECK(m.line()->second == doctest::Approx(10));
  CHECK(*m.at(1024) == doctest::Approx(1000 + 10 * 1024));
  plan::memory_projection flat;  // noisy points with a falling fit never project below what was measured
  flat.add(128, 5000);
  flat.add(256, 4000);
  CHECK(*flat.at(512) == doctest::Approx(5000));
}

TEST_CASE("plan.mapping.decided_by_measured_throughput") {
  const auto a = plan::decide_mapping(2.5e6, 1.0e6);
  CHECK(a.choice == plan::mapping_kind::colocated);
  CHECK(a.reason == "colocated: measured 2.50M vs 1.00M for split (2.50x)");
  const auto b = plan::decide_mapping(1.0e6, 3.0e6);
  CHECK(b.choice == plan::mapping_kind::split);
  CHECK(b.split_throughput == 3.0e6);
  CHECK(plan::decide_mapping(5, 5).choice == plan::mapping_kind::colocated);
  CHECK_THROWS_WITH_AS((void)plan::decide_mapping(0, 1), "mapping colocated throughput: got 0, need a measured value > 0",
                       gmi::config_error);
}
}

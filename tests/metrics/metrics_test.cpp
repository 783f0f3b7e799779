#include <doctest/doctest.h>

#include <gmi/metrics/metrics.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

TEST_SUITE("cpu") {
  TEST_CASE("metrics.summary.median_min_max") {
    const auto s = gmi::metrics::summarize({5, 1, 3, 4, 2});
    CHECK(s.median == 3);
    CHECK(s.min == 1);
    CHECK(s.max == 5);
    CHECK(s.reps == 5);
    CHECK(gmi::metrics::summarize({1, 2, 3, 4}).median == 2.5);
    CHECK_THROWS_AS(gmi::metrics::summarize({}), gmi::config_error);
  }

  TEST_CASE("metrics.jsonl.appends_one_object_per_line") {
    const auto path = std::filesystem::temp_directory_path() / ("gmi-metrics-" + std::to_string(::getpid()) + ".jsonl");
    std::filesystem::remove(path);
    {
      gmi::metrics::jsonl_log log(path);
      log.write({{"iteration", 1}, {"return", 10.5}});
      log.write({{"iteration", 2}});
    }
    std::ifstream in(path);
    std::string a, b, c;
    std::getline(in, a);
    std::getline(in, b);
    CHECK_FALSE(std::getline(in, c));
    CHECK(nlohmann::json::parse(a)["return"] == 10.5);
    CHECK(nlohmann::json::parse(b)["iteration"] == 2);
    std::filesystem::remove(path);
    CHECK_THROWS_AS(gmi::metrics::jsonl_log("/proc/no/such/dir/m.jsonl"), gmi::config_error);
  }

  TEST_CASE("metrics.progress.formats") {
    CHECK(gmi::metrics::si(1.5e6) == "1.50M");
    CHECK(gmi::metrics::si(2.5e9) == "2.50G");
    CHECK(gmi::metrics::si(1234) == "1.2k");
    CHECK(gmi::metrics::clock_text(65) == "1:05");
    CHECK(gmi::metrics::clock_text(3725) == "1:02:05");
    CHECK(gmi::metrics::eta_seconds(25, 100, 10) == doctest::Approx(30));
    // resumed at 50 of 100: 25 more in 10 s, so the 25 left take 10 s more (not 25 * 10 / 75)
    CHECK(gmi::metrics::eta_seconds(75, 100, 10, 50) == doctest::Approx(10));
    CHECK(gmi::metrics::eta_seconds(50, 100, 10, 50) == 0);  // nothing done yet: unknown, 0
  }

  TEST_CASE("metrics.progress.eta_stops_at_the_time_limit") {
    // 25 of 100 steps in 10 s: 30 s more by steps, but a 20 s time limit leaves 10 s
    CHECK(gmi::metrics::eta_seconds(25, 100, 10, 0, 20) == doctest::Approx(10));
    CHECK(gmi::metrics::eta_seconds(25, 100, 10, 0, 3600) == doctest::Approx(30));
    CHECK(gmi::metrics::eta_seconds(25, 100, 30, 0, 20) == doctest::Approx(0));
    // resumed at 50: nothing done in this run yet, so only the time limit says when it ends
    CHECK(gmi::metrics::eta_seconds(50, 100, 10, 50, 20) == doctest::Approx(10));
    // the step limit passed within the last iteration (1.11 M of --max-env-steps 1.1e6, 325 s into a 3600 s
    // limit): the run ends now, not in 54:35
    CHECK(gmi::metrics::eta_seconds(1.11e6, 1.1e6, 325, 0, 3600) == 0);
    CHECK(gmi::metrics::eta_seconds(100, 100, 10, 0, 20) == 0);
  }

  TEST_CASE("metrics.run_info.identity_fields") {
    const auto run = gmi::metrics::describe_run();
    CHECK(run.run_id.size() > 20);
    const auto line = gmi::metrics::result_line(run, "serving", "gmi", "steps_per_s", gmi::metrics::summarize({1, 2, 3}));
    for (const char* key : {"run_id", "bench", "impl", "device", "gpus", "git", "metric", "median", "min", "max", "reps"})
      CHECK(line.contains(key));
  }
}

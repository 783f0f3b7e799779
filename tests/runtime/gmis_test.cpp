// runtime::run_gmis' checks that need no GPU (bad partition names and launch combinations are refused before any
// device query), GMI reports reaching the launcher (thread and process GMIs), and how the serving reports of
// several GMIs add up (windows, the longest GMI's time, GPM figures).
#include <doctest/doctest.h>

#include <string>

#include <gmi/pipeline/serving_gmis.hpp>
#include <gmi/runtime/gmis.hpp>
#include <gmi/runtime/supervisor.hpp>

#include "runtime/helpers.hpp"

namespace {
using gmi::runtime::gmis_config;

std::string why(const gmis_config& c) { return gmi::runtime::can_implement(c).message(); }
}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("runtime.gmis.config_checks_before_devices") {
    gmis_config c;
    c.partition = "slices";
    CHECK(why(c) == "partition: got \"slices\", need none, mps, green_context, mig");
    c.partition = "mps";
    c.launch = gmi::runtime::launch_mode::threads;
    CHECK(why(c) == "launch for partition mps: got \"threads\", need processes or auto (one process per GMI)");
    c.partition = "green_context";
    c.launch = gmi::runtime::launch_mode::processes;
    CHECK(why(c).find("green contexts are slices of one process") != std::string::npos);
    c.launch = gmi::runtime::launch_mode::automatic;
    c.gmis_per_gpu = 0;
    CHECK(why(c) == "gmis_per_gpu: got 0, need >= 1");
    c.gmis_per_gpu = 2;
    c.mps_percentage = 50;
    CHECK(why(c) == "an MPS percentage with partition: got \"green_context\", need mps");
    c.mps_percentage.reset();
    c.partition = "none";
    c.sms_per_gmi = 16;
    CHECK(why(c) == "SMs per GMI with partition: got \"none\", need green_context");
    c.sms_per_gmi = 0;
    c.gpus.clear();
    CHECK(why(c) == "GPUs: got \"none\", need at least one");
  }

  TEST_CASE("runtime.gmis.processes_by_backend") {
    gmis_config c;
    CHECK_FALSE(c.processes());
    c.launch = gmi::runtime::launch_mode::processes;
    CHECK(c.processes());
    c.partition = "mps";
    c.launch = gmi::runtime::launch_mode::automatic;
    CHECK(c.processes());
    c.partition = "mig";
    CHECK(c.processes());
    c.partition = "green_context";
    CHECK_FALSE(c.processes());
    c.gpus = {0, 1};
    c.gmis_per_gpu = 4;
    CHECK(c.world() == 8);
  }

  TEST_CASE("runtime.gmis.spec_places_ranks_on_gpus") {
    gmis_config c;
    c.gpus = {2, 3};
    c.gmis_per_gpu = 3;
    const auto s = gmi::runtime::spec_of(c);
    REQUIRE(s.gmis.size() == 6);
    CHECK(s.gmis[0].gpu == 2);
    CHECK(s.gmis[2].slice == 2);
    CHECK(s.gmis[3].gpu == 3);
    CHECK(s.gmis[3].slice == 0);
    CHECK(s.gmis[5].local_device == 3);
    REQUIRE(s.groups.size() == 3);  // one per GPU and one of all
    CHECK(s.groups[2].size() == 6);
  }

  TEST_CASE("runtime.gmis.reports_reach_the_launcher") {
    auto s = gmi::runtime::launch_spec::uniform(0, 3);  // host GMIs
    gmi::runtime::thread_group g(s, [](gmi::runtime::context& ctx) {
      ctx.report("{\"rank\": " + std::to_string(ctx.rank()) + "}");
    });
    const auto r = g.wait_or_throw();
    REQUIRE(r.results.size() == 3);
    CHECK(r.results[0] == "{\"rank\": 0}");
    CHECK(r.results[2] == "{\"rank\": 2}");
    gmi::runtime::thread_group too_long(gmi::runtime::launch_spec::uniform(0, 1), [](gmi::runtime::context& ctx) {
      ctx.report(std::string(9000, 'x'));
    });
    const auto bad = too_long.wait();
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.first_failure->message.find("GMI report size: got 9000, need < 8192 bytes") != std::string::npos);
  }

  TEST_CASE("runtime.gmis.serving_totals") {
    gmi::runtime::run_report r;
    gmi::gmi_serving_result a, b;
    a.rank = 0, a.num_envs = 512, a.steps = {1000, 2000, 1000}, a.seconds = {1.0, 1.0, 0.5}, a.gpm.active = 80.0, a.gpm.occupancy = 40.0;
    b.rank = 1, b.num_envs = 512, b.steps = {1000, 1000, 1000}, b.seconds = {2.0, 1.0, 1.0}, b.gpm.note = "";
    r.results = {nlohmann::json(a).dump(), nlohmann::json(b).dump()};
    const auto t = gmi::collect_serving(r);
    REQUIRE(t.window_steps_per_s.size() == 3);
    CHECK(t.window_steps_per_s[0] == doctest::Approx(2000.0 * 512 / 2.0));  // the longest GMI's time
    CHECK(t.window_steps_per_s[1] == doctest::Approx(3000.0 * 512 / 1.0));
    CHECK(t.window_steps_per_s[2] == doctest::Approx(2000.0 * 512 / 1.0));
    CHECK(t.steps_per_s == doctest::Approx(2000.0 * 512));  // the median window
    CHECK(t.total_envs == 1024);
    REQUIRE(t.gpm.active.has_value());
    CHECK(*t.gpm.active == doctest::Approx(80.0));
    r.results[1].clear();
    CHECK_THROWS_WITH_AS(gmi::collect_serving(r), "GMI 1 ended without a serving report", gmi::error);
  }
}

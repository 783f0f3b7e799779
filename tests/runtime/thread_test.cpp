// Thread GMIs: an exception, a hang that honours the stop flag, and one that ignores it (detached, reported);
// communication between four threads; the segment is gone afterwards.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <thread>

#include <gmi/runtime/supervisor.hpp>

#include "runtime/helpers.hpp"
#include "runtime/scenarios.hpp"

namespace {

using namespace std::chrono_literals;
using gmi::runtime::launch_spec;
using gmi::runtime::run_report;
using gmi::runtime::thread_group;

run_report run_threads(const std::string& scenario, int victim, int gmis, double& seconds,
                       std::chrono::milliseconds grace = 1000ms) {
  launch_spec s = launch_spec::uniform(1, gmis);
  s.heartbeat_timeout = 1000ms;
  s.stop_grace = grace;
  thread_group g(s, [=](gmi::runtime::context& ctx) { gmi_test::run_scenario(ctx, scenario, victim); });
  const std::string shm = g.shm_name();
  CHECK(gmi_test::shm_exists(shm));
  const auto t0 = std::chrono::steady_clock::now();
  run_report r = g.wait();
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK_FALSE(gmi_test::shm_exists(shm));
  return r;
}

}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("runtime.thread.all_finish" * doctest::timeout(30)) {
    double s = 0;
    const run_report r = run_threads("ok", -1, 3, s);
    CHECK(r.ok());
    for (const auto& e : r.exits) CHECK(e.how == "returned");
  }

  TEST_CASE("runtime.thread.exception_is_named" * doctest::timeout(30)) {
    double s = 0;
    const run_report r = run_threads("throw", 2, 4, s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.first_failure->message == "GMI 2 (GPU 0, slice 2) threw: boom from rank 2");
    CHECK(r.not_stopped.empty());
    CHECK(s < 10.0);
  }

  TEST_CASE("runtime.thread.hang_is_detected" * doctest::timeout(30)) {
    double s = 0;
    const run_report r = run_threads("hang", 1, 3, s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.first_failure->message.starts_with("GMI 1 (GPU 0, slice 1) hung: no heartbeat for 1."));
    CHECK(r.not_stopped.empty());
    CHECK(s < 10.0);
  }

  // The same silence as hang_is_detected (2.5 s against a 1 s timeout), with heartbeat_during beating for it.
  TEST_CASE("runtime.thread.heartbeat_during_a_long_task" * doctest::timeout(30)) {
    launch_spec s = launch_spec::uniform(1, 2);
    s.heartbeat_timeout = 1000ms;
    thread_group g(s, [](gmi::runtime::context& ctx) {
      if (ctx.rank() != 1) return;
      const gmi::runtime::heartbeat_during beats(ctx);
      std::this_thread::sleep_for(2500ms);
    });
    const run_report r = g.wait();
    CHECK_MESSAGE(r.ok(), (r.ok() ? "" : r.first_failure->message));
  }

  TEST_CASE("runtime.thread.ignoring_stop_is_reported" * doctest::timeout(30)) {
    double s = 0;
    const run_report r = run_threads("hang_hard", 0, 2, s, 200ms);
    REQUIRE_FALSE(r.ok());
    CHECK(r.first_failure->rank == 0);
    REQUIRE(r.not_stopped.size() == 1);
    CHECK(r.not_stopped[0] == 0);
    CHECK(r.exits[0].how == "still running (detached)");
    CHECK(s < 5.0);
    std::this_thread::sleep_for(3s);  // let the detached thread end before the process does
  }

  TEST_CASE("runtime.thread.comm_between_four" * doctest::timeout(60)) {
    double s = 0;
    const run_report r = run_threads("comm", -1, 4, s);
    CHECK_MESSAGE(r.ok(), (r.ok() ? "" : r.first_failure->message));
  }

  TEST_CASE("runtime.thread.silent_peer_times_out" * doctest::timeout(30)) {
    double s = 0;
    const run_report r = run_threads("silent_peer", 1, 2, s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.first_failure->message ==
          "GMI 0 (GPU 0, slice 0) threw: recv from GMI 1 in GMI 0 (GPU 0, slice 0): timed out after 300 ms with no "
          "data");
    CHECK(s < 5.0);
  }
}

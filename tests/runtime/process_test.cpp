// Process GMIs: the test binary re-execs itself as workers (worker_scenarios.cpp). Each failure kind (crash,
// exception, exit code, hang, SIGKILL from outside, SIGTERM to the launcher) is detected within a bound, the
// error names the GMI, and afterwards no child process and no /dev/shm entry of the run remain.
#include <doctest/doctest.h>

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gmi/runtime/supervisor.hpp>

#include "runtime/helpers.hpp"

namespace {

using namespace std::chrono_literals;
using gmi::runtime::launch_spec;
using gmi::runtime::process_group;
using gmi::runtime::run_report;

launch_spec spec_for(const std::string& scenario, int victim, int gmis = 4, int gpus = 0) {
  launch_spec s = gpus == 0 ? launch_spec::uniform(0, gmis) : launch_spec::uniform(gpus, gmis / gpus);
  s.env = {{"GMI_TEST_SCENARIO", scenario}, {"GMI_TEST_VICTIM", std::to_string(victim)}};
  s.heartbeat_timeout = 1500ms;
  s.stop_grace = 1000ms;
  return s;
}

// Runs to the end and checks the clean-up invariants; returns the report and how long wait() took.
run_report run_and_check(process_group& g, double& seconds) {
  const auto pids = g.pids();
  const std::string shm = g.shm_name();
  CHECK(gmi_test::shm_exists(shm));
  const auto t0 = std::chrono::steady_clock::now();
  run_report r = g.wait();
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (int pid : pids) CHECK_MESSAGE(!gmi_test::process_exists(pid), "GMI pid ", pid, " still exists");
  CHECK(gmi_test::children_of_this_process().empty());
  CHECK_FALSE(gmi_test::shm_exists(shm));
  return r;
}

}  // namespace

TEST_SUITE("cpu") {
  TEST_CASE("runtime.process.all_finish" * doctest::timeout(30)) {
    process_group g(spec_for("ok", -1));
    double s = 0;
    const run_report r = run_and_check(g, s);
    CHECK(r.ok());
    REQUIRE(r.exits.size() == 4);
    for (const auto& e : r.exits) CHECK_MESSAGE(e.clean, e.how);
  }

  TEST_CASE("runtime.process.crash_is_named" * doctest::timeout(30)) {
    process_group g(spec_for("crash", 2, 4, 2));
    double s = 0;
    const run_report r = run_and_check(g, s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.first_failure->rank == 2);
    CHECK(r.first_failure->message == "GMI 2 (GPU 1, slice 0) exited with signal 6 (SIGABRT)");
    CHECK(s < 10.0);
    MESSAGE(r.first_failure->message, " (detected and torn down in ", s, " s)");
  }

  TEST_CASE("runtime.process.exception_message_reaches_the_error" * doctest::timeout(30)) {
    process_group g(spec_for("throw", 1));
    double s = 0;
    const run_report r = run_and_check(g, s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.first_failure->message == "GMI 1 (host, slice 1) exited with code 1: boom from rank 1");
    CHECK(s < 10.0);
  }

  TEST_CASE("runtime.process.nonzero_exit" * doctest::timeout(30)) {
    process_group g(spec_for("exit3", 3));
    double s = 0;
    const run_report r = run_and_check(g, s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.first_failure->message == "GMI 3 (host, slice 3) exited with code 3");
  }

  TEST_CASE("runtime.process.hang_is_detected" * doctest::timeout(30)) {
    process_group g(spec_for("hang", 1));
    double s = 0;
    const run_report r = run_and_check(g, s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.first_failure->rank == 1);
    CHECK(r.first_failure->message.starts_with("GMI 1 (host, slice 1) hung: no heartbeat for 1."));
    CHECK(s < 10.0);
    MESSAGE(r.first_failure->message, " (", s, " s)");
  }

  TEST_CASE("runtime.process.sigterm_ignored_then_sigkill" * doctest::timeout(30)) {
    launch_spec spec = spec_for("hang_hard", 0, 2);
    spec.env.push_back({"GMI_TEST_IGNORE_TERM", "1"});
    spec.heartbeat_timeout = 500ms;
    spec.stop_grace = 300ms;
    process_group g(std::move(spec));
    double s = 0;
    const run_report r = run_and_check(g, s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.first_failure->rank == 0);
    CHECK(r.exits[0].how == "exited with signal 9 (SIGKILL)");
    CHECK(s < 3.0);  // killed, not waited out
  }

  TEST_CASE("runtime.process.sigkill_from_outside" * doctest::timeout(30)) {
    process_group g(spec_for("beat", -1));
    const pid_t victim = g.pid(3);
    std::thread killer([victim] {
      std::this_thread::sleep_for(500ms);
      kill(victim, SIGKILL);
    });
    double s = 0;
    const run_report r = run_and_check(g, s);
    killer.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.first_failure->message == "GMI 3 (host, slice 3) exited with signal 9 (SIGKILL)");
    CHECK(s < 10.0);
    // The siblings were stopped by the teardown's SIGTERM.
    CHECK(r.exits[0].how == "exited with signal 15 (SIGTERM)");
  }

  TEST_CASE("runtime.process.launcher_sigterm_tears_down" * doctest::timeout(30)) {
    process_group g(spec_for("beat", -1, 2));
    std::thread sender([] {
      std::this_thread::sleep_for(500ms);
      kill(getpid(), SIGTERM);
    });
    double s = 0;
    const run_report r = run_and_check(g, s);
    sender.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.first_failure->rank == -1);
    CHECK(r.first_failure->message == "launcher received SIGTERM");
  }

  TEST_CASE("runtime.process.wait_or_throw_names_the_gmi" * doctest::timeout(30)) {
    process_group g(spec_for("exit3", 0, 2));
    CHECK_THROWS_WITH_AS(g.wait_or_throw(), "GMI 0 (host, slice 0) exited with code 3", gmi::runtime::gmi_failed);
  }

  TEST_CASE("runtime.process.destructor_tears_down" * doctest::timeout(30)) {
    std::vector<pid_t> pids;
    std::string shm;
    {
      process_group g(spec_for("beat", -1, 3));
      pids = g.pids();
      shm = g.shm_name();
      std::this_thread::sleep_for(200ms);
    }
    for (int pid : pids) CHECK(!gmi_test::process_exists(pid));
    CHECK(gmi_test::children_of_this_process().empty());
    CHECK_FALSE(gmi_test::shm_exists(shm));
  }

  TEST_CASE("runtime.process.comm_between_four" * doctest::timeout(60)) {
    launch_spec spec = spec_for("comm", -1, 4, 2);
    spec.ring_capacity = 1u << 12;  // 4 KiB rings: the 200 KB messages stream through
    process_group g(std::move(spec));
    double s = 0;
    const run_report r = run_and_check(g, s);
    CHECK_MESSAGE(r.ok(), (r.ok() ? "" : r.first_failure->message));
  }

  TEST_CASE("runtime.process.peer_that_quit_is_a_comm_error" * doctest::timeout(30)) {
    process_group g(spec_for("quit_early", 1, 2));
    double s = 0;
    const run_report r = run_and_check(g, s);
    REQUIRE_FALSE(r.ok());
    CHECK(r.first_failure->message ==
          "GMI 0 (host, slice 0) exited with code 1: recv from GMI 1 in GMI 0 (host, slice 0): the peer finished "
          "without sending");
  }

  TEST_CASE("runtime.process.bad_program_is_one_error" * doctest::timeout(30)) {
    launch_spec spec = spec_for("ok", -1, 2);
    spec.program = "/nonexistent/gmi-worker";
    CHECK_THROWS_WITH_AS(process_group{std::move(spec)},
                         doctest::Contains("GMI program: got \"/nonexistent/gmi-worker\""), gmi::config_error);
    CHECK(gmi_test::children_of_this_process().empty());
  }
}

TEST_CASE("runtime.process.children_inherit_only_diagnosis_variables") {
  // Identity and the launcher's notes stay here; diagnosis goes to every GMI; former tuning variables are gone.
  ::setenv("GMI_IDENTITY", "3", 1);
  ::setenv("GMI_CHOSEN", "{}", 1);
  ::setenv("GMI_COMM_INBOX_MEMORY", "host", 1);
  ::setenv("GMI_HIER_HANDSHAKE", "host", 1);  // no longer a setting (a field of comm::hierarchical_options)
  ::setenv("GMI_TRACE", "1", 1);
  ::setenv("GMI_GIT_REVISION", "abc123", 1);
  ::setenv("GMI_PPO_GRADIENT", "threads", 1);  // now --ppo-gradient
  const gmi::runtime::env_list mine{{"GMI_IDENTITY", "0"}};
  const auto env = gmi::runtime::detail::child_environment({&mine});
  const auto has = [&](const std::string& kv) { return std::find(env.begin(), env.end(), kv) != env.end(); };
  CHECK(has("GMI_IDENTITY=0"));
  CHECK_FALSE(has("GMI_IDENTITY=3"));
  CHECK_FALSE(has("GMI_CHOSEN={}"));
  CHECK_FALSE(has("GMI_COMM_INBOX_MEMORY=host"));  // now --inbox-memory
  CHECK_FALSE(has("GMI_HIER_HANDSHAKE=host"));
  CHECK(has("GMI_TRACE=1"));
  CHECK(has("GMI_GIT_REVISION=abc123"));
  CHECK_FALSE(has("GMI_PPO_GRADIENT=threads"));
  for (const char* v : {"GMI_IDENTITY", "GMI_CHOSEN", "GMI_COMM_INBOX_MEMORY", "GMI_HIER_HANDSHAKE", "GMI_TRACE",
                        "GMI_GIT_REVISION", "GMI_PPO_GRADIENT"}) ::unsetenv(v);
}

TEST_CASE("runtime.process.driver_files_of_a_reaped_gmi_are_removed") {
  // cuda.shm.<n>.<pid in hex>.<k>: only the given pid's files go, whatever <n> and <k>; other names stay.
  CHECK(gmi::runtime::detail::driver_shm_file_of("cuda.shm.0.1a2b.1", 0x1a2b));
  CHECK(gmi::runtime::detail::driver_shm_file_of("cuda.shm.3.1a2b.12", 0x1a2b));
  CHECK_FALSE(gmi::runtime::detail::driver_shm_file_of("cuda.shm.0.1a2bc.1", 0x1a2b));
  CHECK_FALSE(gmi::runtime::detail::driver_shm_file_of("cuda.shm.0.11a2b.1", 0x1a2b));
  CHECK_FALSE(gmi::runtime::detail::driver_shm_file_of("gmi-0-1a2b", 0x1a2b));
  CHECK_FALSE(gmi::runtime::detail::driver_shm_file_of("cuda.shm.", 0x1a2b));
  char dir[] = "/tmp/gmi-driver-files-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string d = dir;
  for (const char* n : {"cuda.shm.0.1a2b.1", "cuda.shm.0.1a2b.2", "cuda.shm.0.1a2c.1", "other.1a2b.1"})
    std::ofstream(d + "/" + n) << "x";
  CHECK(gmi::runtime::detail::remove_driver_shm_files(0x1a2b, dir) == 2);
  CHECK_FALSE(std::filesystem::exists(d + "/cuda.shm.0.1a2b.1"));
  CHECK(std::filesystem::exists(d + "/cuda.shm.0.1a2c.1"));
  CHECK(std::filesystem::exists(d + "/other.1a2b.1"));
  CHECK(gmi::runtime::detail::remove_driver_shm_files(0x1a2b, "/nonexistent-gmi-dir") == 0);
  std::filesystem::remove_all(d);
}

// The run's segment and identity: environment round trip, segment names, stale segments of dead launchers
// removed at start while live ones stay.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gmi/runtime/identity.hpp>
#include <gmi/runtime/segment.hpp>

#include "runtime/helpers.hpp"

TEST_SUITE("cpu") {
  TEST_CASE("runtime.identity.env_round_trip") {
    gmi::runtime::identity id;
    id.rank = 3;
    id.world = 8;
    id.gpu = 1;
    id.slice = 1;
    id.local_device = 0;
    id.gpus = 2;
    id.gmis_per_gpu = 4;
    id.run_id = "123-abc";
    id.shm_name = "/gmi-0-123-abc";
    id.roles = {"env", "agent"};
    id.groups = {{0, 1, 2, 3}, {3, 7}, {4}};
    CHECK_FALSE(gmi::runtime::this_gmi().has_value());  // the test process is the launcher
    for (const auto& [k, v] : gmi::runtime::to_env(id)) setenv(k.c_str(), v.c_str(), 1);
    const auto back = gmi::runtime::this_gmi();
    for (const auto& [k, v] : gmi::runtime::to_env(id)) unsetenv(k.c_str());
    REQUIRE(back.has_value());
    CHECK(back->rank == 3);
    CHECK(back->world == 8);
    CHECK(back->gpus == 2);
    CHECK(back->gmis_per_gpu == 4);
    CHECK(back->gpu_index() == 0);
    CHECK(back->gpu == 1);
    CHECK(back->roles == id.roles);
    CHECK(back->groups == id.groups);
    CHECK(back->my_groups() == std::vector<int>{0, 1});
    CHECK(back->describe() == "GMI 3 (GPU 1, slice 1)");
    CHECK(back->has_role("agent"));
    CHECK_FALSE(gmi::runtime::this_gmi().has_value());
  }

  TEST_CASE("runtime.identity.malformed_env_is_a_config_error") {
    setenv("GMI_IDENTITY", "x", 1);
    CHECK_THROWS_WITH_AS((void)gmi::runtime::this_gmi(), "GMI_IDENTITY: got \"x\", need a JSON object set by the gmi launcher",
                         gmi::config_error);
    setenv("GMI_IDENTITY", R"({"rank": "three"})", 1);
    CHECK_THROWS_WITH_AS((void)gmi::runtime::this_gmi(), doctest::Contains("GMI_IDENTITY.rank: got"), gmi::config_error);
    unsetenv("GMI_IDENTITY");
  }

  TEST_CASE("runtime.segment.stale_segments_are_removed") {
    // A segment whose owner died without unlinking it (as a SIGKILLed launcher would), and one owned by us.
    const std::string stale_run = "stale-" + gmi::runtime::make_run_id();
    const pid_t dead = fork();
    if (dead == 0) {
      auto left = gmi::runtime::segment::create(stale_run, 2, 64);
      _exit(0);  // no destructor: the name stays behind
    }
    int st = 0;
    waitpid(dead, &st, 0);
    const std::string left_behind = "/" + gmi::comm::segment_name(stale_run);
    auto live = gmi::runtime::segment::create(gmi::runtime::make_run_id(), 2, 64);
    CHECK(gmi_test::shm_exists(left_behind));
    CHECK(gmi::runtime::remove_stale_segments() >= 1);
    CHECK_FALSE(gmi_test::shm_exists(left_behind));
    CHECK(gmi_test::shm_exists(live.name()));
  }

  TEST_CASE("runtime.segment.attach_checks") {
    CHECK_THROWS_AS((void)gmi::runtime::segment::attach("no-such-run", std::chrono::milliseconds(50)), gmi::comm_error);
    const std::string run = gmi::runtime::make_run_id();
    auto s = gmi::runtime::segment::create(run, 3, 1024);
    auto a = gmi::runtime::segment::attach(run);
    CHECK(a.world() == 3);
    CHECK(a.ring(0, 2).capacity() == 4);  // 1024 bytes: four slots of 256
    CHECK(s.name() == "/" + gmi::comm::segment_name(run));
    // One implementation of named segments: comm's sweep knows this one, a live owner's, and leaves it.
    (void)gmi::comm::cleanup_stale_segments();
    CHECK(gmi_test::shm_exists(s.name()));
    CHECK_THROWS_AS((void)gmi::runtime::segment::create("x", 2, 100), gmi::config_error);
  }
}

// Several GMIs of CPU actors: each GMI's actor cores are its own (disjoint, the requested count, NUMA nodes kept
// whole where they fit), and host GMIs train one policy synchronously (equal weights on every GMI, Cartpole
// learned within a step budget).
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <gmi/actors/cores.hpp>
#include <gmi/core/error.hpp>

#include "on_cpu_runs.hpp"

namespace ac = gmi::actors;

TEST_SUITE("cpu") {
  // Disjoint sets of the requested size out of the given cores, refusals in one line.
  TEST_CASE("actors.gmis.core_sets_disjoint_and_counted") {
    const std::vector<int> cores{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    for (int gmis = 1; gmis <= 5; ++gmis) {
      for (int per = 1; per * gmis <= 10; ++per) {
        const auto sets = ac::gmi_core_sets(gmis, per, cores);
        REQUIRE(int(sets.size()) == gmis);
        std::set<int> seen;
        for (const auto& s : sets) {
          CHECK(int(s.size()) == per);
          for (int c : s) {
            CHECK(std::find(cores.begin(), cores.end(), c) != cores.end());
            CHECK(seen.insert(c).second);  // no core in two sets
          }
        }
        CHECK(int(seen.size()) == gmis * per);
      }
    }
    // 0: an even share.
    const auto even = ac::gmi_core_sets(3, 0, cores);
    for (const auto& s : even) CHECK(s.size() == 3);
    CHECK_THROWS_WITH_AS((void)ac::gmi_core_sets(3, 4, cores), doctest::Contains("actor cores for 3 GMIs: got \"3 x 4\", need <= 10"),
                         gmi::config_error);
    CHECK_THROWS_WITH_AS((void)ac::gmi_core_sets(0, 1, cores), doctest::Contains("GMIs with CPU actors: got 0"),
                         gmi::config_error);
    CHECK_THROWS_WITH_AS((void)ac::gmi_core_sets(2, -1, cores), doctest::Contains("actor cores per GMI: got -1"),
                         gmi::config_error);
    // This machine's cores: one GMI a core.
    const auto mine = ac::available_cores();
    const auto one_each = ac::gmi_core_sets(int(mine.size()), 1);
    std::set<int> all;
    for (const auto& s : one_each) all.insert(s.at(0));
    CHECK(all == std::set<int>(mine.begin(), mine.end()));
  }

  // A set stays within one NUMA node when a node has room: checked on this machine's nodes (sysfs).
  TEST_CASE("actors.gmis.core_sets_keep_numa_nodes") {
    const auto mine = ac::available_cores();
    std::set<int> nodes;
    for (int c : mine) nodes.insert(ac::numa_node_of(c));
    int smallest = int(mine.size());
    for (int n : nodes) {
      smallest = std::min<int>(smallest, int(std::count_if(mine.begin(), mine.end(), [&](int c) { return ac::numa_node_of(c) == n; })));
    }
    const int gmis = int(nodes.size());
    const auto sets = ac::gmi_core_sets(gmis, smallest);
    for (const auto& s : sets) {
      std::set<int> on;
      for (int c : s) on.insert(ac::numa_node_of(c));
      CHECK(on.size() == 1);
    }
    MESSAGE("[gmi] " << nodes.size() << " NUMA node(s), " << mine.size() << " cores");
  }

  // Two host GMIs (one actor core each, disjoint) as one synchronous group: every GMI ends with the same weights,
  // and through gmi::train the group learns Cartpole (mean return >= 150) within 400 K env steps.
  TEST_CASE("actors.gmis.two_host_gmis_learn_cartpole_with_equal_weights" * doctest::timeout(560)) {
    if (ac::available_cores().size() < 2) {
      MESSAGE("[gmi] SKIPPED: two GMIs of one actor core each need 2 cores");
      return;
    }
    const auto d = train_cartpole_on_cpu_gmis(2, 64 * 16 * 2 * 10, std::numeric_limits<double>::quiet_NaN(), true);
    CAPTURE(d.error);
    REQUIRE(d.error.empty());
    REQUIRE(d.cores.size() == 2);
    CHECK(d.cores[0].size() == 1);
    CHECK(d.cores[1].size() == 1);
    CHECK(d.cores[0] != d.cores[1]);
    CHECK(d.iterations == 10);
    REQUIRE(d.weights.size() == 2);
    REQUIRE(!d.weights[0].empty());
    CHECK(d.weights[0] == d.weights[1]);

    const auto r = train_cartpole_on_cpu_gmis(2, 400e3, 150, false);
    CAPTURE(r.error);
    REQUIRE(r.error.empty());
    MESSAGE("[gmi] 2 host GMIs of CPU actors: " << r.reason << " after " << r.iterations << " iterations, "
                                                << r.env_steps << " env steps, mean return " << r.mean_return);
    CHECK(r.gmis == 2);
    CHECK(r.exit_code == 0);  // 1 when the GMIs' weights differ
    CHECK(r.reason == "solved");
    CHECK(r.mean_return >= 150);
  }

  // Host GMIs of CPU actors save and resume like the colocated layout: 5 iterations saved (a manifest and a file a
  // GMI, the actors' environments included), resumed to 10, end with the weights of 10 iterations straight, bit
  // for bit; the resumed run counts on from iteration 5 and its metrics lines start at iteration 6, the straight
  // run's at iteration 1, one a iteration (--log-interval 0).
  TEST_CASE("actors.gmis.host_gmis_checkpoint_resume_is_exact" * doctest::timeout(400)) {
    if (ac::available_cores().size() < 2) {
      MESSAGE("[gmi] SKIPPED: two GMIs of one actor core each need 2 cores");
      return;
    }
    const std::string dir = "/tmp/gmi-test-host-gmis-ck";
    const auto first = run_host_gmis(5, dir + "/five.ckpt", "", dir + "/five.jsonl");
    CAPTURE(first.error);
    REQUIRE(first.error.empty());
    CHECK(first.iterations == 5);
    CHECK(first.exit_code == 0);
    const auto resumed = run_host_gmis(10, dir + "/resumed.ckpt", dir + "/five.ckpt", dir + "/resumed.jsonl");
    CAPTURE(resumed.error);
    REQUIRE(resumed.error.empty());
    const auto straight = run_host_gmis(10, "", "", dir + "/straight.jsonl");
    CAPTURE(straight.error);
    REQUIRE(straight.error.empty());
    CHECK(resumed.resumed_at == 5);
    CHECK(resumed.iterations == 10);
    CHECK(straight.iterations == 10);
    CHECK(resumed.end_identical);
    CHECK(straight.end_identical);
    CHECK(first.first_metrics_iteration == 1);
    CHECK(straight.first_metrics_iteration == 1);
    CHECK(straight.metrics_lines == 10);
    CHECK(resumed.first_metrics_iteration == 6);
    CHECK(resumed.metrics_lines == 5);
    REQUIRE(!straight.end_hash.empty());
    CHECK(resumed.end_hash == straight.end_hash);
    CHECK(first.end_hash != straight.end_hash);
    // a checkpoint resumes on as many GMIs as saved it
    const auto other = run_host_gmis(10, "", dir + "/nonexistent.ckpt", dir + "/other.jsonl");
    CHECK(other.error.find("nonexistent.ckpt") != std::string::npos);
  }

  // --max-env-steps is the training's budget in total env steps, a resumed checkpoint's included, for one GMI as for
  // a group: one host GMI of 128 envs and 2 of 64 (2048 env steps an iteration either way) save at iteration 5,
  // resume with the same flags (--max-env-steps 20480) and both end at iteration 10 with 20480 env steps (one GMI
  // used to count from the resume and run to 15). Resumed with the limit the checkpoint is at, both end at once:
  // iteration 5, exit 0, step limit, no time trained.
  TEST_CASE("actors.gmis.resume_counts_env_steps_since_training_began_for_one_gmi_and_a_group" * doctest::timeout(400)) {
    if (ac::available_cores().size() < 2) {
      MESSAGE("[gmi] SKIPPED: two GMIs of one actor core each need 2 cores");
      return;
    }
    const std::string dir = "/tmp/gmi-test-resume-budget";
    for (const int gmis : {1, 2}) {
      CAPTURE(gmis);
      const std::string ck = dir + "/five" + std::to_string(gmis) + ".ckpt";
      const auto saved = run_resumable(gmis, 5 * 2048, ck, "", dir + "/saved.jsonl");
      CAPTURE(saved.error);
      REQUIRE(saved.error.empty());
      CHECK(saved.iterations == 5);
      CHECK(saved.resumed_at == 0);
      const auto resumed = run_resumable(gmis, 10 * 2048, "", ck, dir + "/resumed.jsonl");
      CAPTURE(resumed.error);
      REQUIRE(resumed.error.empty());
      CHECK(resumed.reason == "step limit");
      CHECK(resumed.exit_code == 0);
      CHECK(resumed.iterations == 10);
      CHECK(resumed.env_steps == 10 * 2048);
      CHECK(resumed.end_iteration == 10);
      CHECK(resumed.end_env_steps == 10 * 2048);
      CHECK(resumed.resumed_at == 5);
      const auto at_limit = run_resumable(gmis, 5 * 2048, "", ck, dir + "/at_limit.jsonl");
      CAPTURE(at_limit.error);
      REQUIRE(at_limit.error.empty());
      CHECK(at_limit.reason == "step limit");
      CHECK(at_limit.exit_code == 0);
      CHECK(at_limit.iterations == 5);
      CHECK(at_limit.env_steps == 5 * 2048);
      CHECK(at_limit.end_iteration == 5);
      CHECK(at_limit.resumed_at == 5);
      CHECK(at_limit.end_wall_s == 0);
    }
  }
}

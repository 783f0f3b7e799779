#include <doctest/doctest.h>

#include "advantage_window_runs.hpp"
#include "rel_diff.hpp"

using gmi_test::rel_diff;

TEST_SUITE("gpu") {
  // Advantages normalized over a window of 4 rollouts on the GPU against host threads (spring_chain, in phase):
  // after three iterations (the window's merge on the device, two of its updates, the graph replayed) the last
  // update's advantage mean and scale and the weights agree; the GPU's run differs from its run without a window
  // (the window is not ignored there).
  TEST_CASE("ppo_gpu.advantage_window.matches_host" * doctest::timeout(240)) {
    const auto host = advantage_window_iterations(false, 4, 3);
    const auto gpu = advantage_window_iterations(true, 4, 3);
    const auto own = advantage_window_iterations(true, 1, 3);
    REQUIRE(gpu.stats.size() == 2);
    CHECK(gpu.stats[0] == doctest::Approx(host.stats[0]).epsilon(1e-3));
    // stats[1] is 1 / std (about 1e-4 on spring_chain's costs): compared relatively (scale 0), since doctest's
    // default scale of 1 would make an absolute 1e-3 tolerance that any two such values meet.
    CHECK(gpu.stats[1] == doctest::Approx(host.stats[1]).epsilon(1e-3).scale(0));
    CHECK(rel_diff(gpu.params, host.params) < 1e-3);
    CHECK(own.stats[1] != doctest::Approx(gpu.stats[1]).epsilon(1e-2).scale(0));
    CHECK(rel_diff(own.params, gpu.params) > 1e-5);
  }
}

// The reason a synchronous group reports for its stop, from its GMIs' own (pipeline/stop_reason.hpp).
#include <doctest/doctest.h>

#include <gmi/pipeline/stop_reason.hpp>

TEST_CASE("pipeline.stop_reason.gmi_0_unless_it_only_followed") {
  // GMI 0's own reason wins.
  CHECK(gmi::group_stop_reason({"solved", "stopped", "time limit"}) == "solved");
  // GMI 0 followed GMI 2's vote (GMI 2's clock passed --max-seconds first): the voter's reason, not "stopped".
  CHECK(gmi::group_stop_reason({"stopped", "stopped", "time limit", "stopped"}) == "time limit");
  CHECK(gmi::group_stop_reason({"stopped", "signal 15", "time limit"}) == "signal 15");
  // Nobody voted for a cause (a teardown request): "stopped".
  CHECK(gmi::group_stop_reason({"stopped", "stopped"}) == "stopped");
  CHECK(gmi::group_stop_reason({}) == "stopped");
}

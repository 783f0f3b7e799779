// The paper's cost model: formulas, validity of RP-only, and the reported choice.
#include <doctest/doctest.h>

#include <gmi/comm/none.hpp>
#include <gmi/comm/plans.hpp>

namespace comm = gmi::comm;

static_assert(comm::communicator_policy<comm::none>);
static_assert(!comm::communicator_policy<int>);

TEST_SUITE("cpu") {
TEST_CASE("comm.plans.formulas") {
  const auto c = comm::plan_costs(4, 2, 1.0, 10.0);
  REQUIRE(c.size() == 2 + 2);
  CHECK(c[0].kind == comm::plan_kind::ip_only);
  CHECK(c[0].cost == doctest::Approx((8 - 1) / (2.0 * 3)));
  CHECK(c[1].kind == comm::plan_kind::rp_only);
  CHECK(c[1].valid);
  CHECK(c[1].cost == doctest::Approx(20.0));
  CHECK(c[2].k == 1);
  CHECK(c[2].cost == doctest::Approx((1.0 / 4 + 2 - 1) * 1.0 + 10.0));
  CHECK(c[3].cost == doctest::Approx((2.0 / 4 + 0) * 1.0 + 10.0));
}

TEST_CASE("comm.plans.rp_only_invalid_when_more_gmis_than_gpus") {
  const auto choice = comm::choose_plan(2, 4, 100.0, 0.001);
  for (const auto& p : choice.candidates) {
    if (p.kind == comm::plan_kind::rp_only) CHECK_FALSE(p.valid);
  }
  CHECK(choice.kind == comm::plan_kind::ip_only);  // hybrid(k=4) = 2 * cost_ip > IP-only's 7/4 * cost_ip
  CHECK(choice.reason.find("rp_only invalid") != std::string::npos);
}

TEST_CASE("comm.plans.choice_follows_the_costs") {
  CHECK(comm::choose_plan(8, 4, 1e-6, 1.0).kind == comm::plan_kind::ip_only);
  CHECK(comm::choose_plan(8, 4, 1.0, 1e-3).kind == comm::plan_kind::rp_only);
  const auto h = comm::choose_plan(8, 2, 1.0, 0.3);  // hybrid(2) = 0.25 + 0.3 < RP-only 0.6 < IP-only 15/14
  CHECK(h.kind == comm::plan_kind::hybrid);
  CHECK(h.k == 2);
  CHECK(h.cost == doctest::Approx(0.55));
  CHECK(comm::choose_plan(1, 8, 1.0, 1.0).kind == comm::plan_kind::ip_only);  // one GPU: no rings to use
  const auto c = comm::choose_plan(4, 2, 1.0, 10.0);
  CHECK(c.reason.find("ip_only") != std::string::npos);
  CHECK(c.reason.find("next") != std::string::npos);
  CHECK_THROWS_AS(comm::choose_plan(0, 1, 1, 1), gmi::config_error);
  CHECK_THROWS_AS(comm::choose_plan(1, 1, -1, 1), gmi::config_error);
}
}

// Topology discovery: this machine (host-only without a driver, with the reason), JSON round trip.
#include <doctest/doctest.h>

#include <string>

#include <gmi/cuda/device.hpp>
#include <gmi/plan/topology.hpp>

#include "plan/synthetic.hpp"

namespace plan = gmi::plan;

TEST_SUITE("cpu") {
TEST_CASE("plan.topology.discover_never_throws_and_says_why_without_gpus") {
  const plan::topology t = plan::discover();
  CHECK_FALSE(t.cpu_cores.empty());
  CHECK_FALSE(t.host.empty());
  const auto n = gmi::cuda::device_count();
  if (!n) {
    MESSAGE("no GPU here: " << n.error().message());
    CHECK(t.host_only());
    CHECK(t.reason == n.error().message());  // "no NVIDIA driver: ..." or "no CUDA device visible ..."
    CHECK_FALSE(t.reason.empty());
    CHECK(t.links.empty());
    CHECK(plan::describe(t) == "host only, " + std::to_string(t.cpu_cores.size()) + " cores (" + t.reason + ")");
  } else {
    MESSAGE("GPUs here: " << plan::describe(t));
    CHECK_FALSE(t.host_only());
    CHECK(t.reason.empty());
    CHECK(static_cast<int>(t.gpus.size()) == *n);
    CHECK(t.links.size() == t.gpus.size() * (t.gpus.size() - 1) / 2);
    for (const auto& g : t.gpus) {
      CHECK_FALSE(g.name.empty());
      CHECK(g.sm_count > 0);
      CHECK(g.memory_bytes > 0);
      CHECK(g.uuid.rfind("GPU-", 0) == 0);
    }
  }
  const auto back = nlohmann::json(t).get<plan::topology>();
  CHECK(nlohmann::json(back) == nlohmann::json(t));
}

TEST_CASE("plan.topology.json_round_trip") {
  plan::topology t = gmi_test::fake_topology(2, 80 * gmi_test::GiB);
  t.gpus[1].cc_minor = 0;
  t.gpus[1].mig_enabled = true;
  t.gpus[1].mig.push_back({"MIG-abc", 1, 0, 16, 10240});
  t.links[0].kind = plan::link_kind::pcie;
  t.links[0].pcie_path = "PHB";
  const nlohmann::json j = t;
  CHECK(j.at("gpus")[0].at("compute_capability") == "9.0");
  CHECK(j.at("links")[0].at("kind") == "pcie");
  const auto back = j.get<plan::topology>();
  CHECK(nlohmann::json(back) == j);
  CHECK(back.gpus[1].mig.at(0).uuid == "MIG-abc");
  CHECK(back.link(1, 0) == &back.links[0]);
  CHECK(plan::describe(t) == "2 x NVIDIA H100 80GB HBM3 (80.0 GiB), 0 of 1 GPU pairs over NVLink, 4 cores");
  const auto host = plan::host_only("no NVIDIA driver: test");
  CHECK(host.host_only());
  CHECK(nlohmann::json(host).get<plan::topology>().reason == "no NVIDIA driver: test");
}
}

// cpu_cores: disjoint core sets, and thread GMIs pinned to them running exec::host work under the supervisor.
#include <doctest/doctest.h>

#include <sched.h>

#include <atomic>
#include <set>
#include <vector>

#include <gmi/exec/host.hpp>
#include <gmi/partition/cpu_cores.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace gp = gmi::partition;

TEST_SUITE("cpu") {
  TEST_CASE("partition.cpu_cores.core_sets_are_disjoint") {
    const auto sets = gp::cpu_cores::core_sets({3, {0, 1, 2, 3, 4, 5, 6}});
    REQUIRE(sets.size() == 3);
    CHECK(sets[0] == std::vector<int>{0, 1, 2});
    CHECK(sets[1] == std::vector<int>{3, 4});
    CHECK(sets[2] == std::vector<int>{5, 6});
    CHECK_THROWS_AS((void)gp::cpu_cores::core_sets({8, {0, 1}}), gmi::config_error);
  }

  TEST_CASE("partition.cpu_cores.thread_gmis_on_their_cores" * doctest::timeout(30)) {
    const int n = static_cast<int>(std::min<std::size_t>(2, gp::cpu_cores::available_cores().size()));
    const auto sets = gp::cpu_cores::core_sets({n, {}});
    std::vector<std::atomic<int>> sums(static_cast<std::size_t>(n));
    std::vector<std::atomic<bool>> on_own_cores(static_cast<std::size_t>(n));
    auto spec = gmi::runtime::launch_spec::uniform(0, n);
    gmi::runtime::thread_group g(spec, [&](gmi::runtime::context& ctx) {
      gp::cpu_cores::binding cores(sets[static_cast<std::size_t>(ctx.slice())]);
      std::atomic<int> sum{0};
      std::atomic<bool> inside{true};
      gmi::exec::for_each(cores.policy(), 10'000, [&](std::size_t i) {
        sum += static_cast<int>(i % 7);
        const int cpu = sched_getcpu();
        bool found = false;
        for (int c : cores.cores()) found = found || c == cpu;
        if (!found) inside = false;
      });
      ctx.heartbeat();
      sums[static_cast<std::size_t>(ctx.rank())] = sum.load();
      on_own_cores[static_cast<std::size_t>(ctx.rank())] = inside.load();
      std::vector<int> total{sum.load()};
      ctx.allreduce(total, ctx.all());
      if (total[0] != n * sum.load()) throw std::runtime_error("allreduce across core sets");
    });
    const auto r = g.wait();
    CHECK_MESSAGE(r.ok(), (r.ok() ? "" : r.first_failure->message));
    int expect = 0;
    for (int i = 0; i < 10'000; ++i) expect += i % 7;
    for (int i = 0; i < n; ++i) {
      CHECK(sums[static_cast<std::size_t>(i)] == expect);
      CHECK(on_own_cores[static_cast<std::size_t>(i)]);
    }
  }
}

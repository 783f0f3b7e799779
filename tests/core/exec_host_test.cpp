#include <doctest/doctest.h>

#include <gmi/exec/host.hpp>

#include <atomic>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <vector>

TEST_SUITE("cpu") {
  TEST_CASE("exec.host.for_each_visits_every_index_once") {
    for (std::size_t n : {0u, 1u, 255u, 256u, 1000u, 100003u}) {
      std::vector<std::atomic<int>> hits(n);
      gmi::exec::for_each(gmi::exec::host{}, n, [&](std::size_t i) { hits[i].fetch_add(1); });
      for (std::size_t i = 0; i < n; ++i) REQUIRE(hits[i].load() == 1);
    }
  }

  TEST_CASE("exec.host.result_independent_of_thread_count") {
    const std::size_t n = 50000;
    std::vector<double> one(n), many(n);
    auto work = [](std::vector<double>& out) { return [&out](std::size_t i) { out[i] = double(i) * 0.5 + 1; }; };
    gmi::exec::for_each(gmi::exec::host{.threads = 1}, n, work(one));
    gmi::exec::for_each(gmi::exec::host{.threads = 8}, n, work(many));
    CHECK(one == many);
  }

  TEST_CASE("exec.host.own_pool_and_exceptions") {
    auto pool = std::make_shared<gmi::exec::detail::thread_pool>(3);
    CHECK(pool->concurrency() == 4);
    gmi::exec::host p{.threads = 0, .pool = pool};
    std::atomic<long> sum{0};
    gmi::exec::for_each(p, 10000, [&](std::size_t i) { sum += static_cast<long>(i); });
    CHECK(sum.load() == 10000L * 9999 / 2);
    CHECK_THROWS_AS(gmi::exec::for_each(p, 10000,
                                        [&](std::size_t i) {
                                          if (i == 7777) throw std::runtime_error("boom");
                                        }),
                    std::runtime_error);
    // The pool is still usable after a failed job.
    sum = 0;
    gmi::exec::for_each(p, 1000, [&](std::size_t) { sum += 1; });
    CHECK(sum.load() == 1000);
  }
}

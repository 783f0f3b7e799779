// exec::cuda for_each visits every index of [0, n) exactly once, across block and grid boundaries.
#include <doctest/doctest.h>

#include <cstddef>

#include "core_gpu/kernels.hpp"

TEST_SUITE("gpu") {
  TEST_CASE("exec.cuda.for_each_visits_every_index_once" * doctest::timeout(60)) {
    for (std::size_t n : {std::size_t{1}, std::size_t{255}, std::size_t{256}, std::size_t{1'000'003}}) {
      CAPTURE(n);
      const auto visits = gmi_test::for_each_visits(n);
      REQUIRE(visits.size() == n);
      std::size_t wrong = 0;
      for (int v : visits) wrong += v != 1;
      CHECK(wrong == 0);
    }
  }
}

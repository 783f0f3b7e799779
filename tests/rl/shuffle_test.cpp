#include <doctest/doctest.h>

#include <gmi/rl/shuffle.hpp>

#include <vector>

TEST_SUITE("cpu") {
  TEST_CASE("rl.shuffle.is_a_permutation_for_any_size") {
    for (std::uint32_t n : {1u, 2u, 3u, 7u, 100u, 1000u, 8192u, 65537u}) {
      gmi::rl::feistel_permutation p(n, 42, 3);
      std::vector<int> seen(n, 0);
      for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t j = p(i);
        REQUIRE(j < n);
        seen[j] += 1;
      }
      for (std::uint32_t j = 0; j < n; ++j) REQUIRE(seen[j] == 1);
    }
  }

  TEST_CASE("rl.shuffle.depends_on_seed_and_round") {
    const std::uint32_t n = 4096;
    gmi::rl::feistel_permutation a(n, 1, 0), b(n, 1, 1), c(n, 2, 0), a2(n, 1, 0);
    int same_ab = 0, same_ac = 0, fixed = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      CHECK(a(i) == a2(i));
      same_ab += a(i) == b(i);
      same_ac += a(i) == c(i);
      fixed += a(i) == i;
    }
    CHECK(same_ab < 40);
    CHECK(same_ac < 40);
    CHECK(fixed < 40);
  }
}

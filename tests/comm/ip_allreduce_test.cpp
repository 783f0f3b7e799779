// The CPU-staged IP allreduce with real processes: sums against a reference, sizes and dtypes that differ
// across ranks, and a rank killed in the middle.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include <gmi/comm/ip_allreduce.hpp>

#include "fork_util.hpp"

using namespace std::chrono_literals;
namespace comm = gmi::comm;

namespace {
float value(int rank, std::size_t i, int round) { return static_cast<float>((rank + 1) * 0.5 + (i % 97) + round); }
}  // namespace

TEST_SUITE("cpu") {
TEST_CASE("comm.ip_allreduce.sums_across_processes" * doctest::timeout(60)) {
  for (int ranks : {1, 2, 3, 5}) {
    CAPTURE(ranks);
    const auto tag = comm::unique_tag("ip");
    const std::vector<std::size_t> sizes{1, 3, 4, 1000, 1 << 16, (1 << 18) + 3};
    auto group = comm::ip_allreduce::create(tag, ranks, sizes.back() * sizeof(float));
    auto run = [&](comm::ip_allreduce& g) {
      int wrong = 0;
      for (int round = 0; round < 3; ++round) {
        for (std::size_t n : sizes) {
          std::vector<float> data(n);
          for (std::size_t i = 0; i < n; ++i) data[i] = value(g.rank(), i, round);
          g.allreduce<float>(data, 10s);
          for (std::size_t i = 0; i < n; ++i) {
            double want = 0;
            for (int r = 0; r < ranks; ++r) want += value(r, i, round);
            wrong += std::fabs(data[i] - want) > 1e-3 * std::fabs(want);
          }
        }
      }
      return wrong;
    };
    std::vector<pid_t> kids;
    for (int r = 1; r < ranks; ++r) {
      kids.push_back(gmi_test::fork_child([&, r] {
        auto g = comm::ip_allreduce::open(tag, r, 5s);
        return run(g) == 0 ? 0 : 3;
      }));
    }
    CHECK(run(group) == 0);
    for (pid_t k : kids) CHECK(gmi_test::reap(k) == 0);
  }
}

TEST_CASE("comm.ip_allreduce.mismatched_sizes_and_dtypes_fail_on_every_rank" * doctest::timeout(30)) {
  SUBCASE("sizes") {
    const auto tag = comm::unique_tag("ipsz");
    auto group = comm::ip_allreduce::create(tag, 2, 4096);
    const pid_t kid = gmi_test::fork_child([&] {
      auto g = comm::ip_allreduce::open(tag, 1, 5s);
      std::vector<float> d(11);
      try {
        g.allreduce<float>(d, 10s);
      } catch (const gmi::comm_error& e) {
        return std::string(e.what()).find("11 x f32") != std::string::npos ? 0 : 4;
      }
      return 5;
    });
    std::vector<float> d(10);
    CHECK_THROWS_WITH_AS(group.allreduce<float>(d, 10s), doctest::Contains("11 x f32"), gmi::comm_error);
    CHECK(gmi_test::reap(kid) == 0);
  }
  SUBCASE("dtypes") {
    const auto tag = comm::unique_tag("ipdt");
    auto group = comm::ip_allreduce::create(tag, 2, 4096);
    const pid_t kid = gmi_test::fork_child([&] {
      auto g = comm::ip_allreduce::open(tag, 1, 5s);
      std::vector<double> d(8);
      try {
        g.allreduce<double>(d, 10s);
      } catch (const gmi::comm_error&) {
        return 0;
      }
      return 5;
    });
    std::vector<float> d(8);
    CHECK_THROWS_WITH_AS(group.allreduce<float>(d, 10s), doctest::Contains("f64"), gmi::comm_error);
    CHECK(gmi_test::reap(kid) == 0);
  }
}

TEST_CASE("comm.ip_allreduce.rank_killed_mid_collective" * doctest::timeout(30)) {
  const auto tag = comm::unique_tag("ipkill");
  auto group = comm::ip_allreduce::create(tag, 3, 1 << 20);
  const pid_t survivor = gmi_test::fork_child([&] {
    auto g = comm::ip_allreduce::open(tag, 1, 5s);
    std::vector<float> d(1000, 1.f);
    try {
      for (;;) g.allreduce<float>(d, 20s);
    } catch (const gmi::comm_error& e) {
      return std::string(e.what()).find("died") != std::string::npos ? 0 : 4;
    }
  });
  const pid_t victim = gmi_test::fork_child([&] {
    auto g = comm::ip_allreduce::open(tag, 2, 5s);
    std::vector<float> d(1000, 1.f);
    for (int i = 0; i < 5; ++i) g.allreduce<float>(d, 20s);
    ::pause();  // stops taking part, then gets killed
    return 0;
  });
  std::vector<float> d(1000, 1.f);
  for (int i = 0; i < 5; ++i) group.allreduce<float>(d, 20s);
  ::kill(victim, SIGKILL);
  CHECK(gmi_test::reap(victim) == -SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(group.allreduce<float>(d, 20s), doctest::Contains("died"), gmi::comm_error);
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  CHECK(gmi_test::reap(survivor) == 0);
}
}

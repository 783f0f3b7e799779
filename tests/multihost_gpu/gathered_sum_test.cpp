// comm/gathered_sum.cuh on 2 GPUs: the rows' sum in rank order is the host's pairwise tree, bit for bit; two
// ranks summing through the allgather get the same bits as each other and as NCCL's allreduce (a + b), eagerly
// and replayed in a CUDA graph (how a cross-host run's update uses it, --cross-host-sum allgather), and so do the
// rows gathered by sends and receives (--cross-host-sum direct). On 4 GPUs comm/two_level_sum.cuh and the direct
// gather over 4 ranks too (--cross-host-sum two_level, direct).
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "gathered_sum_kernels.hpp"

namespace {
// host_sum's tree: neighbours at distance 1, then 2, 4, ... (float additions, as the kernel does them)
float tree(std::vector<float> v) {
  for (std::size_t step = 1; step < v.size(); step *= 2) {
    for (std::size_t r = 0; r + step < v.size(); r += 2 * step) v[r] += v[r + step];
  }
  return v[0];
}
std::vector<float> values(std::size_t n, unsigned seed) {
  std::vector<float> v(n);
  unsigned x = seed * 2654435761u + 1;
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(static_cast<int>(x >> 8) - (1 << 23)) * 1e-7f;  // mixed signs and magnitudes
  }
  return v;
}
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
}  // namespace

TEST_SUITE("multigpu") {
TEST_CASE("multihost_gpu.gathered_sum.kernel_is_the_host_tree") {
  for (int n : {1, 2, 3, 5, 8, 13}) {
    for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{300001}}) {
      CAPTURE(n);
      CAPTURE(count);
      const std::vector<float> rows = values(static_cast<std::size_t>(n) * count, static_cast<unsigned>(n * 7 + count));
      const std::vector<float> got = gmi_test::gathered_sum_kernel(rows, n, count);
      std::vector<float> want(count);
      for (std::size_t i = 0; i < count; ++i) {
        std::vector<float> column(static_cast<std::size_t>(n));
        for (int r = 0; r < n; ++r) column[static_cast<std::size_t>(r)] = rows[static_cast<std::size_t>(r) * count + i];
        want[i] = tree(column);
      }
      CHECK(same_bits(got, want));
    }
  }
}

// 2 hosts x 2 GPUs on 4 GPUs of one process: the direct gather and the two-level sum give every rank the bits of
// the one-level allgather over all 4 ((r0 + r1) + (r2 + r3)), eagerly and replayed in a CUDA graph. Fewer than 4
// GPUs: says so and checks nothing (bench/multihost/device_hosts.sh runs it on 4).
TEST_CASE("multihost_gpu.two_level.matches_the_one_level_allgather" * doctest::timeout(60)) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 4) {
    MESSAGE("multihost_gpu.two_level: needs 4 GPUs, found " << devices << "; not checked");
    return;
  }
  for (std::size_t count : {std::size_t{7}, std::size_t{1289}, std::size_t{65537}}) {
    CAPTURE(count);
    std::vector<float> first[4], second[4];
    for (unsigned r = 0; r < 4; ++r) {
      first[r] = values(count, 10 + r);
      second[r] = values(count, 20 + r);
    }
    const gmi_test::four_rank_sums s = gmi_test::four_rank_sums_of(first, second);
    REQUIRE_MESSAGE(s.error.empty(), s.error);
    std::vector<float> want(count), want_second(count);
    for (std::size_t i = 0; i < count; ++i) {
      want[i] = tree({first[0][i], first[1][i], first[2][i], first[3][i]});
      want_second[i] = tree({second[0][i], second[1][i], second[2][i], second[3][i]});
    }
    for (int r = 0; r < 4; ++r) {
      CAPTURE(r);
      CHECK(same_bits(s.gathered[r], want));
      CHECK(same_bits(s.direct[r], want));
      CHECK(same_bits(s.direct_replayed[r], want_second));
      CHECK(same_bits(s.two_level[r], want));
      CHECK(same_bits(s.replayed[r], want_second));
    }
  }
}

TEST_CASE("multihost_gpu.gathered_sum.two_ranks_match_nccl_allreduce" * doctest::timeout(60)) {
  for (std::size_t count : {std::size_t{7}, std::size_t{1289}, std::size_t{65537}}) {
    CAPTURE(count);
    const std::vector<float> first[2] = {values(count, 1), values(count, 2)};
    const std::vector<float> second[2] = {values(count, 3), values(count, 4)};
    const gmi_test::two_rank_sums s = gmi_test::two_rank_sums_of(first, second);
    REQUIRE_MESSAGE(s.error.empty(), s.error);
    std::vector<float> want(count), want_second(count);
    for (std::size_t i = 0; i < count; ++i) {
      want[i] = first[0][i] + first[1][i];
      want_second[i] = second[0][i] + second[1][i];
    }
    for (int r : {0, 1}) {
      CAPTURE(r);
      CHECK(same_bits(s.gathered[r], want));
      CHECK(same_bits(s.allreduce[r], s.gathered[r]));  // a + b: NCCL's allreduce of two ranks, the same bits
      CHECK(same_bits(s.replayed[r], want_second));     // the captured allgather and sum, replayed on new values
      CHECK(same_bits(s.direct[r], want));              // the rows through sends and receives (--cross-host-sum direct)
      CHECK(same_bits(s.direct_replayed[r], want_second));
    }
  }
}
}

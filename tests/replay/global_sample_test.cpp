// Global prioritized sampling over shards (replay/global_sample.hpp): item frequencies against priority / the sum of
// every shard's total (chi-square, and far off against per-shard-uniform and item-uniform draws), a shard with
// nothing in it never drawn, importance weights from the global probability, uniform draws over all items, and
// bad calls refused with one line; the same shards as two GPUs' groups (gpu_groups.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/replay/global_sample.hpp>
#include <gmi/replay/gpu_groups.hpp>
#include <gmi/replay/replay.hpp>

#include "replay/support.hpp"

using namespace gmi::replay;
using replay_test::rollout_data;

namespace {

// A table of one-step items with the given priorities (none inserted when empty).
struct shard_table {
  host_table table;
  shard_table(const std::vector<float>& priorities, std::size_t capacity) : table(replay_test::small_spec(capacity)) {
    if (priorities.empty()) return;
    auto w = table.make_writer(priorities.size());
    rollout_data d(1, priorities.size());
    d.priorities = priorities;
    rollout r;
    for (const auto& c : d.cols) r.columns.push_back(c.data());
    r.horizon = 1;
    r.envs = d.envs;
    r.priorities = d.priorities.data();
    table.insert(w, r);
  }
};

// Shard k's priorities: shard totals far apart (shard 2 empty), items within a shard far apart.
std::vector<float> priorities_of(int shard, int items) {
  if (shard == 2) return {};
  std::vector<float> p(static_cast<std::size_t>(items));
  for (int i = 0; i < items; ++i) p[std::size_t(i)] = float(1 + (i * 5 + shard) % 9) * float(1 + 3 * shard);
  return p;
}

struct fixture {
  static constexpr int shards = 4, items = 12;
  std::vector<std::unique_ptr<shard_table>> tables;
  std::vector<host_table*> ptrs;
  double sum = 0;
  fixture() {
    for (int k = 0; k < shards; ++k) {
      const auto p = priorities_of(k, items);
      for (float x : p) sum += x;
      tables.push_back(std::make_unique<shard_table>(p, std::size_t(items)));
      ptrs.push_back(&tables.back()->table);
    }
  }
  // Expected probability of (shard, item) in a flat index shard * items + item.
  [[nodiscard]] std::vector<double> expected() const {
    std::vector<double> e(std::size_t(shards * items), 0.0);
    for (int k = 0; k < shards; ++k) {
      const auto p = priorities_of(k, items);
      for (std::size_t i = 0; i < p.size(); ++i) e[std::size_t(k * items) + i] = double(p[i]) / sum;
    }
    return e;
  }
};

// The one-line message a call is refused with ("no error" when it is not).
template <class F>
std::string message(F call) {
  try {
    call();
  } catch (const gmi::config_error& e) {
    return std::string(e.what());
  }
  return std::string("no error");
}

}  // namespace

TEST_CASE("replay.global_sample.prioritized_frequencies") {
  fixture f;
  const auto expected = f.expected();
  std::vector<double> counts(expected.size(), 0.0);
  global_draws d;
  const std::size_t n = 4096, rounds = 40;
  for (std::uint64_t r = 0; r < rounds; ++r) {
    draw_global(f.ptrs, sampler::prioritized(), n, 1000 + r, 0.5, d);
    REQUIRE(d.shard.size() == n);
    for (std::size_t b = 0; b < n; ++b) {
      REQUIRE(d.shard[b] >= 0);
      REQUIRE(d.shard[b] != 2);  // the empty shard is never drawn
      REQUIRE(d.keys[b] >= 0);
      REQUIRE(d.keys[b] < fixture::items);
      const std::size_t flat = std::size_t(d.shard[b] * fixture::items + d.keys[b]);
      counts[flat] += 1;
      CHECK(d.probability[b] == doctest::Approx(expected[flat]).epsilon(1e-12));
    }
  }
  CHECK(d.totals[2] == 0.0);
  CHECK(d.totals[0] + d.totals[1] + d.totals[3] == doctest::Approx(f.sum).epsilon(1e-12));
  // Only non-empty cells count as degrees of freedom.
  const double df = double(3 * fixture::items - 1);
  const double x = replay_test::chi2(counts, expected, double(n * rounds));
  MESSAGE("chi-square " << x << " (critical " << replay_test::chi2_critical(df) << ")");
  CHECK(x < replay_test::chi2_critical(df));
  // The test can fail: a draw that gives every non-empty shard the same share (per-shard sampling without the
  // totals) or every item the same chance is far off.
  std::vector<double> per_shard(expected.size(), 0.0), flat_items(expected.size(), 0.0);
  for (int k : {0, 1, 3}) {
    const auto p = priorities_of(k, fixture::items);
    double t = 0;
    for (float v : p) t += v;
    for (int i = 0; i < fixture::items; ++i) {
      per_shard[std::size_t(k * fixture::items + i)] = double(p[std::size_t(i)]) / t / 3.0;
      flat_items[std::size_t(k * fixture::items + i)] = 1.0 / double(3 * fixture::items);
    }
  }
  CHECK(replay_test::chi2(counts, per_shard, double(n * rounds)) > 10 * replay_test::chi2_critical(df));
  CHECK(replay_test::chi2(counts, flat_items, double(n * rounds)) > 10 * replay_test::chi2_critical(df));
}

TEST_CASE("replay.global_sample.importance_weights") {
  fixture f;
  global_draws d;
  for (double beta : {0.0, 0.4, 1.0}) {
    draw_global(f.ptrs, sampler::prioritized(), 2048, 9, beta, d);
    double p_min = 1.0, w_max = 0.0;
    for (double p : d.probability) p_min = std::min(p_min, p);
    for (std::size_t b = 0; b < d.weight.size(); ++b) {
      // (N p)^-beta over the batch's largest: N cancels, leaving (p_min / p)^beta.
      const double want = std::pow(p_min / d.probability[b], beta);
      CHECK(double(d.weight[b]) == doctest::Approx(want).epsilon(1e-6));
      CHECK(d.weight[b] <= 1.0f);
      w_max = std::max(w_max, double(d.weight[b]));
    }
    CHECK(w_max == 1.0);
    if (beta == 0.0) {
      for (float w : d.weight) CHECK(w == 1.0f);
    }
  }
  // Same seed, same draws.
  global_draws again;
  draw_global(f.ptrs, sampler::prioritized(), 2048, 9, 1.0, again);
  CHECK(again.keys == d.keys);
  CHECK(again.shard == d.shard);
}

TEST_CASE("replay.global_sample.uniform_over_all_items") {
  fixture f;
  std::vector<double> counts(std::size_t(fixture::shards * fixture::items), 0.0), expected(counts.size(), 0.0);
  for (int k : {0, 1, 3})
    for (int i = 0; i < fixture::items; ++i) expected[std::size_t(k * fixture::items + i)] = 1.0 / 36.0;
  global_draws d;
  const std::size_t n = 4096, rounds = 20;
  for (std::uint64_t r = 0; r < rounds; ++r) {
    draw_global(f.ptrs, sampler::uniform(), n, 50 + r, 1.0, d);
    for (std::size_t b = 0; b < n; ++b) {
      counts[std::size_t(d.shard[b] * fixture::items + d.keys[b])] += 1;
      CHECK(d.probability[b] == doctest::Approx(1.0 / 36.0).epsilon(1e-12));
      CHECK(d.weight[b] == doctest::Approx(1.0f));
    }
  }
  CHECK(replay_test::chi2(counts, expected, double(n * rounds)) < replay_test::chi2_critical(35));
}

TEST_CASE("replay.global_sample.refusals") {
  fixture f;
  global_draws d;
  CHECK(message([&] { draw_global(f.ptrs, sampler::fifo(), 8, 1, 0.5, d); }) ==
        "global sample sampler: got \"fifo\", need uniform or prioritized");
  CHECK(message([&] { draw_global(f.ptrs, sampler::prioritized(), 8, 1, 1.5, d); }) ==
        "global sample beta (importance exponent): got 1.5, need 0 .. 1");
  CHECK(message([&] { draw_global(std::span<host_table* const>{}, sampler::prioritized(), 8, 1, 0.5, d); }) ==
        "global sample shards: got 0, need 1 .. 256");
  CHECK(message([&] { draw_global(f.ptrs, sampler::prioritized(), 0, 1, 0.5, d); }) ==
        "global sample items: got 0, need 1 .. 16777216");
  shard_table empty({}, 8);
  std::vector<host_table*> none{&empty.table};
  CHECK(message([&] { draw_global(none, sampler::prioritized(), 8, 1, 0.5, d); }) ==
        "global prioritized sample: total weight: got 0, need > 0 (an item with priority > 0 in some shard)");
}

// The same shards as two GPUs' groups (gpu_groups.hpp, the host twin of multi_gpu_shard_set): GPU 0 holds shards 0
// and 1, GPU 1 shards 2 (empty) and 3. Item frequencies against priority / the sum (chi-square), and far off against
// an even share per GPU; each round's shares add up to n and GPU 0's share over all rounds against its total / sum
// (chi-square, one degree of freedom); the weights from the smallest probability of both GPUs' draws.
TEST_CASE("replay.gpu_groups.prioritized_frequencies_and_shares") {
  fixture f;
  const std::vector<std::vector<host_table*>> groups{{f.ptrs[0], f.ptrs[1]}, {f.ptrs[2], f.ptrs[3]}};
  const auto expected = f.expected();
  double t0 = 0.0;
  for (int k : {0, 1})
    for (float p : priorities_of(k, fixture::items)) t0 += p;
  std::vector<double> counts(expected.size(), 0.0);
  double share0 = 0.0;
  global_draws d;
  const std::size_t n = 4096, rounds = 40;
  for (std::uint64_t r = 0; r < rounds; ++r) {
    const group_plan plan = draw_over_groups(groups, sampler::prioritized(), n, 700 + r, 0.4, d);
    REQUIRE(plan.shares.size() == 2);
    REQUIRE(plan.shares[0] + plan.shares[1] == n);
    REQUIRE(d.shard.size() == n);
    CHECK(plan.totals[0] == doctest::Approx(t0).epsilon(1e-12));
    CHECK(plan.sum == doctest::Approx(f.sum).epsilon(1e-12));
    share0 += double(plan.shares[0]);
    double p_min = 1.0;
    for (double p : d.probability) p_min = std::min(p_min, p);
    for (std::size_t b = 0; b < n; ++b) {
      REQUIRE(d.shard[b] >= 0);
      REQUIRE(d.shard[b] != 2);
      REQUIRE((d.shard[b] < 2) == (b < plan.shares[0]));  // group-major: GPU 0's draws first
      const std::size_t flat = std::size_t(d.shard[b] * fixture::items + d.keys[b]);
      counts[flat] += 1;
      CHECK(d.probability[b] == doctest::Approx(expected[flat]).epsilon(1e-12));
      CHECK(double(d.weight[b]) == doctest::Approx(std::pow(p_min / d.probability[b], 0.4)).epsilon(1e-6));
    }
  }
  const double df = double(3 * fixture::items - 1);
  const double x = replay_test::chi2(counts, expected, double(n * rounds));
  MESSAGE("chi-square " << x << " (critical " << replay_test::chi2_critical(df) << ")");
  CHECK(x < replay_test::chi2_critical(df));
  const double total = double(n * rounds), e0 = total * t0 / f.sum, e1 = total - e0;
  const double xs = (share0 - e0) * (share0 - e0) / e0 + (total - share0 - e1) * (total - share0 - e1) / e1;
  MESSAGE("GPU 0's share " << share0 / total << " against " << t0 / f.sum << ", chi-square " << xs);
  CHECK(xs < replay_test::chi2_critical(1));
  // The test can fail: half the draws to each GPU, drawn there by priority, is far off.
  std::vector<double> even(expected.size(), 0.0);
  const double t1 = f.sum - t0;
  for (std::size_t i = 0; i < expected.size(); ++i)
    even[i] = expected[i] * f.sum / (i < std::size_t(2 * fixture::items) ? t0 : t1) / 2.0;
  CHECK(replay_test::chi2(counts, even, total) > 10 * replay_test::chi2_critical(df));
}

TEST_CASE("replay.gpu_groups.refusals") {
  fixture f;
  global_draws d;
  const std::vector<std::vector<host_table*>> with_empty{{f.ptrs[0]}, {}};
  CHECK(message([&] { draw_over_groups(with_empty, sampler::prioritized(), 8, 1, 0.5, d); }) ==
        "multi-GPU sample group 1 shards: got 0, need 1 or more");
  shard_table empty({}, 8);
  const std::vector<std::vector<host_table*>> nothing{{&empty.table}, {&empty.table}};
  CHECK(message([&] { draw_over_groups(nothing, sampler::prioritized(), 8, 1, 0.5, d); }) ==
        "multi-GPU sample: total weight: got 0, need > 0 (an item with priority > 0 on some GPU)");
  CHECK(message([&] { (void)plan_groups({}, 8, 1); }) == "multi-GPU sample groups: got 0, need 1 .. 256");
}

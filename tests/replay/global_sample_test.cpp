// Global prioritized sampling over shards (replay/global_sample.hpp): item frequencies against priority / the sum of
// every shard's total (chi-square, and far off against per-shard-uniform and item-uniform draws), a shard with
// nothing in it never drawn, importance weights from the global probability, uniform draws over all items, and
// bad calls refused with one line; the same shards as two GPUs' groups (gpu_groups.hpp) and as the tables of 4
// participants (threads) sampling through a board (group_sample.hpp).
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/replay/global_sample.hpp>
#include <gmi/replay/gpu_groups.hpp>
#include <gmi/replay/group_sample.hpp>
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

namespace {
// Each participant's draws of `rounds` samples (n each, seed 900 + round) over its own table, participants as threads
// on `board`: per round its share, plan and draws.
struct member_rounds {
  std::vector<group_share> shares;
  std::vector<global_draws> draws;
};
std::vector<member_rounds> sample_as_members(group_board& board, const std::vector<host_table*>& tables,
                                             const sampler& s, std::size_t n, std::size_t rounds, double beta) {
  std::vector<member_rounds> out(tables.size());
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < tables.size(); ++k) {
    threads.emplace_back([&, k] {
      group_participant me(board, int(k));
      host_table* const mine[] = {tables[k]};
      for (std::uint64_t r = 0; r < rounds; ++r) {
        out[k].draws.emplace_back();
        out[k].shares.push_back(draw_group_share(me, mine, s, n, 900 + r, beta, out[k].draws.back()));
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}
}  // namespace

// The fixture's 4 tables as 4 participants (threads) on a board in shared memory (built by role create, the others
// attaching): every participant computes the same plan, and the participants' parts, in participant order, are
// draw_over_groups' draws with one group a table, bit for bit (shards, keys, probabilities, weights with the
// smallest probability of all); the item frequencies against priority / the sum by chi-square, far off against an
// even share per participant; participant 0's share over the rounds against its total / sum (chi-square, 1 df).
TEST_CASE("replay.group_sample.threads_draw_as_one_table") {
  fixture f;
  const std::size_t bytes = group_board::bytes_for(fixture::shards);
  void* memory = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  REQUIRE(memory != nullptr);
  group_board board(group_board::role::create, memory, bytes, fixture::shards, std::chrono::seconds(20));
  group_board attached(group_board::role::attach, memory, bytes, fixture::shards, std::chrono::seconds(20));
  const std::size_t n = 4096, rounds = 40;
  const auto got = sample_as_members(attached, f.ptrs, sampler::prioritized(), n, rounds, 0.4);
  const auto expected = f.expected();
  std::vector<double> counts(expected.size(), 0.0);
  double share0 = 0.0, t0 = 0.0;
  for (float p : priorities_of(0, fixture::items)) t0 += p;
  const std::vector<std::vector<host_table*>> groups{{f.ptrs[0]}, {f.ptrs[1]}, {f.ptrs[2]}, {f.ptrs[3]}};
  for (std::size_t r = 0; r < rounds; ++r) {
    global_draws ref;
    const group_plan plan = draw_over_groups(groups, sampler::prioritized(), n, 900 + r, 0.4, ref);
    std::size_t at = 0;
    for (std::size_t k = 0; k < got.size(); ++k) {
      const group_share& s = got[k].shares[r];
      REQUIRE(s.plan.shares == plan.shares);
      REQUIRE(s.plan.seeds == plan.seeds);
      REQUIRE(s.plan.totals == plan.totals);
      REQUIRE(s.draws == plan.shares[k]);
      const global_draws& d = got[k].draws[r];
      REQUIRE(d.keys.size() == s.draws);
      for (std::size_t b = 0; b < d.keys.size(); ++b, ++at) {
        REQUIRE(ref.shard[at] == int(k));
        REQUIRE(d.shard[b] == 0);
        REQUIRE(d.keys[b] == ref.keys[at]);
        REQUIRE(d.probability[b] == ref.probability[at]);
        REQUIRE(d.weight[b] == ref.weight[at]);
        counts[std::size_t(int(k) * fixture::items + d.keys[b])] += 1;
      }
    }
    REQUIRE(at == n);
    CHECK(got[2].shares[r].draws == 0);
    share0 += double(got[0].shares[r].draws);
  }
  std::free(memory);
  const double df = double(3 * fixture::items - 1), total = double(n * rounds);
  const double x = replay_test::chi2(counts, expected, total);
  MESSAGE("chi-square " << x << " (critical " << replay_test::chi2_critical(df) << ")");
  CHECK(x < replay_test::chi2_critical(df));
  const double e0 = total * t0 / f.sum, e1 = total - e0;
  const double xs = (share0 - e0) * (share0 - e0) / e0 + (total - share0 - e1) * (total - share0 - e1) / e1;
  MESSAGE("participant 0's share " << share0 / total << " against " << t0 / f.sum << ", chi-square " << xs);
  CHECK(xs < replay_test::chi2_critical(1));
  std::vector<double> even(expected.size(), 0.0);  // a third of the draws to each non-empty table: far off
  for (int k : {0, 1, 3}) {
    double tk = 0.0;
    for (float p : priorities_of(k, fixture::items)) tk += p;
    for (int i = 0; i < fixture::items; ++i) {
      const std::size_t flat = std::size_t(k * fixture::items + i);
      even[flat] = expected[flat] * f.sum / tk / 3.0;
    }
  }
  CHECK(replay_test::chi2(counts, even, total) > 10 * replay_test::chi2_critical(df));
}

// Uniform draws over 3 participants' tables of 4, 12 and 24 items (a board in this process): every item's
// frequency against 1 / 40 (chi-square), each participant's share against its items / 40 (chi-square, 2 df), far off
// against even shares; every probability 1 / 40, every weight 1.
TEST_CASE("replay.group_sample.uniform_shares_follow_table_sizes") {
  const std::vector<std::size_t> sizes{4, 12, 24};
  std::vector<std::unique_ptr<shard_table>> tables;
  std::vector<host_table*> ptrs;
  for (std::size_t k : sizes) {
    tables.push_back(std::make_unique<shard_table>(std::vector<float>(k, 1.0f + float(k)), k));
    ptrs.push_back(&tables.back()->table);
  }
  group_board board(3, std::chrono::seconds(20));
  const std::size_t n = 2048, rounds = 30;
  const auto got = sample_as_members(board, ptrs, sampler::uniform(), n, rounds, 1.0);
  std::vector<double> counts(40, 0.0), expected(40, 1.0 / 40.0), shares(3, 0.0);
  const std::size_t first[] = {0, 4, 16};
  for (std::size_t k = 0; k < 3; ++k) {
    for (std::size_t r = 0; r < rounds; ++r) {
      shares[k] += double(got[k].shares[r].draws);
      const global_draws& d = got[k].draws[r];
      for (std::size_t b = 0; b < d.keys.size(); ++b) {
        counts[first[k] + std::size_t(d.keys[b])] += 1;
        CHECK(d.probability[b] == doctest::Approx(1.0 / 40.0).epsilon(1e-12));
        CHECK(d.weight[b] == doctest::Approx(1.0f));
      }
    }
  }
  const double total = double(n * rounds);
  CHECK(replay_test::chi2(counts, expected, total) < replay_test::chi2_critical(39));
  const std::vector<double> by_size{4.0 / 40, 12.0 / 40, 24.0 / 40}, even{1.0 / 3, 1.0 / 3, 1.0 / 3};
  const double xs = replay_test::chi2(shares, by_size, total);
  MESSAGE("shares " << shares[0] / total << " " << shares[1] / total << " " << shares[2] / total << ", chi-square "
                    << xs);
  CHECK(xs < replay_test::chi2_critical(2));
  CHECK(replay_test::chi2(shares, even, total) > 10 * replay_test::chi2_critical(2));
}

// Participant 2 of 3 never arrives: both others get a shard_lost_error naming it (participant 2, the group-total
// all-gather of round 1) no later than the timeout plus slack.
TEST_CASE("replay.group_sample.missing_participant_named_on_every_other") {
  fixture f;
  group_board board(3, std::chrono::milliseconds(300));
  std::vector<std::string> errors(2);
  std::vector<int> named(2, -1);
  std::vector<double> seconds(2, 0.0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 2; ++k) {
    threads.emplace_back([&, k] {
      group_participant me(board, k);
      host_table* const mine[] = {f.ptrs[std::size_t(k)]};
      const auto t0 = std::chrono::steady_clock::now();
      try {
        global_draws d;
        (void)draw_group_share(me, mine, sampler::prioritized(), 64, 1, 0.5, d);
      } catch (const shard_lost_error& e) {
        errors[std::size_t(k)] = e.what();
        named[std::size_t(k)] = e.shard();
      }
      seconds[std::size_t(k)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
  }
  for (auto& t : threads) t.join();
  for (int k = 0; k < 2; ++k) {
    MESSAGE("participant " << k << ": " << errors[std::size_t(k)] << " (" << seconds[std::size_t(k)] << " s)");
    CHECK(named[std::size_t(k)] == 2);
    CHECK(errors[std::size_t(k)].find("replay shard 2 (GMI 2)") != std::string::npos);
    CHECK(errors[std::size_t(k)].find("round 1 of the group-total all-gather") != std::string::npos);
    CHECK(seconds[std::size_t(k)] < 0.3 + 2.0);
  }
}

TEST_CASE("replay.group_sample.refusals") {
  fixture f;
  CHECK(message([] { group_board b(0, std::chrono::seconds(1)); }) == "group_board participants: got 0, need 1 .. 256");
  group_board board(2, std::chrono::seconds(1));
  CHECK(message([&] { group_participant m(board, 2); }) == "group_participant index: got 2, need 0 .. 1");
  group_participant me(board, 0);
  CHECK(message([&] { (void)me.plan(-1.0, 8, 1); }) == "group sample total: got -1, need finite, >= 0");
  CHECK(message([&] { (void)me.plan(1.0, 0, 1); }) == "group sample items: got 0, need 1 .. 16777216");
  CHECK(message([&] { (void)me.smallest(0.0); }) == "group sample smallest probability: got 0, need (0, 1]");
  global_draws d;
  host_table* const mine[] = {f.ptrs[0]};
  CHECK(message([&] { (void)draw_group_share(me, mine, sampler::fifo(), 8, 1, 0.5, d); }) ==
        "global sample sampler: got \"fifo\", need uniform or prioritized");
  CHECK(message([&] { (void)draw_group_share(me, mine, sampler::prioritized(), 8, 1, 2.0, d); }) ==
        "global sample beta (importance exponent): got 2, need 0 .. 1");
  CHECK(message([&] { (void)draw_group_share(me, {}, sampler::prioritized(), 8, 1, 0.5, d); }) ==
        "group sample participant 0 tables: got 0, need 1 or more");
  alignas(64) static unsigned char memory[group_board::bytes_for(2)] = {};
  CHECK(message([&] { group_board b(group_board::role::attach, memory, sizeof memory, 2, std::chrono::seconds(1)); })
        == "group_board shared memory: got \"no board\", need one built there by role create first");
  group_board made(group_board::role::create, memory, sizeof memory, 2, std::chrono::seconds(1));
  CHECK(message([&] { group_board b(group_board::role::attach, memory, sizeof memory, 3, std::chrono::seconds(1)); })
        == "group_board shared bytes: got 192, need >= 256 for 3 participants");
  CHECK(message([&] { group_board b(group_board::role::attach, memory, sizeof memory, 1, std::chrono::seconds(1)); })
        == "group_board participants: got 1, need 2 (the board's)");
}

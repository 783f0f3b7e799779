// Replay sharded over GMIs (threads, and processes over a shared board): shares that follow the shard totals,
// global item frequencies, and a shard whose GMI is killed (an error naming it on every survivor, within the
// timeout, or the others go on).
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <new>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <gmi/replay/replay.hpp>
#include <gmi/replay/sharded.hpp>

#include "replay/support.hpp"

using namespace gmi::replay;
using replay_test::rollout_data;

namespace {

// A table of `items` one-step items whose priorities are given.
struct filled_table {
  host_table table;
  explicit filled_table(const std::vector<float>& priorities) : table(replay_test::small_spec(priorities.size())) {
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

std::vector<float> priorities_of(int shard, int items) {
  std::vector<float> p(std::size_t(items), 0.0f);
  for (int i = 0; i < items; ++i) p[std::size_t(i)] = float(1 + (i * 7 + shard * 3) % 11) * float(shard + 1);
  return p;
}

}  // namespace

TEST_CASE("replay.sharded.shares_follow_the_totals") {
  const std::vector<double> totals{1.0, 3.0, 0.0, 6.0};
  std::vector<double> counts(4, 0.0);
  const std::size_t n = 1000, rounds = 200;
  for (std::uint64_t r = 1; r <= rounds; ++r) {
    const auto s = shard_shares(totals, n, 42, r);
    CHECK(s == shard_shares(totals, n, 42, r));  // every shard computes the same shares
    std::size_t sum = 0;
    for (std::size_t k = 0; k < 4; ++k) sum += s[k], counts[k] += double(s[k]);
    CHECK(sum == n);
  }
  CHECK(counts[2] == 0.0);  // a zero total gets nothing
  const std::vector<double> p{0.1, 0.3, 0.0, 0.6};
  CHECK(replay_test::chi2(counts, p, double(n * rounds)) < replay_test::chi2_critical(2));
  // The test can fail: the same counts against equal shares of the three non-empty shards are far off.
  const std::vector<double> equal{1.0 / 3, 1.0 / 3, 0.0, 1.0 / 3};
  CHECK(replay_test::chi2(counts, equal, double(n * rounds)) > 10 * replay_test::chi2_critical(2));
  CHECK(shard_shares({0.0, 0.0}, 10, 1, 1) == std::vector<std::size_t>{0, 0});
}

TEST_CASE("replay.sharded.global_prioritized_frequencies" * doctest::timeout(120)) {
  constexpr int shards = 4, items = 16;
  constexpr std::size_t n = 512, rounds = 120;
  shard_board board(shards, std::chrono::seconds(20));
  std::vector<std::unique_ptr<filled_table>> tables;
  for (int k = 0; k < shards; ++k) tables.push_back(std::make_unique<filled_table>(priorities_of(k, items)));
  std::vector<std::vector<double>> counts(shards, std::vector<double>(items, 0.0));
  std::vector<std::vector<std::size_t>> mine(shards, std::vector<std::size_t>(rounds + 1, 0));
  std::vector<std::vector<double>> prob(shards, std::vector<double>(items, 0.0));
  std::vector<std::thread> gmis;
  for (int k = 0; k < shards; ++k) {
    gmis.emplace_back([&, k] {
      shard me(board, k, tables[std::size_t(k)]->table);
      host_batch b;
      for (std::uint64_t r = 1; r <= rounds; ++r) {
        const shard_sample s = me.sample(n, 1, r, 7, b);
        mine[std::size_t(k)][r] = s.mine;
        for (std::size_t i = 0; i < s.mine; ++i) {
          counts[std::size_t(k)][std::size_t(b.info.keys[i])] += 1;
          prob[std::size_t(k)][std::size_t(b.info.keys[i])] = s.probability[i];
        }
      }
      me.leave();
    });
  }
  for (auto& t : gmis) t.join();
  double sum = 0;
  for (int k = 0; k < shards; ++k)
    for (float p : priorities_of(k, items)) sum += p;
  std::vector<double> all_counts, expected;
  for (int k = 0; k < shards; ++k) {
    const auto p = priorities_of(k, items);
    for (int i = 0; i < items; ++i) {
      all_counts.push_back(counts[std::size_t(k)][std::size_t(i)]);
      expected.push_back(double(p[std::size_t(i)]) / sum);
      if (counts[std::size_t(k)][std::size_t(i)] > 0) {
        CHECK(prob[std::size_t(k)][std::size_t(i)] == doctest::Approx(expected.back()).epsilon(1e-9));
      }
    }
  }
  for (std::size_t r = 1; r <= rounds; ++r) {  // the shares of a round add up to n over the shards
    std::size_t total = 0;
    for (int k = 0; k < shards; ++k) total += mine[std::size_t(k)][r];
    CHECK(total == n);
  }
  const double df = double(shards * items - 1);
  CHECK(replay_test::chi2(all_counts, expected, double(n * rounds)) < replay_test::chi2_critical(df));
  // Against uniform items (what a sampler ignoring priorities would give) the counts are far off.
  const std::vector<double> uniform(all_counts.size(), 1.0 / double(all_counts.size()));
  CHECK(replay_test::chi2(all_counts, uniform, double(n * rounds)) > 10 * replay_test::chi2_critical(df));
}

// Shard 2's GMI is killed after round 3 (its thread stops publishing). Every survivor's next sample ends in a
// shard_lost_error naming shard 2 and round 4, no later than the timeout after it started waiting (plus slack).
TEST_CASE("replay.sharded.killed_shard_is_named_on_every_survivor" * doctest::timeout(60)) {
  constexpr int shards = 4;
  const auto timeout = std::chrono::milliseconds(300);
  shard_board board(shards, timeout);
  std::vector<std::unique_ptr<filled_table>> tables;
  for (int k = 0; k < shards; ++k) tables.push_back(std::make_unique<filled_table>(priorities_of(k, 8)));
  std::vector<std::string> messages(shards);
  std::vector<int> named(shards, -1);
  std::vector<std::uint64_t> at_round(shards, 0);
  std::vector<double> waited(shards, 0.0);
  std::vector<std::thread> gmis;
  for (int k = 0; k < shards; ++k) {
    gmis.emplace_back([&, k] {
      shard me(board, k, tables[std::size_t(k)]->table);
      host_batch b;
      for (std::uint64_t r = 1; r <= 10; ++r) {
        if (k == 2 && r == 4) return;  // killed: no more publishing, no leave()
        const auto t0 = std::chrono::steady_clock::now();
        try {
          (void)me.sample(64, 1, r, 3, b);
        } catch (const shard_lost_error& e) {
          waited[std::size_t(k)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          messages[std::size_t(k)] = e.what();
          named[std::size_t(k)] = e.shard();
          at_round[std::size_t(k)] = e.round();
          return;
        }
      }
    });
  }
  for (auto& t : gmis) t.join();
  for (int k : {0, 1, 3}) {
    CAPTURE(k);
    CAPTURE(messages[std::size_t(k)]);
    CHECK(named[std::size_t(k)] == 2);
    CHECK(at_round[std::size_t(k)] == 4);
    CHECK(messages[std::size_t(k)].find("replay shard 2 (GMI 2)") != std::string::npos);
    CHECK(messages[std::size_t(k)].find("its last round 3") != std::string::npos);
    CHECK(waited[std::size_t(k)] < 0.3 + 2.0);  // bounded by the timeout (slack for a loaded machine)
  }
  CHECK(board.lost_shard(2));
  // The killed shard coming back late learns that it was declared lost.
  try {
    (void)board.all_gather(2, 4, 1.0);
    FAIL("a shard declared lost published again");
  } catch (const shard_lost_error& e) {
    CHECK(e.shard() == 2);
    CHECK(std::string(e.what()).find("declared lost by the others") != std::string::npos);
  }
}

// With on_lost_shard::continue_without the survivors agree on dropping shard 2 and share the draws among themselves.
TEST_CASE("replay.sharded.killed_shard_dropped_when_configured" * doctest::timeout(60)) {
  constexpr int shards = 4;
  constexpr std::uint64_t rounds = 8;
  constexpr std::size_t n = 128;
  shard_board board(shards, std::chrono::milliseconds(200), on_lost_shard::continue_without);
  std::vector<std::unique_ptr<filled_table>> tables;
  for (int k = 0; k < shards; ++k) tables.push_back(std::make_unique<filled_table>(priorities_of(k, 8)));
  std::vector<std::vector<std::vector<std::size_t>>> shares(shards, std::vector<std::vector<std::size_t>>(rounds + 1));
  std::vector<std::string> errors(shards);
  std::vector<std::thread> gmis;
  for (int k = 0; k < shards; ++k) {
    gmis.emplace_back([&, k] {
      shard me(board, k, tables[std::size_t(k)]->table);
      host_batch b;
      try {
        for (std::uint64_t r = 1; r <= rounds; ++r) {
          if (k == 2 && r == 3) return;  // killed
          shares[std::size_t(k)][r] = me.sample(n, 1, r, 5, b).shares;
        }
        me.leave();
      } catch (const std::exception& e) {
        errors[std::size_t(k)] = e.what();
      }
    });
  }
  for (auto& t : gmis) t.join();
  for (int k : {0, 1, 3}) {
    CHECK(errors[std::size_t(k)].empty());
    for (std::uint64_t r = 1; r <= rounds; ++r) {
      CAPTURE(r);
      CHECK(shares[std::size_t(k)][r] == shares[0][r]);  // the survivors agree, round by round
      std::size_t sum = 0;
      for (std::size_t v : shares[0][r]) sum += v;
      CHECK(sum == n);
      if (r >= 3) CHECK(shares[0][r][2] == 0);  // dropped from round 3 on
    }
  }
  CHECK(shares[0][2][2] > 0);  // before it was killed it had its share
  CHECK(board.lost_shard(2));
}

TEST_CASE("replay.sharded.left_shard_is_not_waited_for" * doctest::timeout(30)) {
  shard_board board(2, std::chrono::seconds(20));
  std::thread other([&] {
    (void)board.all_gather(1, 1, 5.0);
    board.leave(1);
  });
  const auto first = board.all_gather(0, 1, 1.0);
  other.join();
  CHECK(first == std::vector<double>{1.0, 5.0});
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(board.all_gather(0, 2, 1.0) == std::vector<double>{1.0, 0.0});
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));  // not the 20 s timeout
  CHECK_THROWS_WITH_AS(shard_board(0, std::chrono::seconds(1)), doctest::Contains("shard_board shards: got 0"),
                       gmi::config_error);
}

// The shards as processes over a MAP_SHARED board: shard 2's process is SIGKILLed after round 3. Every surviving
// process gets the error naming shard 2 and round 4 within the timeout (plus slack); the parent waits a bounded time.
TEST_CASE("replay.sharded.sigkilled_shard_process_is_named_on_every_survivor" * doctest::timeout(60)) {
  constexpr int shards = 4;
  struct outcome {
    int named = -1;
    std::uint64_t round = 0;
    double waited = 0;
    char text[256] = {};
  };
  const std::size_t board_bytes = shard_board::bytes_for(shards);
  const std::size_t bytes = board_bytes + sizeof(outcome) * shards;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(mem != MAP_FAILED);
  shard_board board(mem, board_bytes, shards, std::chrono::milliseconds(300));
  auto* outcomes = new (static_cast<char*>(mem) + board_bytes) outcome[shards];
  std::vector<pid_t> pids;
  for (int k = 0; k < shards; ++k) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {  // a shard's GMI process: only _exit leaves it
      filled_table t(priorities_of(k, 8));
      shard me(board, k, t.table);
      host_batch b;
      for (std::uint64_t r = 1; r <= 10; ++r) {
        if (k == 2 && r == 4) raise(SIGKILL);
        const auto t0 = std::chrono::steady_clock::now();
        try {
          (void)me.sample(64, 1, r, 3, b);
        } catch (const shard_lost_error& e) {
          outcomes[k].waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          outcomes[k].named = e.shard();
          outcomes[k].round = e.round();
          std::snprintf(outcomes[k].text, sizeof outcomes[k].text, "%s", e.what());
          _exit(0);
        } catch (...) {
          _exit(3);
        }
      }
      _exit(4);  // no error: wrong
    }
    pids.push_back(pid);
  }
  std::vector<int> status(shards, -1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int k = 0; k < shards; ++k) {
    while (waitpid(pids[std::size_t(k)], &status[std::size_t(k)], WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pids[std::size_t(k)], SIGKILL);
        waitpid(pids[std::size_t(k)], &status[std::size_t(k)], 0);
        FAIL("shard process " << k << " still running after 20 s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  CHECK((WIFSIGNALED(status[2]) && WTERMSIG(status[2]) == SIGKILL));
  for (int k : {0, 1, 3}) {
    CAPTURE(k);
    CAPTURE(std::string(outcomes[k].text));
    CHECK((WIFEXITED(status[std::size_t(k)]) && WEXITSTATUS(status[std::size_t(k)]) == 0));
    CHECK(outcomes[k].named == 2);
    CHECK(outcomes[k].round == 4);
    CHECK(std::string(outcomes[k].text).find("replay shard 2 (GMI 2)") != std::string::npos);
    CHECK(outcomes[k].waited < 0.3 + 2.0);
  }
  CHECK(board.lost_shard(2));
  munmap(mem, bytes);
}

#pragma once
// Replay sharded over GMIs without a central server: each GMI owns a shard (its own table); a global prioritized
// sample of n items is made of every shard's share. Per round, one small all-gather of the shards' total priorities
// (shard_board), then every shard computes the same shares from the same totals and seed (shard_shares: n draws
// over the totals) and draws its own share from its own table, so an item's global probability is
// priority / sum of the totals. A shard that does not publish within the board's timeout is named in a
// shard_lost_error on every survivor, or, where the board says so, dropped by all of them alike (its total counts 0).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <source_location>
#include <string>
#include <thread>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/replay/host_table.hpp>
#include <gmi/replay/placement.hpp>
#include <gmi/replay/spec.hpp>

namespace gmi::replay {

// A shard's GMI stopped publishing its total (killed, hung) or was dropped: names the shard and the round.
class shard_lost_error : public error {
 public:
  shard_lost_error(const std::string& message, int shard, std::uint64_t round,
                   std::source_location where = std::source_location::current())
      : error(message, where), shard_(shard), round_(round) {}
  [[nodiscard]] int shard() const noexcept { return shard_; }
  [[nodiscard]] std::uint64_t round() const noexcept { return round_; }

 private:
  int shard_;
  std::uint64_t round_;
};

// What survivors do about a lost shard: stop with shard_lost_error, or go on without it.
enum class on_lost_shard { fail, continue_without };

// The all-gather of shard totals. Each shard's slot holds one word, (round << 2) | state, changed only by
// compare-and-swap: the shard publishing round r and a survivor declaring it lost at r race on the same word, so
// every survivor sees the same outcome for every shard and round. Totals are kept per round parity (a shard can
// be at most one round ahead of the slowest reader). Lock-free atomics in one block: in this process's memory
// (GMIs as threads) or in memory that GMI processes share.
class shard_board {
 public:
  // A board in this process's memory (the shards are threads).
  shard_board(int shards, std::chrono::milliseconds timeout, on_lost_shard policy = on_lost_shard::fail)
      : n_(checked(shards, timeout)), timeout_(timeout), policy_(policy),
        owned_(std::make_unique<slot[]>(std::size_t(shards))), slots_(owned_.get()) {}

  // A board in memory the shards' processes share (a MAP_SHARED mapping made before fork, or a shared segment) of
  // bytes_for(shards) bytes, 64-byte aligned; the slots are constructed there, so only one process makes it (the
  // others attach: construct false).
  shard_board(void* shared, std::size_t bytes, int shards, std::chrono::milliseconds timeout,
              on_lost_shard policy = on_lost_shard::fail, bool construct = true)
      : n_(checked(shards, timeout)), timeout_(timeout), policy_(policy) {
    require(shared != nullptr && reinterpret_cast<std::uintptr_t>(shared) % alignof(slot) == 0,
            "shard_board shared memory", shared ? "misaligned" : "null", "64-byte aligned memory");
    require(bytes >= bytes_for(shards), "shard_board shared bytes", bytes, ">= " + std::to_string(bytes_for(shards)));
    static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<double>::is_always_lock_free,
                  "gmi::replay::shard_board: shared slots need lock-free 64-bit atomics");
    slots_ = static_cast<slot*>(shared);
    if (construct)
      for (int k = 0; k < shards; ++k) new (&slots_[k]) slot{};
  }
  [[nodiscard]] static constexpr std::size_t bytes_for(int shards) { return sizeof(slot) * std::size_t(shards); }
  shard_board(const shard_board&) = delete;
  shard_board& operator=(const shard_board&) = delete;

  [[nodiscard]] int shards() const noexcept { return n_; }
  [[nodiscard]] std::chrono::milliseconds timeout() const noexcept { return timeout_; }

  // Publishes `total` for round `round` (rounds start at 1 and go up by one) and waits, at most the timeout, for
  // every other shard's; returns the totals (0 for shards gone). Throws shard_lost_error naming a shard that did not
  // publish in time (policy fail; also when an earlier round dropped it), or naming this shard if the others
  // declared it lost first. `gather` names the all-gather in those errors.
  std::vector<double> all_gather(int shard, std::uint64_t round, double total, const char* gather = "shard-total") {
    require(shard >= 0 && shard < n_, "shard_board shard", shard, "0 .. " + std::to_string(n_ - 1));
    require(round >= 1 && round < (std::uint64_t{1} << 61), "shard_board round", round, ">= 1");
    require(total >= 0.0, "shard_board total", total, ">= 0");
    slot& me = slots_[std::size_t(shard)];
    me.total[round & 1].store(total, std::memory_order_relaxed);
    std::uint64_t expect = word(round - 1, published);
    if (!me.word.compare_exchange_strong(expect, word(round, published), std::memory_order_acq_rel)) {
      throw shard_lost_error(message_for(shard, expect, round, "this shard was declared lost by the others", gather),
                             shard, round);
    }
    std::vector<double> totals(std::size_t(n_), 0.0);
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (int k = 0; k < n_; ++k) {
      slot& s = slots_[std::size_t(k)];
      for (int spins = 0;; ++spins) {
        std::uint64_t w = s.word.load(std::memory_order_acquire);
        if (last_published(w) >= round) {  // its total for this round is in (a later state keeps it readable)
          totals[std::size_t(k)] = s.total[round & 1].load(std::memory_order_relaxed);
          break;
        }
        if (state_of(w) == left) break;  // gone cleanly before this round: its total is 0
        if (state_of(w) == lost) {
          if (policy_ == on_lost_shard::fail) {
            throw shard_lost_error(message_for(k, w, round, "declared lost", gather), k, round);
          }
          break;
        }
        if (std::chrono::steady_clock::now() >= deadline) {
          // Declare it lost at this round, unless it publishes in the same instant (then its total counts).
          if (s.word.compare_exchange_strong(w, word(round, lost), std::memory_order_acq_rel)) {
            if (policy_ == on_lost_shard::fail) {
              throw shard_lost_error(message_for(k, word(round, lost), round, "did not publish", gather), k, round);
            }
            break;
          }
          continue;  // its word changed: look again
        }
        if (spins > 64) std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    return totals;
  }

  // A shard done sampling: the others stop waiting for it (its total counts 0 from now on).
  void leave(int shard) {
    require(shard >= 0 && shard < n_, "shard_board shard", shard, "0 .. " + std::to_string(n_ - 1));
    slot& me = slots_[std::size_t(shard)];
    std::uint64_t w = me.word.load(std::memory_order_acquire);
    while (state_of(w) == published && !me.word.compare_exchange_weak(w, word(round_of(w), left))) {
    }
  }

  // Whether the shard was declared lost (by any survivor, at any round).
  [[nodiscard]] bool lost_shard(int shard) const {
    return state_of(slots_[std::size_t(shard)].word.load(std::memory_order_acquire)) == lost;
  }

 private:
  static constexpr std::uint64_t published = 0, lost = 1, left = 2;
  static constexpr std::uint64_t word(std::uint64_t round, std::uint64_t state) { return (round << 2) | state; }
  static constexpr std::uint64_t round_of(std::uint64_t w) { return w >> 2; }
  static constexpr std::uint64_t state_of(std::uint64_t w) { return w & 3; }
  struct alignas(64) slot {
    std::atomic<std::uint64_t> word{0};
    std::atomic<double> total[2]{0.0, 0.0};
  };
  // The last round whose total the slot's shard published.
  static constexpr std::uint64_t last_published(std::uint64_t w) {
    return state_of(w) == lost ? round_of(w) - 1 : round_of(w);
  }
  std::string message_for(int k, std::uint64_t w, std::uint64_t round, const char* what, const char* gather) const {
    char tail[200];
    std::snprintf(tail, sizeof tail, ": round %llu of the %s all-gather, its last round %llu, timeout %.3g s",
                  static_cast<unsigned long long>(round), gather, static_cast<unsigned long long>(last_published(w)),
                  double(timeout_.count()) / 1e3);
    return "replay shard " + std::to_string(k) + " (GMI " + std::to_string(k) + ") " + what + tail +
           " (its GMI was killed or hangs; on_lost_shard::continue_without samples from the others)";
  }

  static int checked(int shards, std::chrono::milliseconds timeout) {
    require(shards >= 1 && shards <= 4096, "shard_board shards", shards, "1 .. 4096");
    require(timeout.count() >= 1, "shard_board timeout (ms)", timeout.count(), ">= 1");
    return shards;
  }

  int n_;
  std::chrono::milliseconds timeout_;
  on_lost_shard policy_;
  std::unique_ptr<slot[]> owned_;
  slot* slots_ = nullptr;
};

// Each shard's share of n global draws: n points uniform over [0, sum of totals) from (seed, round), counted per
// shard interval. Every shard computes the same shares from the same totals. All zero where every total is 0.
[[nodiscard]] inline std::vector<std::size_t> shard_shares(const std::vector<double>& totals, std::size_t n,
                                                           std::uint64_t seed, std::uint64_t round) {
  std::vector<double> edge(totals.size() + 1, 0.0);
  for (std::size_t k = 0; k < totals.size(); ++k) edge[k + 1] = edge[k] + totals[k];
  std::vector<std::size_t> counts(totals.size(), 0);
  const double sum = edge.back();
  if (!(sum > 0.0)) return counts;
  for (std::size_t i = 0; i < n; ++i) {
    gmi::rng r(seed ^ 0x5A4D5ull, round * 0x100000000ull + i);
    const double u = double(r.uniform(0.0f, 1.0f)) * sum;
    std::size_t k = std::size_t(std::upper_bound(edge.begin() + 1, edge.end(), u) - (edge.begin() + 1));
    k = std::min(k, totals.size() - 1);
    while (totals[k] <= 0.0 && k > 0) --k;  // u on a zero-width edge: the shard below it
    while (totals[k] <= 0.0) ++k;
    ++counts[k];
  }
  return counts;
}

// What one shard's part of a global sample was.
struct shard_sample {
  std::vector<double> totals;        // every shard's total priority this round (0: gone)
  std::vector<std::size_t> shares;   // every shard's share of the n draws
  std::size_t mine = 0;              // this shard's share (rows of the batch)
  std::vector<double> probability;   // the global probability each of this shard's items was drawn with
};

// One GMI's shard: its table and its place on the board.
class shard {
 public:
  shard(shard_board& board, int index, host_table& table) : board_(board), index_(index), table_(table) {}

  // Round `round` of a global prioritized sample of n items: all-gathers the totals, then draws this shard's share
  // from its table into out (out is left as it was when the share is 0).
  shard_sample sample(std::size_t n, std::size_t length, std::uint64_t round, std::uint64_t seed, host_batch& out) {
    shard_sample s;
    s.totals = board_.all_gather(index_, round, table_.total_priority());
    s.shares = shard_shares(s.totals, n, seed, round);
    s.mine = s.shares[std::size_t(index_)];
    drawn_ += s.mine;
    if (counts_) counts_->count(std::size_t(index_), s.mine);
    if (s.mine == 0) return s;
    const std::uint64_t draw_seed = seed * 0x9E3779B97F4A7C15ull + round * 4099 + std::uint64_t(index_);
    table_.sample(sampler::prioritized(), s.mine, length, draw_seed, out);
    double sum = 0.0;
    for (double t : s.totals) sum += t;
    const double local = s.totals[std::size_t(index_)] / sum;  // P(shard) times P(item | shard)
    s.probability.resize(s.mine);
    for (std::size_t i = 0; i < s.mine; ++i) s.probability[i] = out.info.probability[i] * local;
    return s;
  }
  void leave() { board_.leave(index_); }
  [[nodiscard]] int index() const noexcept { return index_; }
  // Items drawn from this shard so far; with counts set, each sample also adds its share there (placement.hpp).
  [[nodiscard]] std::uint64_t drawn() const noexcept { return drawn_; }
  void count_into(access_counts* counts) noexcept { counts_ = counts; }

 private:
  std::uint64_t drawn_ = 0;
  access_counts* counts_ = nullptr;
  shard_board& board_;
  int index_;
  host_table& table_;
};

}  // namespace gmi::replay

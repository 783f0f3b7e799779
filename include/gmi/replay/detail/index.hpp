#pragma once
// The host-side control plane of a table: which slots hold items, their insertion order, times sampled and
// priority (mirror of the sum-tree's leaves), slot allocation with eviction by the remover, and the counters
// the rate limiters read. Both backends keep one; the data (columns, trajectory links, sum-trees) lives apart.

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <deque>
#include <functional>
#include <queue>
#include <string>
#include <tuple>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/replay/spec.hpp>

namespace gmi::replay::detail {

struct counters {
  std::uint64_t inserts = 0, samples = 0, deletes = 0;
  [[nodiscard]] std::uint64_t size() const noexcept { return inserts - deletes; }
};

class item_index {
 public:
  explicit item_index(const table_spec& s)
      : remove_(s.remove), max_times_(s.max_times_sampled), seq_(s.capacity, 0), times_(s.capacity, 0),
        leaf_(s.capacity, 0.0) {
    for (std::size_t i = 0; i < s.capacity; ++i) free_.push_back(static_cast<std::int32_t>(i));
  }

  struct allocation {
    std::vector<std::int32_t> slots;  // slots[i] holds the i-th new item, whose seq is seq_base + i + 1
    std::uint64_t seq_base = 0;
    std::int32_t contiguous_base = -1;  // slots[i] == contiguous_base + i for all i, or -1
    std::vector<std::int32_t> evicted;
  };

  // n slots for new items, evicting by the remover when fewer than n are free.
  allocation allocate(std::size_t n) {
    require(n <= capacity(), "replay insert (items)", n, "<= the table's capacity " + std::to_string(capacity()));
    allocation a;
    while (free_.size() < n) a.evicted.push_back(evict_one());
    a.seq_base = next_seq_;
    a.slots.resize(n);
    bool contiguous = n > 0;
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t slot = free_.front();
      free_.pop_front();
      a.slots[i] = slot;
      contiguous = contiguous && slot == a.slots[0] + static_cast<std::int32_t>(i);
      seq_[slot] = ++next_seq_;
      times_[slot] = 0;
      if (remove_ == remover::fifo) fifo_.emplace_back(seq_[slot], slot);
      if (remove_ == remover::lifo) lifo_.emplace_back(seq_[slot], slot);
    }
    if (contiguous) a.contiguous_base = a.slots[0];
    count_.inserts += n;
    return a;
  }

  // The priority leaf (p^exponent) of a present slot; heap removers order by it.
  void set_leaf(std::int32_t slot, double leaf) {
    leaf_[slot] = leaf;
    if (seq_[slot] == 0) return;
    if (remove_ == remover::min_heap) min_heap_.emplace(leaf, seq_[slot], slot);
    if (remove_ == remover::max_heap) max_heap_.emplace(leaf, ~seq_[slot], slot);
    if (min_heap_.size() + max_heap_.size() > 4 * seq_.size() + 1024) rebuild_heaps();
  }

  // Counts a sample of these slots; returns the slots that reached max_times_sampled (now removed).
  std::vector<std::int32_t> note_sampled(const std::int32_t* slots, std::size_t n) {
    count_.samples += n;
    std::vector<std::int32_t> removed;
    if (max_times_ == 0) return removed;
    for (std::size_t i = 0; i < n; ++i) {
      const std::int32_t s = slots[i];
      if (s < 0 || seq_[s] == 0) continue;
      if (++times_[s] >= max_times_) {
        release(s);
        removed.push_back(s);
      }
    }
    return removed;
  }

  [[nodiscard]] std::size_t capacity() const noexcept { return seq_.size(); }
  [[nodiscard]] std::size_t size() const noexcept { return static_cast<std::size_t>(count_.size()); }
  [[nodiscard]] const counters& count() const noexcept { return count_; }
  [[nodiscard]] std::uint64_t seq_of(std::int32_t slot) const { return seq_[slot]; }
  [[nodiscard]] double leaf_of(std::int32_t slot) const { return leaf_[slot]; }
  [[nodiscard]] std::uint32_t times_of(std::int32_t slot) const { return times_[slot]; }

  // Snapshot state: everything needed to rebuild this index exactly.
  struct state {
    std::vector<std::uint64_t> seq;
    std::vector<std::uint32_t> times;
    std::vector<double> leaf;
    std::vector<std::int32_t> free;
    std::uint64_t next_seq = 0;
    counters count;
  };
  [[nodiscard]] state save() const { return {seq_, times_, leaf_, {free_.begin(), free_.end()}, next_seq_, count_}; }

  // Checks a saved state against this index's spec and adopts it; config_error naming the first inconsistency.
  void restore(state st, const std::string& origin) {
    const std::size_t cap = capacity();
    const auto bad = [&](const std::string& what, const std::string& got, const std::string& need) {
      return config_error(origin + ": " + what + ": got " + got + ", need " + need);
    };
    if (st.seq.size() != cap || st.times.size() != cap || st.leaf.size() != cap)
      throw bad("per-item arrays", std::to_string(st.seq.size()), std::to_string(cap) + " entries (capacity)");
    std::vector<char> seen(cap, 0);
    std::size_t present = 0;
    for (std::size_t i = 0; i < cap; ++i) {
      if (st.seq[i] > st.next_seq) throw bad("item " + std::to_string(i) + " seq", std::to_string(st.seq[i]),
                                             "<= " + std::to_string(st.next_seq));
      if (!(st.leaf[i] >= 0.0) || st.leaf[i] > 1e300)
        throw bad("item " + std::to_string(i) + " priority", std::to_string(st.leaf[i]), "a finite value >= 0");
      if (max_times_ != 0 && st.times[i] >= max_times_)
        throw bad("item " + std::to_string(i) + " times sampled", std::to_string(st.times[i]),
                  "< max_times_sampled " + std::to_string(max_times_));
      present += st.seq[i] != 0;
    }
    for (std::int32_t s : st.free) {
      if (s < 0 || static_cast<std::size_t>(s) >= cap || seen[s] || st.seq[s] != 0)
        throw bad("free slot", std::to_string(s), "an empty slot in [0, capacity) listed once");
      seen[s] = 1;
    }
    if (st.free.size() + present != cap)
      throw bad("free slots", std::to_string(st.free.size()), std::to_string(cap - present) + " (the empty slots)");
    if (st.count.inserts < st.count.deletes || st.count.size() != present)
      throw bad("inserts - deletes", std::to_string(st.count.inserts - st.count.deletes),
                std::to_string(present) + " (items present)");
    seq_ = std::move(st.seq);
    times_ = std::move(st.times);
    leaf_ = std::move(st.leaf);
    free_.assign(st.free.begin(), st.free.end());
    next_seq_ = st.next_seq;
    count_ = st.count;
    fifo_.clear();
    lifo_.clear();
    std::vector<std::pair<std::uint64_t, std::int32_t>> order;
    for (std::size_t i = 0; i < cap; ++i)
      if (seq_[i] != 0) order.emplace_back(seq_[i], static_cast<std::int32_t>(i));
    std::sort(order.begin(), order.end());
    if (remove_ == remover::fifo) fifo_.assign(order.begin(), order.end());
    if (remove_ == remover::lifo) lifo_.assign(order.begin(), order.end());
    rebuild_heaps();
  }

 private:
  void release(std::int32_t s) {
    seq_[s] = 0;
    times_[s] = 0;
    leaf_[s] = 0.0;
    free_.push_back(s);
    ++count_.deletes;
  }

  // Pops remover entries until one still describes a present item (entries go stale on removal or re-priority).
  std::int32_t evict_one() {
    std::int32_t slot = -1;
    switch (remove_) {
      case remover::fifo:
        while (slot < 0) {
          auto [q, s] = fifo_.front();
          fifo_.pop_front();
          if (seq_[s] == q) slot = s;
        }
        break;
      case remover::lifo:
        while (slot < 0) {
          auto [q, s] = lifo_.back();
          lifo_.pop_back();
          if (seq_[s] == q) slot = s;
        }
        break;
      case remover::min_heap:
        while (slot < 0) {
          auto [l, q, s] = min_heap_.top();
          min_heap_.pop();
          if (seq_[s] == q && leaf_[s] == l) slot = s;
        }
        break;
      case remover::max_heap:
        while (slot < 0) {
          auto [l, nq, s] = max_heap_.top();
          max_heap_.pop();
          if (seq_[s] == ~nq && leaf_[s] == l) slot = s;
        }
        break;
    }
    release(slot);
    return slot;
  }

  void rebuild_heaps() {
    min_heap_ = {};
    max_heap_ = {};
    for (std::size_t i = 0; i < seq_.size(); ++i) {
      if (seq_[i] == 0) continue;
      const auto s = static_cast<std::int32_t>(i);
      if (remove_ == remover::min_heap) min_heap_.emplace(leaf_[s], seq_[s], s);
      if (remove_ == remover::max_heap) max_heap_.emplace(leaf_[s], ~seq_[s], s);
    }
  }

  using entry = std::tuple<double, std::uint64_t, std::int32_t>;
  remover remove_;
  std::uint32_t max_times_;
  std::vector<std::uint64_t> seq_;
  std::vector<std::uint32_t> times_;
  std::vector<double> leaf_;
  std::deque<std::int32_t> free_;
  std::deque<std::pair<std::uint64_t, std::int32_t>> fifo_;
  std::vector<std::pair<std::uint64_t, std::int32_t>> lifo_;
  // min_heap_: smallest priority first, then the oldest; max_heap_: largest first, then the oldest (~seq).
  std::priority_queue<entry, std::vector<entry>, std::greater<>> min_heap_;
  std::priority_queue<entry> max_heap_;
  std::uint64_t next_seq_ = 0;
  counters count_;
};

}  // namespace gmi::replay::detail

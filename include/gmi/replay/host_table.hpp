#pragma once
// A replay table in host memory: the backend of CI tests and of the CPU-staged baseline, running the same
// per-item algorithms as the device table (detail/algorithms.hpp), so both draw the same items for one seed.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include <gmi/replay/detail/algorithms.hpp>
#include <gmi/replay/detail/control.hpp>
#include <gmi/replay/rate_limiter.hpp>
#include <gmi/replay/snapshot.hpp>
#include <gmi/replay/spec.hpp>

namespace gmi::replay {

// The items a sample drew: their keys (slots) and the probability each was drawn with (1 for ordered samplers).
struct sample_info {
  std::vector<std::int32_t> keys;
  std::vector<double> probability;
};

// A gathered batch in host memory: columns[c] is [batch, length, width_c] words, mask [batch, length] (0: padding).
struct host_batch {
  sample_info info;
  std::size_t batch = 0, length = 0;
  std::vector<std::vector<std::uint32_t>> columns;
  std::vector<float> mask;
  template <class T>
  [[nodiscard]] const T* column(std::size_t c) const {
    static_assert(sizeof(T) == 4, "replay columns hold 4-byte elements");
    return reinterpret_cast<const T*>(columns[c].data());
  }
};

class host_table {
 public:
  struct writer {
    detail::writer_host_part host;
    std::vector<std::int64_t> traj, episodes;
    std::vector<std::int32_t> step;
  };

  explicit host_table(table_spec spec, rate_limiter limiter = rate_limiter::min_size(1),
                      std::chrono::milliseconds timeout = std::chrono::seconds(10))
      : ctl_(std::move(spec), std::move(limiter), timeout) {
    const table_spec& s = ctl_.spec_;
    leaves_ = detail::tree_leaves_for(static_cast<std::int64_t>(s.capacity));
    cols_.resize(s.columns.size());
    for (std::size_t c = 0; c < cols_.size(); ++c) cols_[c].assign(s.capacity * s.columns[c].width, 0u);
    traj_.assign(s.capacity, -1);
    step_.assign(s.capacity, 0);
    next_.assign(s.capacity, -1);
    seq_.assign(s.capacity, 0);
    prio_tree_.assign(2 * leaves_, 0.0);
    size_tree_.assign(2 * leaves_, 0.0);
  }
  host_table(const host_table&) = delete;
  host_table& operator=(const host_table&) = delete;

  [[nodiscard]] writer make_writer(std::size_t envs) {
    writer w{ctl_.new_writer(envs), {}, {}, {}};
    w.traj.assign(envs, -1);
    w.episodes.assign(envs, 0);
    w.step.assign(envs, 0);
    return w;
  }

  // Appends a rollout [horizon, envs, width] (host pointers): env e's steps go to consecutive slots.
  void insert(writer& w, const rollout& r) {
    ctl_.check_rollout(r);
    require(r.envs == w.host.envs, "rollout.envs", r.envs, std::to_string(w.host.envs) + " (the writer's envs)");
    const std::size_t n = r.horizon * r.envs;
    std::unique_lock lock(ctl_.mu_);
    ctl_.await_insert(lock, n);
    const auto a = ctl_.index_.allocate(n);
    const auto link = ctl_.links(w.host, a, r.horizon);
    for (std::int32_t s : a.evicted) clear_slot(s);
    const detail::table_ref t = ref();
    const auto H = static_cast<std::int32_t>(r.horizon);
    for (std::size_t e = 0; e < r.envs; ++e) {
      const auto slot_of = [&](std::int32_t k) { return a.slots[e * r.horizon + k]; };
      const auto done_of = [&](std::int32_t k) {
        if (ctl_.done_col_ < 0) return false;
        const std::uint32_t bits = static_cast<const std::uint32_t*>(r.columns[ctl_.done_col_])[k * r.envs + e];
        return ctl_.spec_.columns[ctl_.done_col_].type == dtype::f32 ? (bits & 0x7FFFFFFFu) != 0u : bits != 0u;
      };
      detail::insert_env_meta(t, w.traj[e], w.step[e], w.episodes[e], w.host.traj_base,
                              static_cast<std::int64_t>(r.envs), static_cast<std::int64_t>(e), link[e], H,
                              a.seq_base, slot_of, done_of);
      for (std::size_t k = 0; k < r.horizon; ++k) {
        const std::int32_t slot = slot_of(static_cast<std::int32_t>(k));
        for (std::size_t c = 0; c < cols_.size(); ++c) {
          const std::size_t wd = ctl_.spec_.columns[c].width;
          std::memcpy(&cols_[c][slot * wd], static_cast<const std::uint32_t*>(r.columns[c]) + (k * r.envs + e) * wd,
                      wd * 4);
        }
        const float p = r.priorities ? r.priorities[k * r.envs + e] : r.default_priority;
        set_leaves(slot, ctl_.leaf_of_priority(p), 1.0);
      }
    }
    for (std::int32_t s : a.slots) refresh_path(s);
    for (std::int32_t s : a.evicted) refresh_path(s);
    ctl_.cv_.notify_all();
  }

  // Draws n items and gathers windows of `length` steps from each into out (resized); counts the sample,
  // applies max_times_sampled. Waits for the rate limiter.
  void sample(const sampler& s, std::size_t n, std::size_t length, std::uint64_t seed, host_batch& out,
              unsigned threads = 1) {
    require(length >= 1 && length <= 65536, "replay window length", length, "1 .. 65536");
    out.batch = n;
    out.length = length;
    out.columns.resize(cols_.size());
    for (std::size_t c = 0; c < cols_.size(); ++c) out.columns[c].resize(n * length * ctl_.spec_.columns[c].width);
    out.mask.resize(n * length);
    std::vector<void*> dst;
    for (auto& c : out.columns) dst.push_back(c.data());
    sample_into(s, n, length, seed, out.info, dst, out.mask.data(), threads);
  }

  // sample() into caller memory (the CPU-staged baseline gathers straight into pinned buffers).
  void sample_into(const sampler& s, std::size_t n, std::size_t length, std::uint64_t seed, sample_info& info,
                   const std::vector<void*>& dst, float* mask, unsigned threads = 1) {
    require(n >= 1, "replay sample (items)", n, ">= 1");
    std::unique_lock lock(ctl_.mu_);
    ctl_.await_sample(lock, n);
    ctl_.check_sampler(s, n);
    draw(s, n, seed, info);
    gather(info.keys, length, dst, mask, threads);
    for (std::int32_t r : ctl_.index_.note_sampled(info.keys.data(), n)) {
      clear_slot(r);
      refresh_path(r);
    }
    ctl_.cv_.notify_all();
  }

  // Sets priorities of present items (keys from a sample); absent keys are skipped. Last one wins for repeats.
  void update_priorities(const std::vector<std::int32_t>& keys, const std::vector<float>& priorities) {
    require(keys.size() == priorities.size(), "update_priorities priorities", priorities.size(),
            std::to_string(keys.size()) + " (one per key)");
    std::lock_guard lock(ctl_.mu_);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const std::int32_t k = keys[i];
      require(k >= 0 && static_cast<std::size_t>(k) < ctl_.spec_.capacity, "update_priorities key", k,
              "0 .. capacity - 1");
      require(priorities[i] >= 0.0f, "update_priorities priority", priorities[i], ">= 0");
      if (seq_[k] == 0) continue;
      const double leaf = ctl_.leaf_of_priority(priorities[i]);
      ctl_.index_.set_leaf(k, leaf);
      prio_tree_[leaves_ + k] = leaf;
      refresh_path(k);
    }
  }

  [[nodiscard]] std::size_t size() {
    std::lock_guard lock(ctl_.mu_);
    return ctl_.index_.size();
  }
  [[nodiscard]] detail::counters counters() {
    std::lock_guard lock(ctl_.mu_);
    return ctl_.index_.count();
  }
  [[nodiscard]] const table_spec& spec() const noexcept { return ctl_.spec_; }
  [[nodiscard]] double total_priority() {
    std::lock_guard lock(ctl_.mu_);
    return prio_tree_[1];
  }

  // For samplers over several tables (global_sample.hpp): the table's lock, and its trees and rows, valid while
  // the lock is held.
  [[nodiscard]] std::unique_lock<std::mutex> lock() { return std::unique_lock(ctl_.mu_); }
  [[nodiscard]] detail::table_ref view() { return ref(); }

  // Copies the table out under its lock (one memcpy of the data; inserts and samples wait only for that).
  [[nodiscard]] snapshot take_snapshot() {
    snapshot s;
    s.spec = ctl_.spec_;
    std::lock_guard lock(ctl_.mu_);
    s.columns = cols_;
    s.traj = traj_;
    s.step = step_;
    s.next = next_;
    s.index = ctl_.index_.save();
    return s;
  }

  // Replaces the table's contents with a checked snapshot of the same layout; writers made before keep
  // working (their next steps start new trajectories where the old slots changed).
  void restore(snapshot s) {
    detail::check_same_layout(ctl_.spec_, s.spec, s.origin);
    detail::check_data(s);
    std::lock_guard lock(ctl_.mu_);
    ctl_.index_.restore(s.index, s.origin);
    cols_ = std::move(s.columns);
    traj_ = std::move(s.traj);
    step_ = std::move(s.step);
    next_ = std::move(s.next);
    seq_ = s.index.seq;
    rebuild_trees();
  }

 private:
  // After data and index were restored: both sum-trees from the index's leaves.
  void rebuild_trees() {
    for (std::size_t s = 0; s < ctl_.spec_.capacity; ++s) {
      const bool present = seq_[s] != 0;
      prio_tree_[leaves_ + s] = present ? ctl_.index_.leaf_of(static_cast<std::int32_t>(s)) : 0.0;
      size_tree_[leaves_ + s] = present ? 1.0 : 0.0;
    }
    for (std::int64_t node = leaves_ - 1; node >= 1; --node) {
      detail::tree_refresh(prio_tree_.data(), node);
      detail::tree_refresh(size_tree_.data(), node);
    }
    ctl_.cv_.notify_all();
  }

  detail::table_ref ref() {
    detail::table_ref t;
    for (std::size_t c = 0; c < cols_.size(); ++c)
      t.cols[c] = {cols_[c].data(), cols_[c].data(), static_cast<std::uint32_t>(ctl_.spec_.columns[c].width)};
    t.num_cols = static_cast<int>(cols_.size());
    t.split = static_cast<std::int64_t>(ctl_.spec_.capacity);
    t.capacity = static_cast<std::int32_t>(ctl_.spec_.capacity);
    t.traj = traj_.data();
    t.step = step_.data();
    t.next = next_.data();
    t.seq = seq_.data();
    t.prio_tree = prio_tree_.data();
    t.size_tree = size_tree_.data();
    t.leaves = leaves_;
    t.done_col = ctl_.done_col_;
    return t;
  }

  void set_leaves(std::int32_t slot, double prio_leaf, double size_leaf) {
    prio_tree_[leaves_ + slot] = prio_leaf;
    size_tree_[leaves_ + slot] = size_leaf;
    if (size_leaf != 0.0) ctl_.index_.set_leaf(slot, prio_leaf);
  }
  void clear_slot(std::int32_t s) {
    traj_[s] = -1;
    seq_[s] = 0;
    next_[s] = -1;
    prio_tree_[leaves_ + s] = 0.0;
    size_tree_[leaves_ + s] = 0.0;
  }
  void refresh_path(std::int32_t slot) {
    for (std::int64_t node = (leaves_ + slot) / 2; node >= 1; node /= 2) {
      detail::tree_refresh(prio_tree_.data(), node);
      detail::tree_refresh(size_tree_.data(), node);
    }
  }

  void draw(const sampler& s, std::size_t n, std::uint64_t seed, sample_info& info) {
    info.keys.resize(n);
    info.probability.resize(n);
    if (s.kind == sampler_kind::uniform || s.kind == sampler_kind::prioritized) {
      const bool prio = s.kind == sampler_kind::prioritized;
      const double* tree = prio ? prio_tree_.data() : size_tree_.data();
      require(tree[1] > 0.0, std::string(name_of(s.kind)) + " sample: total weight", tree[1],
              "> 0 (items with priority > 0)");
      for (std::size_t b = 0; b < n; ++b) {
        info.keys[b] = detail::tree_draw(tree, leaves_, detail::unit_draw(seed, b));
        info.probability[b] = detail::tree_probability(tree, leaves_, info.keys[b]);
      }
      return;
    }
    const detail::table_ref t = ref();
    const int score = s.kind == sampler_kind::top_k ? static_cast<int>(column_index(ctl_.spec_, s.score_column)) : -1;
    std::vector<std::pair<std::uint64_t, std::int32_t>> keyed(ctl_.spec_.capacity);
    for (std::size_t i = 0; i < keyed.size(); ++i) {
      const auto slot = static_cast<std::int32_t>(i);
      keyed[i] = {detail::order_key(t, static_cast<int>(s.kind), score, slot), slot};
    }
    // Highest key first, ties to the lower slot: the order a stable descending radix sort gives on the device.
    std::partial_sort(keyed.begin(), keyed.begin() + static_cast<std::ptrdiff_t>(n), keyed.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    for (std::size_t b = 0; b < n; ++b) {
      info.keys[b] = keyed[b].second;
      info.probability[b] = 1.0;
    }
  }

  void gather(const std::vector<std::int32_t>& keys, std::size_t length, const std::vector<void*>& dst, float* mask,
              unsigned threads) {
    require(dst.size() == cols_.size(), "replay gather outputs", dst.size(), std::to_string(cols_.size()));
    const detail::table_ref t = ref();
    const auto L = static_cast<std::int32_t>(length);
    const auto work = [&](std::size_t begin, std::size_t end) {
      std::vector<std::int32_t> slots(length);
      for (std::size_t b = begin; b < end; ++b) {
        const std::int32_t start = keys[b];
        slots[0] = start;
        std::int32_t i = 1;
        for (; i < L; ++i) {
          slots[i] = detail::window_slot_contiguous(t, start, i);
          if (slots[i] < 0) break;
        }
        if (i < L) detail::window_follow(t, start, i - 1, slots[i - 1], L, slots.data());
        for (std::int32_t k = 0; k < L; ++k) {
          const std::int32_t slot = slots[k];
          mask[b * length + k] = slot >= 0 ? 1.0f : 0.0f;
          for (std::size_t c = 0; c < cols_.size(); ++c) {
            const std::size_t wd = ctl_.spec_.columns[c].width;
            auto* out = static_cast<std::uint32_t*>(dst[c]) + (b * length + k) * wd;
            if (slot >= 0) std::memcpy(out, &cols_[c][slot * wd], wd * 4);
            else std::memset(out, 0, wd * 4);
          }
        }
      }
    };
    const std::size_t n = keys.size();
    if (threads <= 1 || n < 2 * threads) return work(0, n);
    std::vector<std::thread> pool;
    for (unsigned i = 0; i < threads; ++i) pool.emplace_back(work, n * i / threads, n * (i + 1) / threads);
    for (auto& th : pool) th.join();
  }

  detail::control ctl_;
  std::int64_t leaves_ = 1;
  std::vector<std::vector<std::uint32_t>> cols_;
  std::vector<std::int64_t> traj_;
  std::vector<std::int32_t> step_, next_;
  std::vector<std::uint64_t> seq_;
  std::vector<double> prio_tree_, size_tree_;
};

}  // namespace gmi::replay

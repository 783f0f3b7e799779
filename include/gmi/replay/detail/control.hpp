#pragma once
// What both table backends share: the spec, the item index, the rate limiter and the lock and condition
// variable its bounded waits use, plus the host half of a writer (the slots its envs wrote last).

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <gmi/replay/detail/algorithms.hpp>
#include <gmi/replay/detail/index.hpp>
#include <gmi/replay/rate_limiter.hpp>
#include <gmi/replay/spec.hpp>

namespace gmi::replay {

// A rollout to insert: columns[c] points at [horizon, envs, width_c] words of column c (spec order), in the
// memory the table reads (device memory for device tables); priorities: [horizon, envs] floats or null.
struct rollout {
  std::vector<const void*> columns;
  std::size_t horizon = 0, envs = 0;
  const float* priorities = nullptr;
  float default_priority = 1.0f;  // used where priorities is null
};

namespace detail {

struct writer_host_part {
  std::int64_t traj_base = 0;
  std::size_t envs = 0;
  std::vector<std::int32_t> last_slot;
  std::vector<std::uint64_t> last_seq;
};

class control {
 public:
  control(table_spec spec, rate_limiter limiter, std::chrono::milliseconds timeout)
      : spec_((validate(spec), std::move(spec))), index_(spec_), limiter_(std::move(limiter)), timeout_(timeout) {
    require(timeout.count() >= 0, "replay table timeout (ms)", timeout.count(), ">= 0");
    done_col_ = spec_.done_column.empty() ? -1 : static_cast<int>(column_index(spec_, spec_.done_column));
  }

  void check_rollout(const rollout& r) const {
    require(r.columns.size() == spec_.columns.size(), "rollout.columns", r.columns.size(),
            std::to_string(spec_.columns.size()) + " (one per table column)");
    for (std::size_t c = 0; c < r.columns.size(); ++c)
      require(r.columns[c] != nullptr, "rollout column \"" + spec_.columns[c].name + "\"", "null", "a pointer");
    require(r.horizon >= 1 && r.envs >= 1, "rollout horizon * envs", r.horizon * r.envs, ">= 1");
    require(r.horizon <= 65536, "rollout.horizon", r.horizon, "<= 65536");
    require(r.default_priority >= 0.0f, "rollout.default_priority", r.default_priority, ">= 0");
  }

  writer_host_part new_writer(std::size_t envs) {
    require(envs >= 1 && envs <= (std::size_t{1} << 24), "replay writer envs", envs, "1 .. 16777216");
    std::lock_guard lock(mu_);
    writer_host_part w;
    w.traj_base = static_cast<std::int64_t>(writers_++) << 40;
    w.envs = envs;
    w.last_slot.assign(envs, -1);
    w.last_seq.assign(envs, 0);
    return w;
  }

  // Waits (lock held by `lock`) until the limiter lets n inserts through; rate_limit_error after the timeout.
  void await_insert(std::unique_lock<std::mutex>& lock, std::size_t n) {
    limiter_.check_insert(n);
    await(lock, "insert", n, [&] { return limiter_.can_insert(n, index_.count()); });
  }
  void await_sample(std::unique_lock<std::mutex>& lock, std::size_t n) {
    limiter_.check_sample(n);
    await(lock, "sample", n, [&] { return limiter_.can_sample(n, index_.count()); });
  }

  // After allocation: per env, the slot of its previous step if that still holds it (the link to extend).
  std::vector<std::int32_t> links(writer_host_part& w, const item_index::allocation& a, std::size_t horizon) const {
    std::vector<std::int32_t> link(w.envs, -1);
    for (std::size_t e = 0; e < w.envs; ++e) {
      const std::int32_t s = w.last_slot[e];
      if (s >= 0 && index_.seq_of(s) == w.last_seq[e]) link[e] = s;
      w.last_slot[e] = a.slots[e * horizon + horizon - 1];
      w.last_seq[e] = a.seq_base + e * horizon + horizon;
    }
    return link;
  }

  [[nodiscard]] double leaf_of_priority(float p) const {
    return spec_.priority_exponent == 1.0 ? static_cast<double>(p)
                                          : std::pow(static_cast<double>(p), spec_.priority_exponent);
  }

  void check_sampler(const sampler& s, std::size_t n) const {
    if (s.kind == sampler_kind::top_k) {
      const std::size_t c = column_index(spec_, s.score_column);
      require(spec_.columns[c].width == 1 && spec_.columns[c].type == dtype::f32,
              "top_k score column \"" + s.score_column + "\" width", spec_.columns[c].width, "1 (an f32 scalar)");
    }
    if (s.ordered())
      require(n <= index_.size(), std::string(name_of(s.kind)) + " sample (items)", n,
              "<= the table's size " + std::to_string(index_.size()) + " (ordered samplers draw distinct items)");
  }

  std::mutex mu_;
  std::condition_variable cv_;
  table_spec spec_;
  item_index index_;
  rate_limiter limiter_;
  std::chrono::milliseconds timeout_;
  int done_col_ = -1;
  std::uint64_t writers_ = 0;

 private:
  template <class Ready>
  void await(std::unique_lock<std::mutex>& lock, std::string_view op, std::size_t n, Ready ready) {
    const auto start = std::chrono::steady_clock::now();
    if (cv_.wait_for(lock, timeout_, ready)) return;
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    throw rate_limit_error(limiter_.stuck(op, n, waited, index_.count()));
  }
};

}  // namespace detail
}  // namespace gmi::replay

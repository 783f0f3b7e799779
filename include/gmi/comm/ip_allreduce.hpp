#pragma once
// The paper's inter-process (IP) primitive: a CPU-staged allreduce through shared memory. Every rank copies
// its buffer into its slot of one segment, the ranks sum disjoint chunks into a result slot, all copy it
// back. The baseline the device-side reduce is measured against, and a fallback where IPC is impossible (MIG).

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <type_traits>

#include <gmi/comm/shm_segment.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/core/error.hpp>

namespace gmi::comm {

// The element types the reductions of comm/ know, with the names error messages print.
enum class dtype : std::uint32_t { f32 = 1, f64 = 2, i32 = 3, i64 = 4 };
inline const char* dtype_name(dtype d) {
  switch (d) {
    case dtype::f32: return "f32";
    case dtype::f64: return "f64";
    case dtype::i32: return "i32";
    case dtype::i64: return "i64";
  }
  return "unknown";
}
template <class T>
constexpr dtype dtype_of() {
  if constexpr (std::is_same_v<T, float>) return dtype::f32;
  else if constexpr (std::is_same_v<T, double>) return dtype::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>) return dtype::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return dtype::i64;
  else static_assert(!sizeof(T), "gmi::comm reduces float, double, int32_t and int64_t only");
}

inline constexpr int max_group_ranks = 64;

// What a host allreduce combines the ranks' elements with.
enum class reduce_op { sum, max, min };

namespace detail {
struct group_control {
  alignas(64) std::atomic<std::uint32_t> arrived;
  alignas(64) std::atomic<std::uint64_t> generation;
  alignas(64) std::atomic<std::uint32_t> broken;
  char reason[192];
  std::uint32_t ranks;
  std::uint64_t slot_bytes;
  std::atomic<std::int32_t> pids[max_group_ranks];
  std::atomic<std::uint64_t> counts[max_group_ranks];
  std::atomic<std::uint32_t> dtypes[max_group_ranks];
};
inline constexpr std::size_t group_control_bytes = (sizeof(group_control) + 127) / 128 * 128;

// A barrier over the ranks of a group_control, with liveness of every rank and the broken flag checked
// while it waits.
class group_barrier {
 public:
  group_barrier() = default;
  group_barrier(group_control* c, std::string name) : c_(c), name_(std::move(name)) {}

  void arrive_and_wait(milliseconds timeout) {
    throw_if_broken();
    const std::uint64_t gen = c_->generation.load(std::memory_order_acquire);
    if (c_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == c_->ranks) {
      c_->arrived.store(0, std::memory_order_relaxed);
      c_->generation.store(gen + 1, std::memory_order_release);
      return;
    }
    try {
      bounded_wait([&] { return c_->generation.load(std::memory_order_acquire) != gen || broken(); },
                   [&] { check_peers(); }, timeout, name_ + ": barrier");
    } catch (const comm_error& e) {
      mark_broken(e.what());  // the others must not wait for us either
      throw;
    }
    throw_if_broken();
  }
  [[nodiscard]] bool broken() const noexcept { return c_ && c_->broken.load(std::memory_order_acquire) != 0; }
  void mark_broken(const std::string& why) noexcept {
    if (!c_) return;
    std::uint32_t expected = 0;
    if (c_->broken.compare_exchange_strong(expected, 2, std::memory_order_acq_rel)) {
      const std::size_t n = std::min(why.size(), sizeof(c_->reason) - 1);
      std::memcpy(c_->reason, why.data(), n);
      c_->reason[n] = '\0';
      c_->broken.store(1, std::memory_order_release);
    }
  }
  void throw_if_broken() const {
    if (!broken()) return;
    while (c_->broken.load(std::memory_order_acquire) == 2) {}  // reason being written
    throw comm_error(name_ + ": group is broken: " + std::string(c_->reason));
  }
  // `check` also runs while this barrier waits (the caller's own liveness checks; it throws to give up).
  void set_wait_check(std::function<void()> check) { wait_check_ = std::move(check); }
  void check_peers() {
    throw_if_broken();
    if (wait_check_) {
      try {
        wait_check_();
      } catch (const std::exception& e) {
        mark_broken(e.what());
        throw;
      }
    }
    for (std::uint32_t r = 0; r < c_->ranks; ++r) {
      const int pid = c_->pids[r].load(std::memory_order_acquire);
      if (pid != 0 && !process_alive(pid)) {
        mark_broken("rank " + std::to_string(r) + " (pid " + std::to_string(pid) + ") died");
        throw_if_broken();
      }
    }
  }

 private:
  group_control* c_ = nullptr;
  std::string name_;
  std::function<void()> wait_check_;
};
}  // namespace detail

// One rank's handle on a CPU-staged allreduce group of `ranks` processes on one host.
class ip_allreduce {
 public:
  // Rank 0 creates the segment for up to max_bytes per rank; the others open it by tag.
  static ip_allreduce create(std::string_view tag, int ranks, std::size_t max_bytes) {
    require(ranks >= 1 && ranks <= max_group_ranks, "ip_allreduce ranks", ranks, "1.." + std::to_string(max_group_ranks));
    ip_allreduce g;
    const std::size_t slot = (max_bytes + 127) / 128 * 128;
    // Built before the segment is marked ready: an opener reads ranks and slot_bytes at once.
    g.segment_ = shm_segment::create(tag, detail::group_control_bytes + slot * (ranks + 1), [&](void* p, std::size_t) {
      auto* c = new (p) detail::group_control{};
      c->ranks = static_cast<std::uint32_t>(ranks);
      c->slot_bytes = slot;
    });
    g.attach(0);
    return g;
  }
  // while_waiting: called while rank 0 has not created the group yet (see shm_segment::open).
  static ip_allreduce open(std::string_view tag, int rank, milliseconds timeout = default_timeout(),
                           const std::function<void()>& while_waiting = {}) {
    ip_allreduce g;
    g.segment_ = shm_segment::open(tag, timeout, while_waiting);
    g.attach(rank);
    return g;
  }

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int ranks() const noexcept { return static_cast<int>(c_->ranks); }
  [[nodiscard]] std::size_t max_bytes() const noexcept { return c_->slot_bytes; }

  // This rank's staging slot (copy a device buffer straight into it with cudaMemcpy).
  template <class T>
  [[nodiscard]] std::span<T> stage(std::size_t count) {
    check_bytes(count * sizeof(T));
    return {reinterpret_cast<T*>(slot(rank_)), count};
  }
  // After every rank staged `count` elements: checks sizes and types agree, combines them (in rank order, so the
  // result does not depend on arrival order), and returns the result (valid until finish()). Ranks with
  // different counts or types all get a comm_error naming both.
  template <class T>
  std::span<const T> reduce(std::size_t count, milliseconds timeout = default_timeout(), reduce_op op = reduce_op::sum) {
    c_->counts[rank_].store(count, std::memory_order_relaxed);
    c_->dtypes[rank_].store(static_cast<std::uint32_t>(dtype_of<T>()), std::memory_order_relaxed);
    barrier_.arrive_and_wait(timeout);
    for (std::uint32_t r = 0; r < c_->ranks; ++r) {
      const auto n = c_->counts[r].load(std::memory_order_relaxed);
      const auto d = static_cast<dtype>(c_->dtypes[r].load(std::memory_order_relaxed));
      if (n != count || d != dtype_of<T>()) {
        const std::string why = got_need("ip_allreduce rank " + std::to_string(r) + " buffer",
                                         std::to_string(n) + " x " + dtype_name(d),
                                         std::to_string(count) + " x " + dtype_name(dtype_of<T>()) + " as on rank " +
                                             std::to_string(rank_));
        barrier_.mark_broken(why);
        throw comm_error(segment_.name() + ": " + why);
      }
    }
    // Each rank sums its own chunk: the CPU side of the paper's IP path, parallel over the ranks' cores.
    const std::size_t per = (count + c_->ranks - 1) / c_->ranks;
    const std::size_t begin = std::min(count, per * rank_), end = std::min(count, begin + per);
    T* out = reinterpret_cast<T*>(slot(c_->ranks));
    if (begin < end) {
      std::memcpy(out + begin, reinterpret_cast<const T*>(slot(0)) + begin, (end - begin) * sizeof(T));
      for (std::uint32_t r = 1; r < c_->ranks; ++r) {
        const T* in = reinterpret_cast<const T*>(slot(r));
        switch (op) {
          case reduce_op::sum: for (std::size_t i = begin; i < end; ++i) out[i] += in[i]; break;
          case reduce_op::max: for (std::size_t i = begin; i < end; ++i) out[i] = std::max(out[i], in[i]); break;
          case reduce_op::min: for (std::size_t i = begin; i < end; ++i) out[i] = std::min(out[i], in[i]); break;
        }
      }
    }
    barrier_.arrive_and_wait(timeout);
    return {out, count};
  }
  // Every rank has read the result: the slots may be reused.
  void finish(milliseconds timeout = default_timeout()) { barrier_.arrive_and_wait(timeout); }

  // In-place allreduce of a host buffer; one larger than max_bytes goes in pieces.
  template <class T>
  void allreduce(std::span<T> data, milliseconds timeout = default_timeout(), reduce_op op = reduce_op::sum) {
    const std::size_t per = std::max<std::size_t>(1, c_->slot_bytes / sizeof(T));
    std::size_t at = 0;
    do {  // an empty buffer too: every rank still meets the others once
      allreduce_piece(data.subspan(at, std::min(per, data.size() - at)), timeout, op);
      at += per;
    } while (at < data.size());
  }

  // Runs `check` while this rank waits for the others (see group_barrier::set_wait_check).
  void set_wait_check(std::function<void()> check) { barrier_.set_wait_check(std::move(check)); }

  [[nodiscard]] bool broken() const noexcept { return barrier_.broken(); }
  void mark_broken(const std::string& why) noexcept { barrier_.mark_broken(why); }
  [[nodiscard]] shm_segment& segment() noexcept { return segment_; }

 private:
  template <class T>
  void allreduce_piece(std::span<T> data, milliseconds timeout, reduce_op op) {
    auto s = stage<T>(data.size());
    std::memcpy(s.data(), data.data(), data.size_bytes());
    auto r = reduce<T>(data.size(), timeout, op);
    std::memcpy(data.data(), r.data(), data.size_bytes());
    finish(timeout);
  }

  void attach(int rank) {
    c_ = static_cast<detail::group_control*>(segment_.data());
    require(rank >= 0 && static_cast<std::uint32_t>(rank) < c_->ranks, "ip_allreduce rank", rank,
            "0.." + std::to_string(c_->ranks - 1));
    rank_ = rank;
    barrier_ = detail::group_barrier(c_, segment_.name());
    c_->pids[rank].store(::getpid(), std::memory_order_release);
  }
  void check_bytes(std::size_t bytes) const {
    if (bytes > c_->slot_bytes) {
      throw comm_error(got_need(segment_.name() + ": allreduce bytes", bytes, "<= " + std::to_string(c_->slot_bytes) + " (the group's max_bytes)"));
    }
  }
  std::byte* slot(std::uint32_t r) const noexcept {
    return static_cast<std::byte*>(segment_.data()) + detail::group_control_bytes + std::size_t{r} * c_->slot_bytes;
  }

  shm_segment segment_;
  detail::group_control* c_ = nullptr;
  detail::group_barrier barrier_;
  int rank_ = 0;
};

}  // namespace gmi::comm

#pragma once
// An in-process group for synced PPO tests: W trainers in W threads sum through a shared table, every rank adding
// the ranks' arrays in rank order, so all get the same sums bit for bit (what gmi::rl::ppo_sync asks of a
// transport). run_ranks() runs one function per rank and rethrows the first failure; a rank that fails leaves
// the group broken, so the others throw at their next sum instead of waiting forever.

#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gmi/rl/ppo_sync.hpp>

namespace gmi::test {

class thread_group {
 public:
  explicit thread_group(int world)
      : world_(world), barrier_(world), slots_(static_cast<std::size_t>(world)), phases_(static_cast<std::size_t>(world)) {}
  thread_group(const thread_group&) = delete;
  thread_group& operator=(const thread_group&) = delete;

  [[nodiscard]] int world() const noexcept { return world_; }

  // In place: data = the sum over ranks (in rank order) of every rank's data. Every rank calls it with the same n.
  template <class T>
  void sum(int rank, T* data, std::size_t n) {
    slots_[static_cast<std::size_t>(rank)] = {data, n};
    wait(rank);
    std::vector<T> out(n);
    for (std::size_t r = 0; r < slots_.size(); ++r) {
      if (slots_[r].n != n) throw std::runtime_error("thread_group: ranks summed arrays of different sizes");
      const T* x = static_cast<const T*>(slots_[r].data);
      for (std::size_t i = 0; i < n; ++i) out[i] = r == 0 ? x[i] : out[i] + x[i];
    }
    wait(rank);  // every rank has read every slot: now each may overwrite its own
    for (std::size_t i = 0; i < n; ++i) data[i] = out[i];
  }

  // The host-side sync of `rank` (exec::host trainers).
  [[nodiscard]] gmi::rl::ppo_sync host_sync(int rank) {
    gmi::rl::ppo_sync s;
    s.rank = rank;
    s.world = world_;
    s.sum_host = [this, rank](float* d, std::size_t n) { sum(rank, d, n); };
    s.sum_stats = [this, rank](double* d, std::size_t n) { sum(rank, d, n); };
    return s;
  }

  // Calls f(rank) on one thread per rank and rethrows the first exception once all threads are done.
  void run_ranks(const std::function<void(int)>& f) {
    std::exception_ptr first;
    std::mutex m;
    std::vector<std::jthread> threads;
    for (int r = 0; r < world_; ++r) {
      threads.emplace_back([&, r] {
        try {
          f(r);
        } catch (...) {
          {
            std::lock_guard lock(m);
            if (!first) first = std::current_exception();
          }
          leave(r);
        }
      });
    }
    threads.clear();  // joins
    if (first) std::rethrow_exception(first);
  }

 private:
  struct slot {
    const void* data = nullptr;
    std::size_t n = 0;
  };

  // Throws if a rank left during this phase (its slot was never filled); a rank that fails after the phase
  // completed is noticed at the next one.
  void wait(int rank) {
    const std::int64_t phase = phases_[static_cast<std::size_t>(rank)]++;
    barrier_.arrive_and_wait();
    if (left_at_.load() <= phase) throw std::runtime_error("thread_group: another rank failed");
  }
  // A failed rank stops counting at the barrier, and the others throw at their next sum.
  void leave(int rank) {
    const std::int64_t phase = phases_[static_cast<std::size_t>(rank)];
    std::int64_t seen = left_at_.load();
    while (phase < seen && !left_at_.compare_exchange_weak(seen, phase)) {
    }
    barrier_.arrive_and_drop();
  }

  int world_;
  std::barrier<> barrier_;
  std::vector<slot> slots_;
  std::vector<std::int64_t> phases_;  // barrier phases each rank has entered (each rank touches its own)
  std::atomic<std::int64_t> left_at_{std::numeric_limits<std::int64_t>::max()};  // earliest phase a rank left in
};

}  // namespace gmi::test

#pragma once
// The threads CPU actors step on: one thread per core, each pinned to its core for its whole life, so the
// environments it owns (a fixed slice of every batch) stay in that core's caches and on its NUMA node.
// exec::thread_pool hands chunks to whichever thread is free, which is right for stateless loops but moves an
// environment's state between cores from step to step; actors need the fixed owner.
// Also the hand-off counter the double-buffered loop waits on (signalled from threads or CUDA host callbacks).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

#include <gmi/actors/cores.hpp>
#include <gmi/core/error.hpp>

namespace gmi::actors {

// A count that one side raises and the other waits to reach. signal() is wait-free and safe from a CUDA host
// callback (cudaLaunchHostFunc) or any thread; wait_until spins briefly, then yields, then sleeps, and gives up
// at its deadline or when stop is raised.
class handoff {
 public:
  void signal() noexcept { count_.fetch_add(1, std::memory_order_release); }
  [[nodiscard]] std::uint64_t count() const noexcept { return count_.load(std::memory_order_acquire); }

  // The form cudaLaunchHostFunc takes: cudaLaunchHostFunc(stream, &handoff::signal_callback, &h).
  static void signal_callback(void* h) noexcept { static_cast<handoff*>(h)->signal(); }

  // True once count() >= target; false when the deadline passed or stop was raised first.
  bool wait_until(std::uint64_t target, std::chrono::steady_clock::time_point deadline,
                  const std::atomic<bool>& stop) const noexcept {
    for (std::uint64_t spin = 0;; ++spin) {
      if (count() >= target) return true;
      if (stop.load(std::memory_order_relaxed)) return false;
      if (spin < 4096) {
        pause();
      } else if (spin < 16384) {
        std::this_thread::yield();
      } else {
        if (std::chrono::steady_clock::now() > deadline) return count() >= target;
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      if ((spin & 1023) == 1023 && std::chrono::steady_clock::now() > deadline) return count() >= target;
    }
  }

 private:
  static void pause() noexcept {
#if defined(__x86_64__) || defined(_M_X64)
    _mm_pause();
#endif
  }
  std::atomic<std::uint64_t> count_{0};
};

// One pinned thread per core. launch(job) starts job(t) on every thread t (t = 0..size()-1) and returns at once;
// join() waits for all of them (within the timeout) and rethrows the first exception. A failing job raises
// stop(), which the hand-off waits of the other jobs see.
class actor_threads {
 public:
  // Refuses an empty or impossible core list in one line (see choose_cores).
  explicit actor_threads(std::vector<int> cores) : cores_(std::move(cores)) {
    require(!cores_.empty(), "actor cores", cores_.size(), ">= 1");
    const auto allowed = available_cores();
    for (int c : cores_) {
      require(std::find(allowed.begin(), allowed.end(), c) != allowed.end(), "actor core", c,
              "one of the " + std::to_string(allowed.size()) + " cores this process may run on");
    }
    threads_.reserve(cores_.size());
    for (std::size_t t = 0; t < cores_.size(); ++t) threads_.emplace_back([this, t] { work(int(t)); });
  }
  explicit actor_threads(int count) : actor_threads(choose_cores(count)) {}
  actor_threads(const actor_threads&) = delete;
  actor_threads& operator=(const actor_threads&) = delete;
  ~actor_threads() {
    {
      std::lock_guard lock(mutex_);
      quitting_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

  [[nodiscard]] int size() const noexcept { return int(threads_.size()); }
  [[nodiscard]] const std::vector<int>& cores() const noexcept { return cores_; }
  [[nodiscard]] const std::atomic<bool>& stop_flag() const noexcept { return stop_; }
  void stop() noexcept { stop_.store(true); }

  // Starts job(t) on every thread; one job at a time (launch again only after join).
  void launch(std::function<void(int)> job) {
    std::lock_guard lock(mutex_);
    require(!job_, "actor_threads::launch while a job runs", "a second job", "join() before the next launch");
    job_ = std::move(job);
    done_ = 0;
    error_ = nullptr;
    stop_.store(false);
    ++generation_;
    wake_.notify_all();
  }

  // Waits for the job on every thread; throws gmi::error if they are not done by the timeout (after raising
  // stop so that they return), and rethrows the first exception a job threw.
  void join(std::chrono::milliseconds timeout = std::chrono::minutes(10)) {
    std::unique_lock lock(mutex_);
    if (!job_) return;
    const bool done = finished_.wait_for(lock, timeout, [&] { return done_ == threads_.size(); });
    if (!done) {
      stop_.store(true);
      finished_.wait(lock, [&] { return done_ == threads_.size(); });  // jobs return once they see stop
    }
    job_ = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    if (!done) {
      throw gmi::error(got_need("actor threads' job", "not done after " + std::to_string(timeout.count()) + " ms",
                                "done within the timeout"));
    }
  }

  // launch + join.
  void run(std::function<void(int)> job, std::chrono::milliseconds timeout = std::chrono::minutes(10)) {
    launch(std::move(job));
    join(timeout);
  }

 private:
  void work(int t) {
    try {
      pin_this_thread(cores_[std::size_t(t)]);
    } catch (...) {
      // Checked against available_cores above; a failure here leaves the thread unpinned but working.
    }
    std::uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)>* job = nullptr;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return quitting_ || (job_ && generation_ != seen); });
        if (quitting_) return;
        seen = generation_;
        job = &job_;
      }
      std::exception_ptr failure;
      try {
        (*job)(t);
      } catch (...) {
        failure = std::current_exception();
        stop_.store(true);
      }
      std::lock_guard lock(mutex_);
      if (failure && !error_) error_ = failure;
      if (++done_ == threads_.size()) finished_.notify_all();
    }
  }

  std::vector<int> cores_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::function<void(int)> job_;
  std::size_t done_ = 0;
  std::uint64_t generation_ = 0;
  std::exception_ptr error_;
  std::atomic<bool> stop_{false};
  bool quitting_ = false;
};

}  // namespace gmi::actors

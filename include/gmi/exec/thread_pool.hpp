#pragma once
// A fixed set of worker threads that runs one indexed job at a time: run(chunks, job) calls job(c) for every
// chunk c, on the workers and the calling thread, and returns when all are done (rethrowing the first
// exception). Concurrent run() calls on one pool are serialized; give each host GMI its own pool.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace gmi::exec::detail {

class thread_pool {
 public:
  // workers: threads besides the caller (0: hardware_concurrency - 1).
  explicit thread_pool(unsigned workers = 0) {
    if (workers == 0) workers = std::max(1u, std::thread::hardware_concurrency()) - 1;
    threads_.reserve(workers);
    for (unsigned i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;
  ~thread_pool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

  [[nodiscard]] unsigned concurrency() const noexcept { return static_cast<unsigned>(threads_.size()) + 1; }

  void run(std::size_t chunks, const std::function<void(std::size_t)>& job) {
    if (chunks == 0) return;
    std::lock_guard serial(run_mutex_);
    if (chunks == 1 || threads_.empty()) {
      for (std::size_t c = 0; c < chunks; ++c) job(c);
      return;
    }
    {
      std::lock_guard lock(mutex_);
      job_ = &job;
      chunks_ = chunks;
      next_.store(0);
      done_ = 0;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    drain();
    std::unique_lock lock(mutex_);
    finished_.wait(lock, [&] { return done_ == chunks_; });
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void drain() {
    std::size_t completed = 0;
    std::exception_ptr failure;
    for (std::size_t c = next_.fetch_add(1); c < chunks_; c = next_.fetch_add(1)) {
      try {
        (*job_)(c);
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
      ++completed;
    }
    if (completed == 0) return;
    std::lock_guard lock(mutex_);
    if (failure && !error_) error_ = failure;
    done_ += completed;
    if (done_ == chunks_) finished_.notify_all();
  }

  void work() {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || (generation_ != seen && job_ != nullptr); });
        if (stopping_) return;
        seen = generation_;
      }
      drain();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex run_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  const std::function<void(std::size_t)>* job_ = nullptr;
  std::size_t chunks_ = 0;
  std::atomic<std::size_t> next_{0};
  std::size_t done_ = 0;
  std::uint64_t generation_ = 0;
  std::exception_ptr error_;
  bool stopping_ = false;
};

// The process-wide pool used by exec::host{} without a pool of its own.
inline const std::shared_ptr<thread_pool>& shared_pool() {
  static const auto pool = std::make_shared<thread_pool>();
  return pool;
}

}  // namespace gmi::exec::detail

namespace gmi::exec {
using detail::thread_pool;  // also partition::cpu_cores's core sets
}  // namespace gmi::exec

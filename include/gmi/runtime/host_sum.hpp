#pragma once
// host_sum: the element-wise sum of one array per GMI, for the host (cpu_cores) GMIs of a multi-host run. The
// GMIs of a host meet in memory; the last to arrive sums their arrays as a pairwise tree in rank order (the
// intra-host allreduce), hands the host's sum to `cross` (comm::mpi_link::allgather: every host's sum, in host
// order), sums those by the same tree and gives the result back to every GMI. The tree splits n arrays at the
// largest power of two below n, so with a power-of-two number of GMIs a host, the hosts' tree over their sums is
// the one-host tree over all GMIs: the sums, and so the weights, are bit for bit those of one host with the same
// GMIs. Every wait is bounded and checks a stop predicate; a failure breaks the group, and every later call throws.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <typeinfo>
#include <vector>

#include <gmi/core/error.hpp>

namespace gmi::runtime {

// out = the pairwise tree sum of rows[0..k) (each n long); out may not alias a row.
template <class T>
void tree_sum(const std::vector<const T*>& rows, std::size_t n, T* out) {
  const std::size_t k = rows.size();
  require(k >= 1, "tree_sum rows", k, ">= 1");
  if (k == 1) {
    std::memcpy(out, rows[0], n * sizeof(T));
    return;
  }
  std::size_t split = 1;
  while (split * 2 < k) split *= 2;
  tree_sum(std::vector<const T*>(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(split)), n, out);
  std::vector<T> right(n);
  tree_sum(std::vector<const T*>(rows.begin() + static_cast<std::ptrdiff_t>(split), rows.end()), n, right.data());
  for (std::size_t i = 0; i < n; ++i) out[i] += right[i];
}

class host_sum {
 public:
  // Every host's `bytes` bytes into `all` (hosts x bytes); stop() true means give up (throw).
  using cross_fn = std::function<void(const void* mine, void* all, std::size_t bytes, const std::function<bool()>& stop)>;

  // `gmis` GMIs on this host; `hosts` hosts (1: no cross step).
  host_sum(int gmis, int hosts, cross_fn cross, std::chrono::milliseconds timeout)
      : gmis_(gmis), hosts_(hosts), cross_(std::move(cross)), timeout_(timeout), rows_(static_cast<std::size_t>(gmis)) {
    require(gmis >= 1, "host_sum GMIs", gmis, ">= 1");
    require(hosts >= 1, "host_sum hosts", hosts, ">= 1");
    require(hosts == 1 || static_cast<bool>(cross_), "host_sum cross-host step", "none", "a callable for hosts > 1");
  }

  // In place: data = the sum over every GMI of every host (across false: of this host only). GMI `local` of this
  // host calls it; all call it the same number of times with the same T, n and across.
  template <class T>
  void sum(int local, T* data, std::size_t n, const std::function<bool()>& stop, bool across = true) {
    std::unique_lock lock(mutex_);
    check_broken();
    require(local >= 0 && local < gmis_, "host_sum GMI", local, "0.." + std::to_string(gmis_ - 1));
    rows_[static_cast<std::size_t>(local)] = {data, n, &typeid(T)};
    const std::uint64_t gen = generation_;
    if (++arrived_ < gmis_) {
      const auto deadline = std::chrono::steady_clock::now() + timeout_;
      while (generation_ == gen) {
        check_broken();
        if (stop && stop()) breaks("the run is being torn down");
        if (std::chrono::steady_clock::now() > deadline) {
          breaks("host_sum: timed out after " + std::to_string(timeout_.count()) + " ms waiting for this host's " +
                 std::to_string(gmis_ - arrived_) + " other GMIs");
        }
        changed_.wait_for(lock, std::chrono::milliseconds(20));
      }
      // The round completed: its result holds even when a GMI broke the group since (the next round can not
      // start without this GMI), so a save's sum that every GMI reached completes on every GMI.
      std::memcpy(data, result_.data(), n * sizeof(T));
      return;
    }
    // The last to arrive computes: first this host, then across hosts (the lock is held: the others wait).
    arrived_ = 0;
    try {
      std::vector<const T*> mine;
      for (std::size_t g = 0; g < rows_.size(); ++g) {
        if (rows_[g].n != n || *rows_[g].type != typeid(T)) {
          breaks("host_sum: GMI " + std::to_string(g) + " summed " + std::to_string(rows_[g].n) + " values, GMI " +
                 std::to_string(local) + " " + std::to_string(n) + " (every GMI must call the same sums)");
        }
        mine.push_back(static_cast<const T*>(rows_[g].data));
      }
      result_.resize(n * sizeof(T));
      T* out = reinterpret_cast<T*>(result_.data());
      tree_sum(mine, n, out);
      if (hosts_ > 1 && across) {
        std::vector<T> all(static_cast<std::size_t>(hosts_) * n);
        cross_(out, all.data(), n * sizeof(T), stop);
        std::vector<const T*> per_host;
        for (int h = 0; h < hosts_; ++h) per_host.push_back(all.data() + static_cast<std::size_t>(h) * n);
        tree_sum(per_host, n, out);
      }
    } catch (const std::exception& e) {
      if (broken_.empty()) broken_ = e.what();
      changed_.notify_all();
      throw;
    }
    ++generation_;
    changed_.notify_all();
    std::memcpy(data, result_.data(), n * sizeof(T));
  }

  // Makes every waiting and later call throw `why` (a GMI failed; the run ends).
  void break_group(const std::string& why) {
    std::lock_guard lock(mutex_);
    if (broken_.empty()) broken_ = why;
    changed_.notify_all();
  }

 private:
  struct row {
    const void* data = nullptr;
    std::size_t n = 0;
    const std::type_info* type = &typeid(void);
  };
  void check_broken() const {
    if (!broken_.empty()) throw comm_error("host sum: " + broken_);
  }
  [[noreturn]] void breaks(const std::string& why) {
    if (broken_.empty()) broken_ = why;
    changed_.notify_all();
    throw comm_error("host sum: " + broken_);
  }

  int gmis_, hosts_;
  cross_fn cross_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<row> rows_;
  std::vector<unsigned char> result_;
  int arrived_ = 0;
  std::uint64_t generation_ = 0;
  std::string broken_;
};

}  // namespace gmi::runtime

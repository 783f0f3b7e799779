#pragma once
// partition::cpu_cores: host GMIs, each on its own set of CPU cores with its own exec::host thread pool, so CI
// machines without a GPU exercise the same runtime (launcher, supervisor, comm) as GPU partitions.

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/status.hpp>
#include <gmi/exec/thread_pool.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/partition/none.hpp>

namespace gmi::partition {

struct cpu_cores {
  using partition_concept = partition_tag;
  static constexpr const char* name = "cpu_cores";

  struct config {
    int gmis = 1;
    std::vector<int> cores;  // the cores to split; empty: those this process may run on (sched_getaffinity)
  };

  // The cores this process may run on.
  static std::vector<int> available_cores() {
    std::vector<int> out;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
      for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &set)) out.push_back(c);
      }
    }
    if (out.empty()) {
      for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()); ++c) out.push_back(static_cast<int>(c));
    }
    return out;
  }

  static gmi::status can_implement(const config& c) noexcept {
    try {
      const auto cores = c.cores.empty() ? available_cores() : c.cores;
      if (c.gmis < 1 || c.gmis > static_cast<int>(cores.size())) {
        return gmi::status::invalid(gmi::got_need("gmis", c.gmis,
                                                  "1.." + std::to_string(cores.size()) + " (one core at least each; " +
                                                      std::to_string(cores.size()) + " cores available)"));
      }
      return gmi::status::ok();
    } catch (const std::exception& e) {
      return gmi::status::failed(e.what());
    }
  }
  static gmi::status can_implement(int gmis) noexcept { return can_implement(config{gmis, {}}); }

  // Contiguous, disjoint core sets, as equal as possible (the first ones get one more when it does not divide).
  static std::vector<std::vector<int>> core_sets(const config& c) {
    if (gmi::status st = can_implement(c); !st) throw gmi::config_error(st.message());
    const auto cores = c.cores.empty() ? available_cores() : c.cores;
    std::vector<std::vector<int>> out(static_cast<std::size_t>(c.gmis));
    const std::size_t per = cores.size() / out.size(), extra = cores.size() % out.size();
    std::size_t at = 0;
    for (std::size_t g = 0; g < out.size(); ++g) {
      const std::size_t n = per + (g < extra ? 1 : 0);
      out[g].assign(cores.begin() + static_cast<std::ptrdiff_t>(at), cores.begin() + static_cast<std::ptrdiff_t>(at + n));
      at += n;
    }
    return out;
  }

  // A GMI thread's hold on its cores: pins the calling thread to them (restored on destruction) and owns an
  // exec::host policy whose pool has one thread per core; the pool's workers are started after pinning, so they
  // inherit the core set.
  class binding {
   public:
    explicit binding(std::vector<int> cores) : cores_(std::move(cores)) {
      gmi::require(!cores_.empty(), "cpu_cores binding cores", cores_.size(), ">= 1");
      pthread_getaffinity_np(pthread_self(), sizeof previous_, &previous_);
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : cores_) CPU_SET(c, &set);
      if (const int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set); e != 0) {
        throw gmi::config_error(gmi::got_need("cpu_cores binding", "core set of " + std::to_string(cores_.size()),
                                              "cores this process may use (pthread_setaffinity_np failed)"));
      }
      pool_ = std::make_shared<gmi::exec::thread_pool>(
          static_cast<unsigned>(cores_.size() > 1 ? cores_.size() - 1 : 1));  // 0 would mean "every core"
      policy_.threads = static_cast<unsigned>(cores_.size());
      policy_.pool = pool_;
    }
    binding(const binding&) = delete;
    binding& operator=(const binding&) = delete;
    ~binding() {
      policy_.pool.reset();
      pool_.reset();
      pthread_setaffinity_np(pthread_self(), sizeof previous_, &previous_);
    }

    [[nodiscard]] const std::vector<int>& cores() const noexcept { return cores_; }
    [[nodiscard]] const gmi::exec::host& policy() const noexcept { return policy_; }

   private:
    std::vector<int> cores_;
    cpu_set_t previous_{};
    std::shared_ptr<gmi::exec::thread_pool> pool_;
    gmi::exec::host policy_;
  };
};

}  // namespace gmi::partition

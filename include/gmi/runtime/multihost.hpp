#pragma once
// run_on_hosts: one gmi launcher a host (mpirun -np H, srun, or no launcher for one host) runs its host GMIs
// (partition::cpu_cores: a thread each, on its own cores when there are enough) with global ranks, host GMI k of
// host h being rank h * gmis + k. The GMIs sum through runtime::host_sum: in memory within the host, then across
// hosts through comm::mpi_link. The launcher supervises its GMIs (thread_group) and, through the link, the other
// hosts: a lost host (killed, hung, unreachable: no heartbeat for heartbeat_timeout) or a host whose run failed
// ends the run on every host with one line naming the host and its GMIs.

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <gmi/comm/mpi_link.hpp>
#include <gmi/core/error.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/partition/cpu_cores.hpp>
#include <gmi/runtime/host_sum.hpp>
#include <gmi/runtime/hosts.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace gmi::runtime {

struct multihost_options {
  int gmis = 1;                 // host GMIs on every host (the same on each)
  std::string host_id;          // overrides this host's id (hosts.hpp); empty: hostname[.local rank]
  bool pin = true;              // each GMI on its own cores when the host has at least `gmis` cores
  std::chrono::milliseconds timeout = std::chrono::milliseconds(60000);  // a sum, start to end
  comm::mpi_link_options link;  // heartbeats between hosts
};

// What a GMI's function gets besides its context: its global place and the sum over every GMI of every host.
class host_gmi {
 public:
  host_gmi(const context& ctx, host_sum& sums, const exec::host& policy) : ctx_(ctx), sums_(sums), policy_(policy) {}
  [[nodiscard]] int rank() const noexcept { return ctx_.id().global_rank(); }
  [[nodiscard]] int world() const noexcept { return ctx_.id().global_size(); }
  [[nodiscard]] int host() const noexcept { return std::max(0, ctx_.id().host); }
  [[nodiscard]] const exec::host& policy() const noexcept { return policy_; }
  // In place: data = the element-wise sum of every GMI's data (same n and order of calls on every GMI).
  template <class T>
  void sum(T* data, std::size_t n) {
    sums_.sum(ctx_.rank(), data, n, [this] { return ctx_.stop_requested(); });
  }
  // In place: the sum over this host's GMIs only (every GMI of the host calls it at the same point).
  template <class T>
  void sum_this_host(T* data, std::size_t n) {
    sums_.sum(ctx_.rank(), data, n, [this] { return ctx_.stop_requested(); }, false);
  }

 private:
  const context& ctx_;
  host_sum& sums_;
  const exec::host& policy_;
};

struct multihost_report {
  host_info host;
  run_report run;
  [[nodiscard]] bool ok() const noexcept { return run.ok(); }
};

namespace detail {
inline std::string rank_range(int first, int count) {
  return count == 1 ? "GMI " + std::to_string(first)
                    : "GMIs " + std::to_string(first) + "-" + std::to_string(first + count - 1);
}
}  // namespace detail

// Runs fn(context&, host_gmi&) on each of this host's GMIs, joined with the other hosts' launchers. Returns
// this host's report: first_failure holds the one line when any GMI or host failed.
template <class F>
multihost_report run_on_hosts(const multihost_options& o, F fn) {
  require(o.gmis >= 1, "GMIs a host", o.gmis, ">= 1");
  multihost_report out;
  out.host = detect_host(o.host_id);
  const host_info& h = out.host;
  std::unique_ptr<comm::mpi_link> link;
  if (h.hosts > 1) {
    link = std::make_unique<comm::mpi_link>(h.id, o.link);
    require(link->hosts() == h.hosts, "MPI processes", link->hosts(),
            std::to_string(h.hosts) + " (the " + h.source + " launcher's world)");
    int mine = o.gmis;
    std::vector<int> all(static_cast<std::size_t>(h.hosts));
    link->allgather(&mine, all.data(), sizeof mine, o.timeout);
    for (int k = 0; k < h.hosts; ++k) {
      const auto at = static_cast<std::size_t>(k);
      require(all[at] == o.gmis, "GMIs of host " + std::to_string(k) + " (" + link->names()[at] + ")", all[at],
              std::to_string(o.gmis) + " like host " + std::to_string(h.host));
    }
  }
  host_sum sums(o.gmis, h.hosts,
                [&link, &o](const void* mine, void* all, std::size_t bytes, const std::function<bool()>& stop) {
                  link->allgather(mine, all, bytes, o.timeout, stop);
                },
                o.timeout);

  launch_spec spec = launch_spec::uniform(0, o.gmis);
  if (h.hosts > 1) {
    spec.host = h.host;
    spec.host_name = h.id;
    spec.first_rank = h.host * o.gmis;
    spec.global_world = h.hosts * o.gmis;
  }
  spec.run_tag = "h" + shm_safe(h.id) + "-";
  comm::mpi_link* l = link.get();
  const int gmis = o.gmis;
  if (l) {
    spec.watch = [l, gmis]() -> std::optional<failure> {
      const auto lost = l->lost();
      if (!lost) return std::nullopt;
      const std::string whose = lost->host >= 0 ? " (" + detail::rank_range(lost->host * gmis, gmis) + ")" : "";
      return failure{-1, lost->cause,
                     "host " + std::to_string(lost->host) + " '" + lost->name + "'" + whose + " " + lost->cause};
    };
  }
  std::vector<std::vector<int>> cores;
  if (o.pin && partition::cpu_cores::can_implement(o.gmis)) cores = partition::cpu_cores::core_sets({o.gmis, {}});

  std::mutex origin_mutex;
  std::optional<failure> origin;
  thread_group group(spec, [&](context& ctx) {
    std::optional<partition::cpu_cores::binding> bound;
    exec::host unpinned;
    if (!cores.empty()) bound.emplace(cores[static_cast<std::size_t>(ctx.rank())]);
    host_gmi g(ctx, sums, bound ? bound->policy() : unpinned);
    try {
      fn(ctx, g);
    } catch (const std::exception& e) {
      {
        std::lock_guard lock(origin_mutex);  // the first GMI to fail is the cause; the others fail through the sum
        if (!origin) {
          origin = failure{ctx.rank(), std::string("threw: ") + e.what(), ctx.id().describe() + " threw: " + e.what()};
        }
      }
      sums.break_group("GMI " + std::to_string(g.rank()) + " failed");
      throw;
    }
  });
  out.run = group.wait();
  if (out.run.first_failure && out.run.first_failure->rank >= 0 && origin) out.run.first_failure = *origin;
  if (l) {
    if (out.run.first_failure) {
      failure& f = *out.run.first_failure;
      if (f.rank >= 0) l->notify_failure(f.message);  // this host's GMI failed: tell the others
    } else {
      try {
        l->finish(o.timeout);
      } catch (const comm_error& e) {
        out.run.first_failure = failure{-1, e.what(), e.what()};
      }
    }
  }
  return out;
}

}  // namespace gmi::runtime

#pragma once
// run_on_hosts: one gmi launcher a host (mpirun -np H, srun, or no launcher for one host) runs its host GMIs
// (partition::cpu_cores: a thread each, on its own cores when there are enough) with global ranks, host GMI k of
// host h being rank h * gmis + k. The GMIs sum through runtime::host_sum: in memory within the host, then across
// hosts through comm::mpi_link. The launcher supervises its GMIs (thread_group) and, through the link, the other
// hosts: a lost host (killed, hung, unreachable: no heartbeat for heartbeat_timeout) or a host whose run failed
// ends the run on every host with one line naming the host and its GMIs. With restarts > 0, a GMI that fails
// (throws, or hangs and then stops) makes its host ask every host for a restart: each stops its GMIs, the hosts
// agree on the last checkpoint every host completed (host_restart.hpp) and run the GMIs again from it, up to
// `restarts` times. A lost host is never restarted: rerunning the job resumes it (resume_existing).

#include <algorithm>
#include <chrono>
#include <cstdio>
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
#include <gmi/runtime/host_checkpoint.hpp>
#include <gmi/runtime/host_restart.hpp>
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
  int restarts = 0;             // restarts of the whole job after a GMI failed on some host (needs checkpoint)
  std::string checkpoint;       // the job manifest the GMIs save (save_on_hosts); restarts resume from it
  bool resume_existing = false; // at start too: resume from `checkpoint` when every host has saved one
};

// What a GMI's function gets besides its context: its global place and the sum over every GMI of every host.
class host_gmi {
 public:
  host_gmi(const context& ctx, host_sum& sums, const exec::host& policy, int attempt = 1, std::string resume = {})
      : ctx_(ctx), sums_(sums), policy_(policy), attempt_(attempt), resume_(std::move(resume)) {}
  [[nodiscard]] int rank() const noexcept { return ctx_.id().global_rank(); }
  [[nodiscard]] int world() const noexcept { return ctx_.id().global_size(); }
  [[nodiscard]] int host() const noexcept { return std::max(0, ctx_.id().host); }
  [[nodiscard]] const exec::host& policy() const noexcept { return policy_; }
  // 1, then 2, ... after each restart of the job.
  [[nodiscard]] int attempt() const noexcept { return attempt_; }
  // The manifest this attempt resumes from on this host (load_from_hosts(resume(), rank())); empty: none.
  [[nodiscard]] const std::string& resume() const noexcept { return resume_; }
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
  int attempt_;
  std::string resume_;
};

// The host_gmi form of save_on_hosts (host_checkpoint.hpp).
inline void save_on_hosts(host_gmi& g, const io::checkpoint& state, const std::filesystem::path& path,
                          std::uint64_t iteration, int gmis_per_host) {
  save_on_hosts(host_saver{g.rank(), g.world(), g.host(), [&g](double* d, std::size_t n) { g.sum(d, n); }}, state,
                path, iteration, gmis_per_host);
}

struct multihost_report {
  host_info host;
  run_report run;                          // the last attempt's
  int restarts = 0;                        // restarts done
  std::optional<std::uint64_t> resumed_from;  // the checkpoint iteration the last attempt resumed from
  double restart_seconds = 0;  // summed over the restarts: this host's GMIs stopped to their next start
  [[nodiscard]] bool ok() const noexcept { return run.ok(); }
};

namespace detail {
// The link's news as this host's failure: a lost host, or (restart: true) a host that asked for a restart.
inline std::optional<failure> link_failure(const comm::mpi_link* l, int gmis, bool restart) {
  if (!l) return std::nullopt;
  const auto news = restart ? l->restart_requested() : l->lost();
  if (!news) return std::nullopt;
  const std::string whose = news->host >= 0 ? " (" + gmi_range(news->host * gmis, gmis) + ")" : "";
  return failure{-1, news->cause, "host " + std::to_string(news->host) + " '" + news->name + "'" + whose + " " + news->cause};
}
}  // namespace detail

// Runs fn(context&, host_gmi&) on each of this host's GMIs, joined with the other hosts' launchers. Returns
// this host's report: first_failure holds the one line when any GMI or host failed (after the restarts allowed).
template <class F>
multihost_report run_on_hosts(const multihost_options& o, F fn) {
  require(o.gmis >= 1, "GMIs a host", o.gmis, ">= 1");
  require(o.restarts >= 0 && o.restarts < 64, "restarts across hosts", o.restarts, "0..63");
  require(o.restarts == 0 || !o.checkpoint.empty(), "restarts across hosts without a checkpoint", o.restarts,
          "a checkpoint path as well (a restart resumes from the last checkpoint)");
  multihost_report out;
  out.host = detect_host(o.host_id);
  const host_info& h = out.host;
  std::unique_ptr<comm::mpi_link> link;
  if (h.hosts > 1) {
    comm::mpi_link_options lo = o.link;
    lo.epochs = o.restarts + 1;
    link = std::make_unique<comm::mpi_link>(h.id, lo);
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
  comm::mpi_link* l = link.get();
  const int gmis = o.gmis;
  const std::string me = "host " + std::to_string(h.host) + " '" + h.id + "'";
  const host_gather gather = [l, &o](const void* mine, void* all, std::size_t bytes) {
    l->allgather(mine, all, bytes, o.timeout);
  };

  launch_spec spec = launch_spec::uniform(0, o.gmis);
  if (h.hosts > 1) {
    spec.host = h.host;
    spec.host_name = h.id;
    spec.first_rank = h.host * o.gmis;
    spec.global_world = h.hosts * o.gmis;
  }
  spec.run_tag = "h" + shm_safe(h.id) + "-";
  if (l) {
    spec.watch = [l, gmis]() -> std::optional<failure> {
      if (auto f = detail::link_failure(l, gmis, false)) return f;
      return detail::link_failure(l, gmis, true);
    };
  }
  std::vector<std::vector<int>> cores;
  if (o.pin && partition::cpu_cores::can_implement(o.gmis)) cores = partition::cpu_cores::core_sets({o.gmis, {}});

  std::string restart_cause;  // the line that made the last restart
  std::chrono::steady_clock::time_point failed_at;
  for (int attempt = 1;; ++attempt) {
    std::string resume;
    if (!o.checkpoint.empty() && (attempt > 1 || o.resume_existing)) {
      try {  // no GMI runs: the hosts agree on the checkpoint every host completed, bounded like any gather
        out.resumed_from = agree_on_checkpoint(o.checkpoint, {std::max(0, h.host), h.hosts, o.gmis},
                                               l ? gather : host_gather{});
      } catch (const std::exception& e) {
        out.run.first_failure = detail::link_failure(l, gmis, false);
        if (!out.run.first_failure) out.run.first_failure = failure{-1, e.what(), e.what()};
        return out;
      }
      if (out.resumed_from) resume = manifest_for_host(o.checkpoint, std::max(0, h.host)).string();
      const std::string from = out.resumed_from ? "checkpoint " + o.checkpoint + " at iteration " +
                                                      std::to_string(*out.resumed_from) + " (the last one every host completed)"
                                                : std::string("the start (no checkpoint on every host yet)");
      if (attempt > 1) {
        std::fprintf(stderr, "gmi: %s: restart %d of %d from %s: %s\n", me.c_str(), out.restarts, o.restarts,
                     from.c_str(), restart_cause.c_str());
      } else if (out.resumed_from) {
        std::fprintf(stderr, "gmi: %s: resuming from %s\n", me.c_str(), from.c_str());
      }
    }
    host_sum sums(o.gmis, h.hosts,
                  [l, &o](const void* mine, void* all, std::size_t bytes, const std::function<bool()>& stop) {
                    l->allgather(mine, all, bytes, o.timeout, stop);
                  },
                  o.timeout);
    if (attempt > 1) out.restart_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - failed_at).count();
    std::mutex origin_mutex;
    std::optional<failure> origin;
    {
      thread_group group(spec, [&](context& ctx) {
        std::optional<partition::cpu_cores::binding> bound;
        exec::host unpinned;
        if (!cores.empty()) bound.emplace(cores[static_cast<std::size_t>(ctx.rank())]);
        host_gmi g(ctx, sums, bound ? bound->policy() : unpinned, attempt, resume);
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
      failed_at = std::chrono::steady_clock::now();
    }
    if (out.run.first_failure && out.run.first_failure->rank >= 0 && origin) out.run.first_failure = *origin;
    if (out.run.ok()) {
      if (!l) return out;
      try {
        l->finish(o.timeout);
        return out;
      } catch (const comm_error& e) {  // a host that failed after the last sum asks for a restart, or is lost
        out.run.first_failure = detail::link_failure(l, gmis, false);
        if (!out.run.first_failure) out.run.first_failure = detail::link_failure(l, gmis, true);
        if (!out.run.first_failure) out.run.first_failure = failure{-1, e.what(), e.what()};
      }
    }
    // Why this attempt ended: a lost host (never restarted), another host's restart, or a GMI of this host.
    if (l && l->lost()) {
      out.run.first_failure = detail::link_failure(l, gmis, false);
      return out;
    }
    const std::optional<failure> asked = detail::link_failure(l, gmis, true);
    const failure cause = asked ? *asked : *out.run.first_failure;
    const bool own = !asked;
    std::string refuse;
    const bool signalled = spec.handle_signals && detail::launcher_signal.load() != 0;  // SIGINT/SIGTERM: stop
    if (signalled && o.restarts > 0) {
      refuse = " (not restarted)";
    } else if (out.restarts >= o.restarts) {
      refuse = o.restarts == 0 ? "" : " (after " + std::to_string(out.restarts) + " restart" + (out.restarts == 1 ? "" : "s") +
                                       ", the limit)";
    } else if (!out.run.not_stopped.empty()) {
      refuse = " (not restarted: " + gmi_range(spec.first_rank + out.run.not_stopped.front(), 1) +
               " did not stop within " + std::to_string(spec.stop_grace.count()) + " ms)";
    }
    if (o.restarts == 0 || !refuse.empty()) {
      out.run.first_failure = cause;
      out.run.first_failure->message += refuse;
      // The others learn it (a GMI of this host failed, or this host can not join the restart it was asked for).
      if (l && (!own || cause.rank >= 0)) l->notify_failure(out.run.first_failure->message);
      return out;
    }
    if (l && own) l->request_restart(cause.message);
    ++out.restarts;
    restart_cause = cause.message;
    if (l) l->next_epoch();
  }
}

}  // namespace gmi::runtime

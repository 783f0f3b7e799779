#pragma once
// --restart-on-failure across hosts for GPU GMIs: each host's launcher (the MPI process, holding the link to the
// other hosts) runs every attempt of its GMIs as a child process (this binary again, same argv), as one host's
// restart loop does (restart.hpp), and relays the attempt's exchanges with the other hosts (host_relay.hpp). When
// an attempt fails on any host (a GMI threw, the attempt was killed, a GPU fault ended it), that host asks every
// host for a restart through the link; each launcher kills its attempt whole (a collective waiting on a peer, or
// a CUDA context with a sticky error, never outlives it), the hosts agree on the last checkpoint every host
// completed (host_restart.hpp), host 0 makes a new NCCL id, and every host starts a new attempt from it. A lost
// host (its launcher gone) ends the job on every other host with one line, as without restarts.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include <gmi/comm/shm_segment.hpp>
#include <gmi/core/error.hpp>
#include <gmi/pipeline/chosen_env.hpp>
#include <gmi/pipeline/restart.hpp>
#include <gmi/runtime/gpu_hosts.hpp>
#include <gmi/runtime/host_checkpoint.hpp>
#include <gmi/runtime/host_relay.hpp>
#include <gmi/runtime/host_restart.hpp>
#include <gmi/runtime/launcher.hpp>

namespace gmi {

// GMI_CHOSEN's part for an attempt across hosts: the relay's descriptor and host 0's NCCL id of this attempt.
inline constexpr const char* hosts_relay_key = "hosts_relay";

// This process's relay to its launcher (nullopt: not an attempt across hosts). config_error for a bad field.
[[nodiscard]] inline std::optional<runtime::relayed_hosts> relayed_hosts_from_env() {
  const auto j = chosen_json();
  if (!j || !j->contains(hosts_relay_key)) return std::nullopt;
  const nlohmann::json& r = (*j)[hosts_relay_key];
  runtime::relayed_hosts out;
  std::string id;
  chosen_field(r, std::string(hosts_relay_key) + ".", "fd", out.fd);
  chosen_field(r, std::string(hosts_relay_key) + ".", "nccl_id", id);
  out.leaders_id = comm::nccl_id::from_hex(id);
  return out;
}

struct host_attempts_config {
  int restarts = 1;                // restarts of the whole job allowed
  std::string checkpoint;          // the job manifest every attempt saves; restarts resume from it
  std::string first_resume;        // --resume of the first attempt ("" : from scratch)
  int gmis = 1;                    // GMIs a host
  std::chrono::milliseconds timeout{60000};  // each exchange between the hosts, and reaping a killed attempt
  std::chrono::seconds attempt_bound{3600 + 600};  // an attempt running longer is ended and counts as failed
  // After this host's attempt failed in a collective, how long to wait for another host's restart notice (the
  // peer that failed first is the cause to name) before asking for a restart itself.
  std::chrono::milliseconds peer_grace{1500};
  const std::atomic<int>* stop_signal = nullptr;  // SIGINT/SIGTERM of the launcher: never restart then
};

namespace detail {
// SIGKILL to the attempt's process group, then reaped within `bound`; false when it was not.
inline bool end_attempt(pid_t pid, int& wstatus, std::chrono::milliseconds bound) {
  ::kill(-pid, SIGKILL);
  const auto until = std::chrono::steady_clock::now() + bound;
  for (;;) {
    const pid_t got = ::waitpid(pid, &wstatus, WNOHANG);
    if (got == pid || (got < 0 && errno != EINTR)) return true;
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}
inline std::string attempt_text(int wstatus) {
  if (WIFSIGNALED(wstatus)) return "the attempt's process ended with signal " + signal_text(WTERMSIG(wstatus));
  return "the attempt exited with code " + std::to_string(WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1);
}
inline std::optional<std::string> link_news(const comm::mpi_link& l, bool restart, int gmis) {
  const auto n = restart ? l.restart_requested() : l.lost();
  if (!n) return std::nullopt;
  const std::string whose = n->host >= 0 ? " (" + runtime::gmi_range(n->host * gmis, gmis) + ")" : "";
  return "host " + std::to_string(n->host) + " '" + n->name + "'" + whose + " " + n->cause;
}
}  // namespace detail

// The launcher's loop on every host; returns the job's exit code on this host. `hosts` is the launcher's own
// (built with link epochs >= 1 + cfg.restarts). Each attempt runs this binary with GMI_CHOSEN's "restart" note
// (attempt, status block, the manifest to resume from) and "hosts_relay" note.
inline int run_attempts_on_hosts(runtime::gpu_hosts& hosts, const host_attempts_config& cfg) {
  comm::mpi_link* link = hosts.link();
  require(link != nullptr, "run_attempts_on_hosts", "a relayed gpu_hosts", "the launcher's, which holds the link");
  require(!cfg.checkpoint.empty(), "--restart-on-failure across hosts without --checkpoint", cfg.restarts,
          "--checkpoint PATH (a restart resumes from it)");
  const std::string me = hosts.describe();
  const runtime::checkpoint_place place{hosts.host().host, hosts.hosts(), cfg.gmis};
  const runtime::host_gather gather = [&hosts](const void* m, void* a, std::size_t b) { hosts.gather_bytes(m, a, b); };
  restart_status status = restart_status::create();
  int restarts = 0;
  double restart_seconds = 0;
  std::string cause;  // the line that made the last restart
  std::int64_t failed_ns = 0;
  const auto fail_job = [&](const std::string& line, int code = 1) {
    std::fprintf(stderr, "gmi: %s: %s\n", me.c_str(), line.c_str());
    std::fflush(stderr);
    return code;
  };
  for (int attempt = 1;; ++attempt) {
    // Where this attempt starts: the last checkpoint every host completed (the user's --resume at first).
    std::string resume;
    try {
      if (attempt > 1) hosts.renew_leaders_id();
      const std::string base = attempt == 1 ? cfg.first_resume : cfg.checkpoint;
      std::optional<std::uint64_t> at;
      if (!base.empty()) at = runtime::agree_on_checkpoint(base, place, gather);
      if (!at && attempt > 1 && !cfg.first_resume.empty()) {
        at = runtime::agree_on_checkpoint(cfg.first_resume, place, gather);
        if (at) resume = cfg.first_resume;
      } else if (at) {
        resume = base;
      }
      if (attempt == 1 && !cfg.first_resume.empty() && !at) {
        return fail_job(got_need("--resume " + cfg.first_resume, "no manifest on some host",
                                 "a checkpoint every host saved (" + cfg.first_resume + ".host<h>)"));
      }
      if (attempt > 1) {
        std::fprintf(stderr, "gmi: %s: restart %d of %d from %s: %s\n", me.c_str(), restarts, cfg.restarts,
                     at ? ("checkpoint " + resume + " at iteration " + std::to_string(*at) +
                           " (the last one every host completed)").c_str()
                        : "the start (no checkpoint on every host yet)",
                     cause.c_str());
        std::fflush(stderr);
      }
    } catch (const std::exception& e) {  // a damaged file (the same line on every host) or a host lost meanwhile
      const auto lost = detail::link_news(*link, false, cfg.gmis);
      return fail_job(lost ? *lost : e.what());
    }
    // The attempt: this binary again, its exchanges through the relay.
    status.reset();
    runtime::relay_pair ends = runtime::relay_pair::make();
    runtime::env_list env;
    add_to_chosen(env, "restart", to_json(restart_note{.attempt = attempt, .fd = status.fd(), .resume = resume}));
    add_to_chosen(env, hosts_relay_key, nlohmann::json{{"fd", ends.attempt}, {"nccl_id", hosts.leaders_id().hex()}});
    if (const char* k = std::getenv(test_kill_var)) env.emplace_back(test_kill_var, k);
    pid_t pid = -1;
    try {
      pid = runtime::spawn_self(env);
    } catch (...) {
      ::close(ends.attempt);
      ::close(ends.launcher);
      throw;
    }
    ::close(ends.attempt);
    const auto started = std::chrono::steady_clock::now();
    bool barrier_done = false;
    const runtime::relay_server::gather_fn relayed = [&hosts](const void* m, void* a, std::size_t b,
                                                               const std::function<bool()>& gone) {
      hosts.gather_bytes(m, a, b, gone);
    };
    runtime::relay_server relay(ends.launcher, static_cast<std::size_t>(hosts.hosts()), relayed, [&] {
      hosts.finish();
      barrier_done = true;
    });
    int wstatus = 0, forwarded = 0;
    std::optional<std::string> lost, asked;
    for (;;) {
      const pid_t got = ::waitpid(pid, &wstatus, WNOHANG);
      if (got == pid || (got < 0 && errno != EINTR)) break;
      if (!barrier_done) {
        lost = detail::link_news(*link, false, cfg.gmis);
        asked = lost ? std::nullopt : detail::link_news(*link, true, cfg.gmis);
      }
      const bool past = std::chrono::steady_clock::now() - started > cfg.attempt_bound;
      if (lost || asked || past) {
        if (!detail::end_attempt(pid, wstatus, cfg.timeout)) return fail_job("the attempt did not end within the timeout after SIGKILL");
        break;
      }
      const int sig = cfg.stop_signal ? cfg.stop_signal->load() : 0;
      if (sig && !forwarded) {  // the attempt runs in its own process group: pass the stop on
        ::kill(pid, sig);
        forwarded = sig;
      }
      try {  // once the attempt closed its end, only its exit is left to wait for
        if (!relay.serve(std::chrono::milliseconds(10), cfg.timeout)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      } catch (const std::exception&) {
        // the attempt got the line; the link's news (next round) or its exit decides what follows
      }
    }
    runtime::remove_stale_segments();  // a killed attempt could not unlink its segments
    comm::cleanup_stale_segments();
    if (attempt > 1 && status.block().started_ns.load() > failed_ns) {  // the last failure to this attempt's start
      restart_seconds += static_cast<double>(status.block().started_ns.load() - failed_ns) / 1e9;
    }
    failed_ns = steady_ns();
    const bool clean = !lost && !asked && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0;
    if (clean) {
      if (restarts > 0) {  // the time once the attempts report their start (status block), as gmi::run's do
        char took[96] = "";
        if (restart_seconds > 0) {
          std::snprintf(took, sizeof took, " (%.2f s from failures to the next attempts' first iterations)", restart_seconds);
        }
        std::printf("gmi: %s: finished after %d restart%s across hosts%s\n", me.c_str(), restarts,
                    restarts == 1 ? "" : "s", took);
        std::fflush(stdout);
      }
      if (!barrier_done) hosts.finish();
      return 0;
    }
    if (lost) return fail_job(*lost);
    const bool stopped = cfg.stop_signal && cfg.stop_signal->load() != 0;
    const int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    std::string own;
    if (!asked) {
      own = status.block().note_bytes.load() ? status.note() : detail::attempt_text(wstatus);
      if (own.rfind(me + ": ", 0) == 0) own.erase(0, me.size() + 2);  // the lines below name this host once
      // An attempt that exited with an error may have failed in a collective because another host failed first:
      // give that host's notice a moment (a killed attempt is the origin itself).
      const auto until = std::chrono::steady_clock::now() + (WIFSIGNALED(wstatus) ? std::chrono::milliseconds(0) : cfg.peer_grace);
      while (!asked && !lost && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        lost = detail::link_news(*link, false, cfg.gmis);
        asked = detail::link_news(*link, true, cfg.gmis);
      }
      if (lost) return fail_job(*lost);
    }
    const std::string line = asked ? *asked : own;
    if (stopped || barrier_done || code == 2) {  // a stop, a failure after the end, or a refused flag: no restart
      if (!asked) link->notify_failure(me + ": " + line + " (not restarted)");
      return fail_job(line + " (not restarted)", code == 2 && !asked ? 2 : 1);
    }
    if (restarts >= cfg.restarts) {
      const std::string limit = line + " (after " + std::to_string(restarts) + " restart" + (restarts == 1 ? "" : "s") + ", the limit)";
      if (!asked) link->notify_failure(me + ": " + limit);
      return fail_job(limit);
    }
    if (!asked) link->request_restart(me + ": " + own);
    cause = asked ? *asked : own;
    ++restarts;
    link->next_epoch();
  }
}

}  // namespace gmi

#pragma once
// Supervisors of a run: process_group (GMIs as child processes) and thread_group (GMIs as threads). Both watch
// exits and heartbeats; on the first failure (crash, non-zero exit, exception, hang, SIGINT/SIGTERM to the
// launcher) they tear everything down on one path and report one line that names the GMI and the cause.

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/runtime/context.hpp>
#include <gmi/runtime/crash_report.hpp>
#include <gmi/runtime/driver_files.hpp>
#include <gmi/runtime/launcher.hpp>
#include <gmi/runtime/segment.hpp>

namespace gmi::runtime {

// Thrown by wait_or_throw(): what() is the failure's one line.
class gmi_failed : public gmi::error {
 public:
  explicit gmi_failed(const failure& f, std::source_location where = std::source_location::current())
      : gmi::error(f.message, where), failure_(f) {}
  [[nodiscard]] const failure& info() const noexcept { return failure_; }

 private:
  failure failure_;
};

// How one GMI ended.
struct gmi_exit {
  int rank = 0;
  pid_t pid = 0;            // 0 for thread GMIs
  std::string how;          // "exited with code 0", "exited with signal 15 (SIGTERM)", "returned", ...
  bool clean = false;       // exited 0 / returned
};

struct run_report {
  std::optional<failure> first_failure;  // empty: every GMI finished cleanly
  std::vector<gmi_exit> exits;           // by rank
  std::vector<std::string> results;      // by rank: what each GMI reported (context::report), empty if nothing
  std::string run_id, shm_name;
  std::vector<int> not_stopped;          // thread GMIs that ignored the stop flag and were left detached
  double seconds = 0;

  [[nodiscard]] bool ok() const noexcept { return !first_failure.has_value(); }
};

namespace detail {

inline std::atomic<int> launcher_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

inline void on_launcher_signal(int sig) { launcher_signal.store(sig, std::memory_order_relaxed); }

// SIGINT and SIGTERM set a flag the supervisor polls, for the scope of a wait (previous handlers restored).
class signal_guard {
 public:
  explicit signal_guard(bool active) : active_(active) {
    if (!active_) return;
    launcher_signal.store(0);
    struct sigaction sa{};
    sa.sa_handler = on_launcher_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  signal_guard(const signal_guard&) = delete;
  signal_guard& operator=(const signal_guard&) = delete;
  ~signal_guard() {
    if (!active_) return;
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  bool active_;
  struct sigaction old_int_{}, old_term_{};
};

inline std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// "exited with code 3" / "exited with signal 9 (SIGKILL)"
inline std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    std::string s = "exited with signal " + std::to_string(sig) + " (" + signal_name(sig) + ")";
    if (WCOREDUMP(status)) s += ", core dumped";
    return s;
  }
  return "ended with wait status " + std::to_string(status);
}

inline std::string seconds_text(std::chrono::steady_clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", std::chrono::duration<double>(d).count());
  return buf;
}

// Heartbeat bookkeeping shared by both supervisors.
struct beat_watch {
  std::uint64_t last = 0;
  std::chrono::steady_clock::time_point since{};
};

inline std::optional<std::string> check_heartbeat(const segment& seg, int rank, beat_watch& w,
                                                  const launch_spec& spec,
                                                  std::chrono::steady_clock::time_point now) {
  if (spec.heartbeat_timeout.count() == 0) return std::nullopt;
  const gmi_state st = seg.state(rank);
  if (st == gmi_state::finished || st == gmi_state::failed || st == gmi_state::dead) return std::nullopt;
  const std::uint64_t beat = seg.slot(rank).heartbeat.load(std::memory_order_acquire);
  if (beat != w.last) {
    w.last = beat;
    w.since = now;
    return std::nullopt;
  }
  const auto quiet = now - w.since;
  if (st == gmi_state::starting) {
    if (quiet > spec.startup_timeout) return "did not start: no contact for " + seconds_text(quiet);
    return std::nullopt;
  }
  if (quiet > spec.heartbeat_timeout) return "hung: no heartbeat for " + seconds_text(quiet);
  return std::nullopt;
}

// The supervision loop of both GMI groups: stop on the launcher's signal, else poll every GMI (poll(rank, now,
// failed) returns whether it still runs and sets `failed` when it failed) until all have ended or one failed.
// The caller keeps its signal_guard alive through the teardown that follows.
template <class Poll>
std::optional<failure> supervise(const launch_spec& spec, std::size_t count, Poll poll) {
  for (;;) {
    if (const int sig = launcher_signal.load(); sig != 0 && spec.handle_signals) {
      return failure{-1, "received " + signal_name(sig), "launcher received " + signal_name(sig)};
    }
    if (spec.watch) {
      if (auto outside = spec.watch()) return outside;
    }
    bool any_running = false;
    const auto now = std::chrono::steady_clock::now();
    for (std::size_t r = 0; r < count; ++r) {
      std::optional<failure> failed;
      any_running = poll(static_cast<int>(r), now, failed) || any_running;
      if (failed) return failed;
    }
    if (!any_running) return std::nullopt;
    std::this_thread::sleep_for(spec.poll_interval);
  }
}

// wait_or_throw of both groups: the one line of the first failure as gmi_failed.
inline run_report throw_on_failure(run_report r) {
  if (r.first_failure) throw gmi_failed(*r.first_failure);
  return r;
}

}  // namespace detail

// GMIs as child processes. The constructor validates the spec, removes stale segments of dead launchers,
// creates the run's segment and starts every GMI; wait() supervises until all finish or one fails, then tears
// down. The destructor tears down whatever still runs, so no exit path leaves children or /dev/shm entries.
class process_group {
 public:
  explicit process_group(launch_spec spec) : spec_(std::move(spec)) {
    spec_.validate();
    remove_stale_segments();
    run_id_ = spec_.run_tag + make_run_id();
    seg_ = std::make_shared<segment>(segment::create(run_id_, static_cast<int>(spec_.gmis.size()), spec_.ring_capacity));
    unlink_on_crash(seg_->name());
    const std::vector<std::string> args = spec_.args ? *spec_.args : detail::own_argv();
    children_.resize(spec_.gmis.size());
    started_ = std::chrono::steady_clock::now();
    try {
      for (std::size_t r = 0; r < spec_.gmis.size(); ++r) {
        const env_list id_env = to_env(spec_.identity_of(static_cast<int>(r), run_id_, seg_->name()));
        const auto env = detail::child_environment({&spec_.env, &spec_.gmis[r].env, &id_env});
        children_[r].pid = detail::spawn_process(spec_.program, args, env);
        children_[r].watch.since = std::chrono::steady_clock::now();
      }
    } catch (...) {
      teardown(failure{-1, "launch failed", "launch failed"});
      throw;
    }
  }
  process_group(const process_group&) = delete;
  process_group& operator=(const process_group&) = delete;
  ~process_group() {
    if (!done_) teardown(failure{-1, "supervisor destroyed", "the launcher stopped supervising"});
  }

  [[nodiscard]] const std::string& run_id() const noexcept { return run_id_; }
  [[nodiscard]] const std::string& shm_name() const noexcept { return seg_->name(); }
  [[nodiscard]] pid_t pid(int rank) const { return children_.at(static_cast<std::size_t>(rank)).pid; }
  [[nodiscard]] std::vector<pid_t> pids() const {
    std::vector<pid_t> out;
    for (const auto& c : children_) out.push_back(c.pid);
    return out;
  }
  [[nodiscard]] const segment& shared() const noexcept { return *seg_; }

  // Supervises until every GMI has exited or one failed; always returns with every child reaped and the
  // segment unlinked.
  run_report wait() {
    if (done_) return report_;
    detail::signal_guard signals(spec_.handle_signals);
    const std::optional<failure> failed = detail::supervise(
        spec_, children_.size(), [&](int r, auto now, std::optional<failure>& fail_out) {
          child& c = children_[r];
          if (c.reaped) return false;
          int status = 0;
          if (waitpid(c.pid, &status, WNOHANG) == c.pid) {
            record_exit(r, status);
            if (!children_[r].exit.clean) fail_out = fail(r, children_[r].exit.how, true);
            return false;
          }
          if (auto hung = detail::check_heartbeat(*seg_, r, c.watch, spec_, now)) fail_out = fail(r, *hung, false);
          return true;
        });
    if (failed) {
      teardown(*failed);
    } else {
      finish();
    }
    return report_;
  }

  // wait(), throwing gmi_failed with the one line when the run failed.
  run_report wait_or_throw() { return detail::throw_on_failure(wait()); }

 private:
  struct child {
    pid_t pid = 0;
    bool reaped = false;
    gmi_exit exit;
    detail::beat_watch watch;
  };

  failure fail(int rank, const std::string& cause, bool exited) {
    std::string c = cause;
    if (exited) {
      const std::string why = seg_->message(rank);
      if (!why.empty()) c += ": " + why;
    }
    seg_->set_state(rank, gmi_state::dead);  // peers blocked in recv from it give up now
    return failure{rank, c, spec_.identity_of(rank, run_id_, seg_->name()).describe() + " " + c};
  }

  void record_exit(int rank, int status) {
    child& c = children_[static_cast<std::size_t>(rank)];
    c.reaped = true;
    c.exit.rank = rank;
    c.exit.pid = c.pid;
    c.exit.how = detail::describe_wait_status(status);
    c.exit.clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!c.exit.clean && seg_->state(rank) != gmi_state::failed) seg_->set_state(rank, gmi_state::dead);
    detail::remove_driver_shm_files(c.pid);  // what a killed GMI could not have the driver remove
  }

  std::vector<live_gmi> alive() const {
    std::vector<live_gmi> out;
    for (std::size_t r = 0; r < children_.size(); ++r) {
      if (children_[r].pid > 0 && !children_[r].reaped) {
        out.push_back({static_cast<int>(r), children_[r].pid, spec_.gmis[r].gpu});
      }
    }
    return out;
  }

  // Reaps what has exited, up to `until`; true when nothing is left.
  bool reap_until(std::chrono::steady_clock::time_point until) {
    while (true) {
      bool left = false;
      for (std::size_t r = 0; r < children_.size(); ++r) {
        child& c = children_[r];
        if (c.pid <= 0 || c.reaped) continue;
        int status = 0;
        if (waitpid(c.pid, &status, WNOHANG) == c.pid) {
          record_exit(static_cast<int>(r), status);
        } else {
          left = true;
        }
      }
      if (!left) return true;
      if (std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  // The one teardown path: hook (MPS terminate_client), stop flag, SIGTERM to each GMI's process group,
  // bounded wait, SIGKILL, reap all, unlink the segment.
  void teardown(const failure& f) {
    if (done_) return;
    report_.first_failure = f;
    seg_->request_stop();
    const std::vector<live_gmi> live = alive();
    if (spec_.before_kill && !live.empty()) {
      try {
        spec_.before_kill(f, live);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gmi: before_kill hook failed: %s\n", e.what());
      }
    }
    for (const auto& l : live) kill(-l.pid, SIGTERM);
    if (!reap_until(std::chrono::steady_clock::now() + spec_.stop_grace)) {
      for (const auto& l : alive()) kill(-l.pid, SIGKILL);
      for (std::size_t r = 0; r < children_.size(); ++r) {
        child& c = children_[r];
        if (c.pid <= 0 || c.reaped) continue;
        int status = 0;
        while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
        }
        record_exit(static_cast<int>(r), status);
      }
    }
    // Grandchildren left in a GMI's group (a GMI that forked) go too.
    for (const auto& c : children_) {
      if (c.pid > 0) kill(-c.pid, SIGKILL);
    }
    finish();
  }

  void finish() {
    for (const auto& c : children_) report_.exits.push_back(c.exit);
    for (std::size_t r = 0; r < children_.size(); ++r) report_.results.push_back(seg_->result(static_cast<int>(r)));
    report_.run_id = run_id_;
    report_.shm_name = seg_->name();
    report_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    seg_->unlink();
    done_ = true;
  }

  launch_spec spec_;
  std::string run_id_;
  std::shared_ptr<segment> seg_;
  std::vector<child> children_;
  std::chrono::steady_clock::time_point started_;
  run_report report_;
  bool done_ = false;
};

// GMIs as threads of this process (green_context, cpu_cores). fn(context&) runs on each GMI's thread; an
// exception ends that GMI with its message. Teardown sets the stop flag (context::stop_requested) and joins
// with a bounded wait; a thread that ignores it is detached and reported (threads can not be killed).
class thread_group {
 public:
  using work = std::function<void(context&)>;

  thread_group(launch_spec spec, work fn) : spec_(std::move(spec)) {
    spec_.validate();
    remove_stale_segments();
    run_id_ = spec_.run_tag + make_run_id();
    seg_ = std::make_shared<segment>(segment::create(run_id_, static_cast<int>(spec_.gmis.size()), spec_.ring_capacity));
    unlink_on_crash(seg_->name());
    started_ = std::chrono::steady_clock::now();
    states_.reserve(spec_.gmis.size());
    for (std::size_t r = 0; r < spec_.gmis.size(); ++r) states_.push_back(std::make_shared<thread_state>());
    for (std::size_t r = 0; r < spec_.gmis.size(); ++r) {
      watches_.push_back({0, std::chrono::steady_clock::now()});
      auto st = states_[r];
      std::shared_ptr<const segment> seg = seg_;  // a detached thread keeps the mapping alive
      identity id = spec_.identity_of(static_cast<int>(r), run_id_, seg_->name());
      try {
        threads_.emplace_back([st, seg, id, fn] {
          name_thread_for_crash_report(id);
          try {
            {
              context ctx(id, seg);
              fn(ctx);
            }
            st->error.clear();
          } catch (const std::exception& e) {
            st->error = e.what();
            st->threw = true;
          } catch (...) {
            st->error = "unknown exception";
            st->threw = true;
          }
          if (st->threw) seg->set_state(id.rank, gmi_state::failed);
          st->ended.store(true, std::memory_order_release);
        });
      } catch (...) {
        seg_->request_stop();
        join_bounded();
        finish();
        throw;
      }
    }
  }
  thread_group(const thread_group&) = delete;
  thread_group& operator=(const thread_group&) = delete;
  ~thread_group() {
    if (!done_) teardown(failure{-1, "supervisor destroyed", "the launcher stopped supervising"});
  }

  [[nodiscard]] const std::string& run_id() const noexcept { return run_id_; }
  [[nodiscard]] const std::string& shm_name() const noexcept { return seg_->name(); }

  run_report wait() {
    if (done_) return report_;
    detail::signal_guard signals(spec_.handle_signals);
    const std::optional<failure> failed = detail::supervise(
        spec_, states_.size(), [&](int rank, auto now, std::optional<failure>& fail_out) {
          thread_state& st = *states_[rank];
          if (st.ended.load(std::memory_order_acquire)) {
            if (st.threw) fail_out = make_failure(rank, "threw: " + st.error);
            return false;
          }
          if (auto hung = detail::check_heartbeat(*seg_, rank, watches_[rank], spec_, now)) {
            seg_->set_state(rank, gmi_state::dead);
            fail_out = make_failure(rank, *hung);
          }
          return true;
        });
    if (failed) {
      teardown(*failed);
    } else {
      join_bounded();
      finish();
    }
    return report_;
  }

  run_report wait_or_throw() { return detail::throw_on_failure(wait()); }

 private:
  struct thread_state {
    std::atomic<bool> ended{false};
    bool threw = false;
    std::string error;  // written before `ended` is released
  };

  failure make_failure(int rank, const std::string& cause) const {
    return failure{rank, cause, spec_.identity_of(rank, run_id_, seg_->name()).describe() + " " + cause};
  }

  void join_bounded() {
    const auto until = std::chrono::steady_clock::now() + spec_.stop_grace;
    for (std::size_t r = 0; r < threads_.size(); ++r) {
      while (!states_[r]->ended.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      if (states_[r]->ended.load(std::memory_order_acquire)) {
        threads_[r].join();
      } else {
        threads_[r].detach();
        report_.not_stopped.push_back(static_cast<int>(r));
      }
    }
  }

  void teardown(const failure& f) {
    if (done_) return;
    report_.first_failure = f;
    seg_->request_stop();
    join_bounded();
    finish();
  }

  void finish() {
    for (std::size_t r = 0; r < states_.size(); ++r) {
      gmi_exit e;
      e.rank = static_cast<int>(r);
      const bool ended = states_[r]->ended.load(std::memory_order_acquire);
      e.clean = ended && !states_[r]->threw;
      e.how = !ended ? "still running (detached)" : states_[r]->threw ? "threw: " + states_[r]->error : "returned";
      report_.exits.push_back(std::move(e));
      report_.results.push_back(seg_->result(static_cast<int>(r)));
    }
    report_.run_id = run_id_;
    report_.shm_name = seg_->name();
    report_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    seg_->unlink();
    done_ = true;
  }

  launch_spec spec_;
  std::string run_id_;
  std::shared_ptr<segment> seg_;
  std::vector<std::shared_ptr<thread_state>> states_;
  std::vector<detail::beat_watch> watches_;
  std::vector<std::thread> threads_;
  std::chrono::steady_clock::time_point started_;
  run_report report_;
  bool done_ = false;
};

}  // namespace gmi::runtime

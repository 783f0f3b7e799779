#pragma once
// --restart-on-failure: the launcher runs each attempt of the GMI group as a child process (this binary again,
// same argv) and, when the group fails (a GMI crashed, was killed or hung; the child tears everything down as
// without restarts), starts a new attempt that resumes from the last complete checkpoint, reporting the progress
// lost. Re-exec rather than a loop in the launcher because thread GMIs (green contexts) share the launcher's
// process: a fault in one ends the process, and a CUDA context poisoned by a sticky error can not be reused.
// Also here: the status block an attempt shares with its parent (a memfd, so nothing is left in /dev/shm), the
// pure restart decisions (tested on the CPU) and the test hook GMI_TEST_KILL_AT.

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <gmi/comm/shm_segment.hpp>
#include <gmi/core/error.hpp>
#include <gmi/pipeline/chosen_env.hpp>
#include <gmi/runtime/launcher.hpp>
#include <gmi/runtime/segment.hpp>

namespace gmi {

// What an attempt gets from its parent (and passes on to its GMI processes): GMI_CHOSEN's "restart" part.
struct restart_note {
  int attempt = 1;     // 1, 2, ...
  int fd = -1;         // the status block's memfd
  std::string resume;  // manifest to resume from ("" : none)
};
[[nodiscard]] inline nlohmann::json to_json(const restart_note& n) {
  return {{"attempt", n.attempt}, {"fd", n.fd}, {"resume", n.resume}};
}
// This process's place in a restart loop (nullopt: not an attempt). Throws config_error naming a malformed field.
[[nodiscard]] inline std::optional<restart_note> restart_note_from_env() {
  const auto j = chosen_json();
  if (!j || !j->contains("restart")) return std::nullopt;
  const nlohmann::json& r = (*j)["restart"];
  restart_note n;
  chosen_field(r, "restart.", "attempt", n.attempt);
  chosen_field(r, "restart.", "fd", n.fd);
  chosen_field(r, "restart.", "resume", n.resume);
  gmi::require(n.attempt >= 1, std::string(chosen_variable) + ".restart.attempt", n.attempt, ">= 1");
  return n;
}
// Test hook: "rank:iteration" makes GMI `rank` SIGKILL itself right after that iteration, on attempt 1 only.
inline constexpr const char* test_kill_var = "GMI_TEST_KILL_AT";

// ---- pure decisions

struct kill_at {
  int rank = 0;
  std::uint64_t iteration = 0;
  friend bool operator==(const kill_at&, const kill_at&) = default;
};

// "2:20" -> {2, 20}; config_error with the value and the form for anything else.
[[nodiscard]] inline kill_at parse_kill_at(std::string_view text) {
  const auto bad = [&] {
    return config_error(got_need(test_kill_var, std::string(text), "rank:iteration, e.g. 2:20 (test hook)"));
  };
  const auto colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) throw bad();
  kill_at k;
  try {
    std::size_t used = 0;
    const std::string r(text.substr(0, colon)), i(text.substr(colon + 1));
    const long rank = std::stol(r, &used);
    if (used != r.size() || rank < 0) throw bad();
    const unsigned long long it = std::stoull(i, &used);
    if (used != i.size() || i.front() == '-' || it == 0) throw bad();
    k.rank = static_cast<int>(rank);
    k.iteration = it;
  } catch (const std::logic_error&) {
    throw bad();
  }
  return k;
}

// How an attempt ended, as the parent saw it.
struct attempt_end {
  bool signaled = false;       // the attempt's process was killed (a fault in a thread GMI takes the process)
  int code = 0;                // exit code, or the signal
  bool lost_gmi = false;       // the attempt reported a GMI lost (crash, kill, hang, exception of a GMI)
  bool past_deadline = false;  // the parent ended it: it ran past its bound
  bool stop_requested = false; // the parent got SIGINT/SIGTERM: never restart then
};

enum class restart_action { finish, restart, give_up };

// finish: the attempt's exit code is the run's (success, a refused flag, a stop signal, an error a restart can
// not fix such as differing weights); restart: the group was lost and `restarts_done` < `restarts_allowed`;
// give_up: it was lost once more than allowed.
[[nodiscard]] constexpr restart_action decide_restart(const attempt_end& e, int restarts_done,
                                                      int restarts_allowed) noexcept {
  if (e.stop_requested) return restart_action::finish;
  const bool lost = e.signaled || e.lost_gmi || e.past_deadline;
  if (!lost) return restart_action::finish;
  return restarts_done < restarts_allowed ? restart_action::restart : restart_action::give_up;
}

// What a restart costs: the iterations since the checkpoint it resumes from (or since the attempt's own start,
// when there is no checkpoint yet) are trained again.
struct lost_progress {
  std::uint64_t failed_at = 0;    // the group's last iteration reached
  std::uint64_t resume_from = 0;  // the checkpoint's iteration, or where the run started
  bool from_checkpoint = false;
  std::uint64_t iterations = 0;
  double env_steps = 0;
  double seconds = 0;             // training time since the checkpoint (or the start) that is redone
};

[[nodiscard]] inline lost_progress progress_lost(std::uint64_t failed_at, std::optional<std::uint64_t> checkpoint,
                                                 std::uint64_t run_start, double samples_per_iteration,
                                                 double seconds) {
  lost_progress l;
  l.failed_at = failed_at;
  l.from_checkpoint = checkpoint.has_value();
  l.resume_from = checkpoint ? *checkpoint : run_start;
  l.iterations = failed_at > l.resume_from ? failed_at - l.resume_from : 0;
  l.env_steps = static_cast<double>(l.iterations) * samples_per_iteration;
  l.seconds = seconds > 0 ? seconds : 0;
  return l;
}

// ---- the status block an attempt shares with its parent

struct restart_status_block {
  std::atomic<std::uint64_t> iteration;          // the group's last group-step iteration (rank 0 writes)
  std::atomic<std::uint64_t> checkpoint_plus_1;  // last complete checkpoint's iteration + 1; 0: none this attempt
  std::atomic<std::int64_t> checkpoint_ns;       // steady clock when it completed
  std::atomic<std::int64_t> started_ns;          // steady clock when this attempt's first iteration began
  std::atomic<std::uint64_t> start_iteration;    // the iteration it began from (0, or the resumed one)
  std::atomic<std::uint32_t> lost_gmi;           // 1: the attempt's launcher saw a GMI lost
  std::atomic<std::uint32_t> note_bytes;         // bytes of `note` (written before this)
  char note[448];                                // one line: which GMI was lost and why
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<std::int64_t>::is_always_lock_free);

[[nodiscard]] inline std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One mapping of the block: created by the parent (memfd, inherited by the attempt and its GMI processes through
// exec), attached by them from the restart note's fd. Closing every descriptor frees it: nothing to unlink.
class restart_status {
 public:
  static restart_status create() {
    const int fd = static_cast<int>(::memfd_create("gmi-restart-status", 0));  // inherited across exec on purpose
    if (fd < 0) throw gmi::error(std::string("memfd_create: ") + std::strerror(errno));
    if (::ftruncate(fd, sizeof(restart_status_block)) != 0) {
      const int e = errno;
      ::close(fd);
      throw gmi::error(std::string("ftruncate of the restart status: ") + std::strerror(e));
    }
    return restart_status(fd, true);
  }
  // The block of this attempt, when the parent made one (the restart note's fd); nullopt otherwise.
  static std::optional<restart_status> from_env() {
    const auto note = restart_note_from_env();
    if (!note) return std::nullopt;
    const int fd = note->fd;
    if (fd <= 2 || ::fcntl(fd, F_GETFD) < 0) return std::nullopt;
    return restart_status(fd, false);
  }
  restart_status(restart_status&& o) noexcept
      : fd_(std::exchange(o.fd_, -1)), block_(std::exchange(o.block_, nullptr)), owner_(o.owner_) {}
  restart_status& operator=(restart_status&&) = delete;
  ~restart_status() {
    if (block_) ::munmap(block_, sizeof(restart_status_block));
    if (owner_ && fd_ >= 0) ::close(fd_);
  }

  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] restart_status_block& block() const noexcept { return *block_; }
  void reset() noexcept { std::memset(static_cast<void*>(block_), 0, sizeof(restart_status_block)); }
  // Async-signal-safe enough for a thread about to raise SIGKILL: a memcpy and a store.
  void set_note(std::string_view line) const noexcept {
    const std::size_t n = std::min(line.size(), sizeof(block_->note));
    std::memcpy(block_->note, line.data(), n);
    block_->note_bytes.store(static_cast<std::uint32_t>(n), std::memory_order_release);
  }
  [[nodiscard]] std::string note() const {
    const std::uint32_t n = block_->note_bytes.load(std::memory_order_acquire);
    return std::string(block_->note, std::min<std::size_t>(n, sizeof(block_->note)));
  }

 private:
  restart_status(int fd, bool owner) : fd_(fd), owner_(owner) {
    void* p = ::mmap(nullptr, sizeof(restart_status_block), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      if (owner_) ::close(fd_);
      throw gmi::error(std::string("mmap of the restart status: ") + std::strerror(e));
    }
    block_ = static_cast<restart_status_block*>(p);
  }
  int fd_ = -1;
  restart_status_block* block_ = nullptr;
  bool owner_ = false;
};

// The attempt number of this process (1 when it is not an attempt of a restart loop).
[[nodiscard]] inline int restart_attempt() {
  const auto note = restart_note_from_env();
  return note ? note->attempt : 1;
}
[[nodiscard]] inline bool is_restart_attempt() { return restart_note_from_env().has_value(); }

// GMI_TEST_KILL_AT of this process, honoured on attempt 1 only (so the restart can succeed).
[[nodiscard]] inline std::optional<kill_at> test_kill_from_env() {
  const char* v = std::getenv(test_kill_var);
  if (!v || !*v || restart_attempt() != 1) return std::nullopt;
  return parse_kill_at(v);
}

// What the parent's loop needs from the pipeline.
struct restart_loop_config {
  int restarts = 3;                   // relaunches allowed
  std::string checkpoint_path;        // the manifest the GMIs save
  std::string first_resume;           // the user's --resume ("" : from scratch)
  std::uint64_t first_iteration = 0;  // where the first attempt starts
  double samples_per_iteration = 0;   // of the whole group
  std::chrono::seconds attempt_bound{3600 + 600};  // an attempt running longer is ended and counts as lost
  // The checkpoint iteration to resume from after a failure, given the last one an attempt of this run completed
  // (nullopt: none yet); nullopt when there is none to trust, with the reason in `why`.
  std::function<std::optional<std::uint64_t>(std::optional<std::uint64_t> saved, std::string& why)> last_checkpoint;
  std::function<void()> prune;        // removes files of saves that never completed
  const std::atomic<int>* stop_signal = nullptr;
};

namespace detail {
inline std::string signal_text(int sig) {
  const char* n = sigabbrev_np(sig);
  return std::to_string(sig) + (n ? std::string(" (SIG") + n + ")" : std::string());
}
inline std::string seconds_text(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f s", s);
  return b;
}
inline std::string count_text(double v) {
  char b[32];
  if (v >= 1e6) std::snprintf(b, sizeof b, "%.2f M", v / 1e6);
  else if (v >= 1e3) std::snprintf(b, sizeof b, "%.2f K", v / 1e3);
  else std::snprintf(b, sizeof b, "%.0f", v);
  return b;
}
}  // namespace detail

// "lost 3 iterations (3.07 K env steps, 0.05 s of training) since the checkpoint at iteration 20"
[[nodiscard]] inline std::string describe(const lost_progress& l) {
  return "lost " + std::to_string(l.iterations) + " iteration" + (l.iterations == 1 ? "" : "s") + " (" +
         detail::count_text(l.env_steps) + " env steps, " + detail::seconds_text(l.seconds) + " of training) since " +
         (l.from_checkpoint ? "the checkpoint at iteration " + std::to_string(l.resume_from)
                            : "the start at iteration " + std::to_string(l.resume_from) + " (no checkpoint yet)");
}

// The parent's loop: attempt 1 from cfg.first_resume, then one relaunch per lost group, each from the last
// complete checkpoint. Returns the run's exit code (1 after giving up). Every wait is bounded by attempt_bound.
inline int run_with_restarts(const restart_loop_config& cfg) {
  gmi::require(!cfg.checkpoint_path.empty(), "--restart-on-failure without --checkpoint", "no checkpoint path",
               "--checkpoint PATH (restarts resume from it)");
  restart_status status = restart_status::create();
  std::string resume = cfg.first_resume;
  int restarts = 0;
  double lost_seconds = 0, relaunch_seconds = 0;
  std::uint64_t lost_iterations = 0;
  double lost_steps = 0;
  std::int64_t failed_ns = 0;  // when the previous attempt was found lost
  std::optional<std::uint64_t> saved;  // the last checkpoint an attempt of this run completed
  for (int attempt = 1;; ++attempt) {
    status.reset();
    runtime::env_list env;
    add_to_chosen(env, "restart", to_json(restart_note{.attempt = attempt, .fd = status.fd(), .resume = resume}));
    if (const char* k = std::getenv(test_kill_var)) env.emplace_back(test_kill_var, k);
    const pid_t pid = runtime::spawn_self(env);
    const auto start = std::chrono::steady_clock::now();
    attempt_end end;
    int forwarded = 0;
    int wstatus = 0;
    for (;;) {
      const pid_t got = ::waitpid(pid, &wstatus, WNOHANG);
      if (got == pid) break;
      if (got < 0 && errno != EINTR) break;
      const int sig = cfg.stop_signal ? cfg.stop_signal->load() : 0;
      if (sig && !forwarded) {  // the attempt runs in its own process group: pass the stop on
        ::kill(pid, sig);
        forwarded = sig;
      }
      if (!end.past_deadline && std::chrono::steady_clock::now() - start > cfg.attempt_bound) {
        end.past_deadline = true;
        ::kill(-pid, SIGTERM);
        const auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (::waitpid(pid, &wstatus, WNOHANG) == 0 && std::chrono::steady_clock::now() < grace) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        ::kill(-pid, SIGKILL);
        while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // Reaped: its GMI processes went with it (PR_SET_PDEATHSIG), its MPS daemons quit in its teardown. An attempt
    // that was killed (a thread GMI's fault or SIGKILL takes the process) could not unlink its shared-memory
    // segments: they are stale now (owner dead) and go here.
    runtime::remove_stale_segments();
    comm::cleanup_stale_segments();
    const restart_status_block& b = status.block();
    if (attempt > 1 && b.started_ns.load() > 0 && failed_ns > 0) {
      relaunch_seconds += static_cast<double>(b.started_ns.load() - failed_ns) / 1e9;
    }
    if (const std::uint64_t c = b.checkpoint_plus_1.load()) saved = c - 1;
    end.signaled = WIFSIGNALED(wstatus);
    end.code = end.signaled ? WTERMSIG(wstatus) : WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1;
    end.lost_gmi = b.lost_gmi.load() != 0;
    end.stop_requested = cfg.stop_signal && cfg.stop_signal->load() != 0;
    const restart_action action = decide_restart(end, restarts, cfg.restarts);
    if (action == restart_action::finish) {
      if (restarts > 0 && !end.signaled && end.code == 0) {
        std::printf("gmi: finished after %d restart%s: lost %llu iterations (%s env steps) in all; time lost %s "
                    "(%s of training redone, %s from failure to the next attempt's first iteration)\n",
                    restarts, restarts == 1 ? "" : "s", static_cast<unsigned long long>(lost_iterations),
                    detail::count_text(lost_steps).c_str(), detail::seconds_text(lost_seconds + relaunch_seconds).c_str(),
                    detail::seconds_text(lost_seconds).c_str(), detail::seconds_text(relaunch_seconds).c_str());
        std::fflush(stdout);
      }
      return end.signaled ? 128 + end.code : end.code;
    }
    failed_ns = steady_ns();
    std::string why = b.note_bytes.load() ? status.note() : "";
    if (why.empty()) {
      why = end.past_deadline ? "the attempt ran past " + std::to_string(cfg.attempt_bound.count()) + " s and was ended"
            : end.signaled   ? "the attempt's process (thread GMIs) ended with signal " + detail::signal_text(end.code)
                             : "the attempt exited with code " + std::to_string(end.code);
    }
    const std::uint64_t failed_at = b.iteration.load();
    std::string no_checkpoint;
    const std::optional<std::uint64_t> ck = cfg.last_checkpoint ? cfg.last_checkpoint(saved, no_checkpoint) : std::nullopt;
    if (no_checkpoint.empty()) no_checkpoint = "no checkpoint saved in this run yet";
    const std::int64_t since_ns = ck && b.checkpoint_plus_1.load() == *ck + 1 ? b.checkpoint_ns.load() : b.started_ns.load();
    const double redo = since_ns > 0 ? static_cast<double>(failed_ns - since_ns) / 1e9 : 0.0;
    const std::uint64_t run_start = ck ? *ck : cfg.first_iteration;
    const lost_progress lost = progress_lost(std::max(failed_at, run_start), ck, run_start, cfg.samples_per_iteration, redo);
    std::fprintf(stderr, "gmi: attempt %d lost the GMI group at iteration %llu: %s\n", attempt,
                 static_cast<unsigned long long>(failed_at), why.c_str());
    if (action == restart_action::give_up) {
      std::fprintf(stderr, "gmi: giving up after %d restart%s (--restart-on-failure %d): %s\n", restarts,
                   restarts == 1 ? "" : "s", cfg.restarts, describe(lost).c_str());
      return 1;
    }
    if (cfg.prune) cfg.prune();
    ++restarts;
    lost_iterations += lost.iterations;
    lost_steps += lost.env_steps;
    lost_seconds += lost.seconds;
    resume = ck ? cfg.checkpoint_path : cfg.first_resume;
    std::printf("gmi: restart %d of %d from %s: %s\n", restarts, cfg.restarts,
                ck ? ("checkpoint " + cfg.checkpoint_path + " at iteration " + std::to_string(*ck)).c_str()
                   : (cfg.first_resume.empty() ? std::string("scratch (" + no_checkpoint + ")")
                                               : "--resume " + cfg.first_resume + " (" + no_checkpoint + ")")
                         .c_str(),
                describe(lost).c_str());
    std::fflush(stdout);
  }
}

}  // namespace gmi

#pragma once
// GMIs that are threads share one process: a fault in one (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) ends them
// all, with nothing to say which. install_crash_report() makes such a death say so: one line naming the signal
// and the GMI whose thread faulted ("gmi: GMI 5 (GPU 1, slice 1) crashed: SIGSEGV"), a backtrace (function names
// where the executable exports them, e.g. linked with -rdynamic), the run's shared-memory segment unlinked, and
// the signal re-raised with its default action (exit status and core dump as usual). Only async-signal-safe
// calls run in the handler; the texts are prepared before.

#include <execinfo.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>

#include <gmi/runtime/identity.hpp>

namespace gmi::runtime {

namespace detail {
inline constexpr std::size_t crash_text_bytes = 160;
inline thread_local char crash_gmi[crash_text_bytes] = {};  // this thread's GMI, "" outside GMI threads
inline char crash_segment[256] = {};                        // the run's segment to unlink (launcher)
inline std::atomic<bool> crash_installed{false};

inline void copy_text(char* to, std::size_t cap, const std::string& from) noexcept {
  const std::size_t n = std::min(cap - 1, from.size());
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}
inline void write_text(const char* s) noexcept {
  const ssize_t ignored = ::write(STDERR_FILENO, s, std::strlen(s));
  (void)ignored;
}

extern "C" inline void crash_handler(int sig) {
  const char* name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE"
                   : sig == SIGILL  ? "SIGILL"  : sig == SIGABRT ? "SIGABRT" : "a fatal signal";
  write_text("gmi: ");
  write_text(crash_gmi[0] ? crash_gmi : "the launcher thread");
  write_text(" crashed: ");
  write_text(name);
  write_text("; backtrace:\n");
  void* frames[48];
  const int n = ::backtrace(frames, 48);
  ::backtrace_symbols_fd(frames, n, STDERR_FILENO);
  if (crash_segment[0]) shm_unlink(crash_segment);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}
}  // namespace detail

// Installs the handler once per process (later calls do nothing).
inline void install_crash_report() {
  if (detail::crash_installed.exchange(true)) return;
  void* warm[2];
  (void)::backtrace(warm, 2);  // loads libgcc's unwinder now: the first backtrace() may allocate
  struct sigaction sa {};
  sa.sa_handler = detail::crash_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}

// The calling thread runs GMI `id` (thread GMIs; a GMI process is named by its launcher when it dies).
inline void name_thread_for_crash_report(const identity& id) {
  detail::copy_text(detail::crash_gmi, detail::crash_text_bytes, id.describe());
}
// The shared-memory segment a crash must not leave behind ("" clears it).
inline void unlink_on_crash(const std::string& shm_name) {
  detail::copy_text(detail::crash_segment, sizeof detail::crash_segment, shm_name);
}

}  // namespace gmi::runtime

#pragma once
// Bounded waits for shared-memory flags: spin briefly, then sleep with growing pauses, checking the peer's
// health between pauses. Every wait in comm/ ends with a value, a comm_error, or a timeout: never a hang.

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <gmi/core/error.hpp>

namespace gmi::comm {

using milliseconds = std::chrono::milliseconds;

// The default bound on any wait for a peer (override per call); GMI_COMM_TIMEOUT_MS is read by callers that want it.
inline milliseconds default_timeout() {
  if (const char* v = std::getenv("GMI_COMM_TIMEOUT_MS")) {
    try {
      return milliseconds(std::stoll(v));
    } catch (...) {
      throw config_error(got_need("GMI_COMM_TIMEOUT_MS", v, "an integer number of milliseconds"));
    }
  }
  return std::chrono::seconds(60);
}

namespace detail {
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
}  // namespace detail

// Waits until ready() is true. check() runs between sleeps and throws when waiting is pointless (peer dead,
// ring broken). Throws comm_error("<what>: timed out after N ms ...") at the deadline.
template <class Ready, class Check>
void bounded_wait(Ready&& ready, Check&& check, milliseconds timeout, const std::string& what) {
  for (int i = 0; i < 4096; ++i) {  // the hot path: the peer is usually a few microseconds away
    if (ready()) return;
    detail::cpu_relax();
  }
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + timeout;
  auto pause = std::chrono::microseconds(1);
  for (;;) {
    if (ready()) return;
    check();
    if (ready()) return;
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline) {
      throw comm_error(what + ": timed out after " + std::to_string(timeout.count()) +
                       " ms (need the peer to respond within the timeout; raise it with GMI_COMM_TIMEOUT_MS)");
    }
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::microseconds(500)) pause *= 2;
  }
}

}  // namespace gmi::comm

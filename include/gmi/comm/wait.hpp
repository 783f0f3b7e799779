#pragma once
// Bounded waits for shared-memory flags and device work: spin for a short time window (the partner is usually
// microseconds away), then sleep in short steps, then in long ones; the peer's health is checked throughout.
// Every wait in comm/ ends with a value, a comm_error, or a timeout: never a hang.

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include <gmi/core/error.hpp>

namespace gmi::comm {

using milliseconds = std::chrono::milliseconds;
using microseconds = std::chrono::microseconds;

// The default bound on any wait for a peer: every component's options carry a `timeout` that starts at this, and
// calls that wait take one.
constexpr milliseconds default_timeout() noexcept { return std::chrono::seconds(60); }

// How a wait spends its time. Sleeping costs far more than the sleep asked for (Linux adds its 50 us timer
// slack to every sleep), so a wait whose partner is tens of microseconds away must not sleep at all.
struct wait_policy {
  microseconds spin{2000};              // pause, then sched_yield, for this long before the first sleep
  microseconds yield_after{50};         // pure pause spinning up to here; sched_yield afterwards (gives the core away)
  microseconds check_every{500};        // check() runs this often while spinning (it may make syscalls)
  microseconds short_sleep{20};         // the first sleep
  microseconds short_sleep_cap{50};     // sleeps stay at most this long until short_phase has passed
  milliseconds short_phase{20};
  microseconds long_sleep_cap{1000};    // then a long wait (the partner is busy anyway) sleeps up to this much
};

// For waits on a peer or the device that are expected to be short (a handshake, a collective): the defaults, a
// 2 ms spin. A wait that must not spin (fewer cores than waiting processes) passes a policy with spin = 0.
inline const wait_policy& short_wait() {
  static const wait_policy p{};
  return p;
}

// For waits that are long by nature (a peer starting up, a file appearing on a shared file system): no spin.
inline wait_policy long_wait() {
  wait_policy w;
  w.spin = microseconds(0);
  w.short_sleep = microseconds(100);
  w.short_sleep_cap = microseconds(1000);
  w.short_phase = milliseconds(0);
  w.long_sleep_cap = microseconds(10000);
  return w;
}

namespace detail {
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
[[noreturn]] inline void throw_wait_timeout(const std::string& what, milliseconds timeout) {
  throw comm_error(what + ": timed out after " + std::to_string(timeout.count()) +
                   " ms (need the peer to respond within the timeout; raise the timeout in the options)");
}
}  // namespace detail

// Waits until ready() is true. check() runs every policy.check_every while spinning and before every sleep, and
// throws when waiting is pointless (peer dead, ring broken). Throws comm_error("<what>: timed out after N ms
// ...") at the deadline (counted from the call).
template <class Ready, class Check>
void bounded_wait(Ready&& ready, Check&& check, milliseconds timeout, const std::string& what,
                  const wait_policy& policy) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < 64; ++i) {  // the partner is often already there: no clock reads yet
    if (ready()) return;
    detail::cpu_relax();
  }
  const auto start = clock::now();
  const auto deadline = start + timeout;
  const auto spin_end = start + std::min<clock::duration>(policy.spin, timeout);
  const auto yield_from = start + policy.yield_after;
  auto next_check = start + policy.check_every;
  auto now = start;
  while (now < spin_end) {
    if (ready()) return;
    now = clock::now();
    if (now >= next_check) {
      check();
      if (ready()) return;
      next_check = now + policy.check_every;
    }
    if (now < yield_from) {
      for (int i = 0; i < 16; ++i) detail::cpu_relax();
    } else {
      ::sched_yield();  // other waiters and the partner may need this core
    }
  }
  auto pause = policy.short_sleep;
  for (;;) {
    if (ready()) return;
    check();
    if (ready()) return;
    now = clock::now();
    if (now > deadline) detail::throw_wait_timeout(what, timeout);
    std::this_thread::sleep_for(std::min<clock::duration>(pause, deadline - now + microseconds(1)));
    const auto cap = now - start < policy.short_phase ? policy.short_sleep_cap : policy.long_sleep_cap;
    pause = std::min(pause * 2, cap);
  }
}

// The same with short_wait(): the policy for every peer and device wait on a hot path.
template <class Ready, class Check>
void bounded_wait(Ready&& ready, Check&& check, milliseconds timeout, const std::string& what) {
  bounded_wait(static_cast<Ready&&>(ready), static_cast<Check&&>(check), timeout, what, short_wait());
}

}  // namespace gmi::comm

#pragma once
// Stage lines for finding out where a run of many GMIs spends its time or stops: with GMI_TRACE=1 (any value
// but empty or 0) every GMI prints "[gmi trace] 12:03:04.512 GMI 5 (GPU 0, slice 5): engine built" to stderr.
// Off by default; one getenv per process.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>

#include <gmi/runtime/identity.hpp>

namespace gmi::runtime {

[[nodiscard]] inline bool trace_enabled() noexcept {
  static const bool on = [] {
    const char* v = std::getenv("GMI_TRACE");
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
  }();
  return on;
}

// One stage of GMI `id`, when tracing is on (one fprintf: lines of several GMIs do not interleave).
inline void trace(const identity& id, std::string_view stage) {
  if (!trace_enabled()) return;
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  localtime_r(&secs, &tm);
  std::fprintf(stderr, "[gmi trace] %02d:%02d:%02d.%03d %s: %.*s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
               static_cast<int>(ms), id.describe().c_str(), static_cast<int>(stage.size()), stage.data());
}

}  // namespace gmi::runtime

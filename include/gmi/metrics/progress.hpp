#pragma once
// The progress line of long runs: iteration, throughput tiers, mean return and time left, on one line.

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace gmi::metrics {

// "1.23M", "456k", "12.3G": rates and counts at a glance.
inline std::string si(double v) {
  char buf[32];
  const double a = std::fabs(v);
  if (a >= 1e9) std::snprintf(buf, sizeof buf, "%.2fG", v / 1e9);
  else if (a >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  else if (a >= 1e3) std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// "1:02:03" or "4:05"; "?" when unknown.
inline std::string clock_text(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

// Seconds left until the run stops at the first of its two limits: `goal` steps at the average rate since the
// start, where `elapsed` began at `from` (a resumed run: the checkpoint's count, which took none of this run's time),
// or `max_seconds` of elapsed time (a run with --max-seconds 120 does not show an ETA of an hour). 0: unknown or none,
// or the step goal reached (the last line of a run that passed --max-env-steps within its final iteration).
inline double eta_seconds(double done, double goal, double elapsed, double from = 0,
                          double max_seconds = std::numeric_limits<double>::infinity()) {
  if (goal <= done) return 0;
  const double by_time = max_seconds > elapsed ? max_seconds - elapsed : 0;
  if (done <= from || elapsed <= 0) return std::isfinite(by_time) ? by_time : 0;
  return std::fmin((goal - done) * elapsed / (done - from), by_time);
}

}  // namespace gmi::metrics

#pragma once
// Why a run stopped: one enum for every layout, with the text the progress lines, result lines and the GMIs'
// reports use ("step limit", "signal 15", ...). A synchronous group's reason comes from its GMIs' own (rank
// order): a GMI that only followed the group's vote reports "stopped"; the GMI that voted reports its cause. The
// group's reason is GMI 0's, unless GMI 0 only followed, then the first voter's.

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gmi {

enum class stop_reason {
  step_limit,  // --max-env-steps reached
  time_limit,  // --max-seconds reached
  solved,      // the mean return reached the target
  signal,      // SIGINT or SIGTERM
  diverged,    // non-finite loss terms: nothing saved
  stopped,     // followed the group's decision, or a GMI process whose launcher reports
  served,      // the serving layout measured what it was asked to
};

[[nodiscard]] inline std::string stop_reason_text(stop_reason r, int signal_number = 0) {
  switch (r) {
    case stop_reason::step_limit: return "step limit";
    case stop_reason::time_limit: return "time limit";
    case stop_reason::solved: return "solved";
    case stop_reason::signal: return "signal " + std::to_string(signal_number);
    case stop_reason::diverged: return "diverged";
    case stop_reason::served: return "served";
    case stop_reason::stopped: break;
  }
  return "stopped";
}

// The enum of a reason's text (GMIs report text in JSON); "signal N" gives signal and N.
[[nodiscard]] inline std::optional<stop_reason> parse_stop_reason(std::string_view text, int* signal_number = nullptr) {
  if (text.starts_with("signal ")) {
    if (signal_number) *signal_number = std::atoi(std::string(text.substr(7)).c_str());
    return stop_reason::signal;
  }
  for (const stop_reason r : {stop_reason::step_limit, stop_reason::time_limit, stop_reason::solved,
                              stop_reason::diverged, stop_reason::stopped, stop_reason::served})
    if (text == stop_reason_text(r)) return r;
  return std::nullopt;
}

// What a run has to stop for, in the order that names its reason: diverged, solved, a signal, the time limit,
// the step limit; none of them: it followed a stop (the group's vote, the supervisor's teardown).
struct stop_causes {
  bool diverged = false, solved = false;
  int signal = 0;
  bool time_up = false, steps_up = false;
};
[[nodiscard]] inline stop_reason first_stop_reason(const stop_causes& c) {
  return c.diverged ? stop_reason::diverged
         : c.solved ? stop_reason::solved
         : c.signal ? stop_reason::signal
         : c.time_up ? stop_reason::time_limit
         : c.steps_up ? stop_reason::step_limit
                      : stop_reason::stopped;
}
[[nodiscard]] inline std::string stop_text(const stop_causes& c) { return stop_reason_text(first_stop_reason(c), c.signal); }

// The exit status of a run that stopped for `reason`: 1 when diverged, 128 + the signal after one, else 0.
[[nodiscard]] inline int exit_code_of(stop_reason reason, int signal_number) {
  if (reason == stop_reason::diverged) return 1;
  return signal_number ? 128 + signal_number : 0;
}

[[nodiscard]] inline std::string group_stop_reason(const std::vector<std::string>& reasons) {
  if (reasons.empty()) return "stopped";
  if (reasons.front() != "stopped") return reasons.front();
  for (const auto& r : reasons)
    if (r != "stopped") return r;
  return "stopped";
}

}  // namespace gmi

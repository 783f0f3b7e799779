#pragma once
// Why a synchronous group stopped, from its GMIs' own stop reasons (rank order). A GMI that only followed the
// group's vote reports "stopped"; the GMI that voted reports its cause ("time limit" when its clock passed
// --max-seconds first, "solved", "signal 15", ...). The group's reason is GMI 0's, unless GMI 0 only followed,
// then the first voter's.

#include <string>
#include <vector>

namespace gmi {

[[nodiscard]] inline std::string group_stop_reason(const std::vector<std::string>& reasons) {
  if (reasons.empty()) return "stopped";
  if (reasons.front() != "stopped") return reasons.front();
  for (const auto& r : reasons)
    if (r != "stopped") return r;
  return "stopped";
}

}  // namespace gmi

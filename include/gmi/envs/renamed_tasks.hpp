#pragma once
// Task names that changed: the Isaac-Gym-style Ant and Humanoid took the names ant and humanoid, and the
// Gymnasium-style ones became ant_v4 and humanoid_v4 (docs/envs.md). A user who types an old name gets one line
// saying what it is called now.

#include <string>
#include <string_view>

namespace gmi::envs {

// The line for a task name that is no longer one ("task 'isaac_ant' is now called 'ant' (...)"), empty otherwise.
inline std::string renamed_task(std::string_view name) {
  if (name == "isaac_ant") return "task 'isaac_ant' is now called 'ant' (the Gymnasium-style one is 'ant_v4')";
  if (name == "isaac_humanoid")
    return "task 'isaac_humanoid' is now called 'humanoid' (the Gymnasium-style one is 'humanoid_v4')";
  return {};
}

}  // namespace gmi::envs

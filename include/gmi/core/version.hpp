#pragma once
// The library version, kept in step with project(VERSION) in CMakeLists.txt (a test checks).
#define GMI_VERSION_MAJOR 0
#define GMI_VERSION_MINOR 1
#define GMI_VERSION_PATCH 0

namespace gmi {
inline constexpr int version_major = GMI_VERSION_MAJOR;
inline constexpr int version_minor = GMI_VERSION_MINOR;
inline constexpr int version_patch = GMI_VERSION_PATCH;
inline constexpr const char* version_string = "0.1.0";
}  // namespace gmi

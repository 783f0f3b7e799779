#pragma once
// The files the CUDA driver keeps in /dev/shm for a process's interprocess events: cuda.shm.<n>.<pid in hex>.<k>
// (80 KiB each on the driver measured). The driver removes a process's file only when the process tears its
// contexts down (cuda::release_primary_contexts, which every GMI process calls at its end); a GMI that is killed
// cannot, so the supervisor removes the files of each GMI process it reaps. Measured: docs/runtime.md.

#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <string_view>

namespace gmi::runtime::detail {

// Whether `name` is a driver file of process `pid`: "cuda.shm." then one field, then the pid in hex, then more.
inline bool driver_shm_file_of(std::string_view name, pid_t pid) {
  constexpr std::string_view prefix = "cuda.shm.";
  if (name.substr(0, prefix.size()) != prefix) return false;
  const std::string_view rest = name.substr(prefix.size());
  const auto dot = rest.find('.');
  if (dot == std::string_view::npos) return false;
  char hex[24];
  std::snprintf(hex, sizeof hex, ".%x.", static_cast<unsigned>(pid));
  return rest.substr(dot).substr(0, std::string_view(hex).size()) == hex;
}

// Removes this user's driver files of `pid` (a process already reaped) from `dir`; returns how many. Never throws.
inline int remove_driver_shm_files(pid_t pid, const char* dir = "/dev/shm") noexcept {
  int removed = 0;
  try {
    DIR* d = opendir(dir);
    if (!d) return 0;
    while (const dirent* e = readdir(d)) {
      if (!driver_shm_file_of(e->d_name, pid)) continue;
      const std::string path = std::string(dir) + "/" + e->d_name;
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0 && st.st_uid == ::getuid() && ::unlink(path.c_str()) == 0) ++removed;
    }
    closedir(d);
  } catch (...) {
  }
  return removed;
}

}  // namespace gmi::runtime::detail

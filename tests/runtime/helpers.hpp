#pragma once
// Checks shared by the runtime tests: no child processes left, no /dev/shm entry of a run left.

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gmi_test {

// Pids of the live processes whose parent is this process (zombies included: those are leaks too).
inline std::vector<int> children_of_this_process() {
  std::vector<int> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  const int me = getpid();
  while (dirent* e = readdir(d)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces, so parse after the last ')'.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == me) out.push_back(pid);
  }
  closedir(d);
  return out;
}

inline bool process_exists(int pid) { return kill(pid, 0) == 0 || errno == EPERM; }

inline bool shm_exists(const std::string& name) {  // name as given to shm_open: "/gmi-..."
  return access(("/dev/shm" + name).c_str(), F_OK) == 0;
}

}  // namespace gmi_test

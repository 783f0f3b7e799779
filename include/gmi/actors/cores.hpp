#pragma once
// Which host cores CPU actors run on: the cores this process may use, their NUMA nodes (from sysfs), a choice of
// n of them that stays on one node where it can, and pinning a thread to one core. Impossible counts are refused
// with one line.

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gmi/core/error.hpp>

namespace gmi::actors {

// The cores this process may run on (sched_getaffinity), ascending.
[[nodiscard]] inline std::vector<int> available_cores() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) out.push_back(c);
    }
  }
  if (out.empty()) {
    for (unsigned c = 0; c < std::max(1u, std::thread::hardware_concurrency()); ++c) out.push_back(int(c));
  }
  return out;
}

// The NUMA node of a core: the nodeK entry sysfs puts in /sys/devices/system/cpu/cpuN/ (0 where there is none,
// as on machines without NUMA or without sysfs).
[[nodiscard]] inline int numa_node_of(int core) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = "/sys/devices/system/cpu/cpu" + std::to_string(core);
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 4 && name.starts_with("node") && name.find_first_not_of("0123456789", 4) == std::string::npos) {
      return std::stoi(name.substr(4));
    }
  }
  return 0;
}

// n cores out of `from` (empty: available_cores()): the whole of the NUMA node with the most free cores when it
// has n, so actors and their memory stay on one node; otherwise nodes in order of size, whole nodes first.
// Refuses n < 1 and n > the cores there are, in one line.
[[nodiscard]] inline std::vector<int> choose_cores(int n, std::vector<int> from = {}) {
  if (from.empty()) from = available_cores();
  require(n >= 1 && n <= int(from.size()), "actor cores", n,
          "1.." + std::to_string(from.size()) + " (the cores this process may run on)");
  std::map<int, std::vector<int>> by_node;
  for (int c : from) by_node[numa_node_of(c)].push_back(c);
  std::vector<std::vector<int>> nodes;
  for (auto& [node, cores] : by_node) nodes.push_back(cores);
  std::stable_sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  std::vector<int> out;
  for (const auto& cores : nodes) {
    for (int c : cores) {
      if (int(out.size()) == n) return out;
      out.push_back(c);
    }
  }
  return out;
}

// Pins the calling thread to one core; refuses a core this process may not use, in one line.
inline void pin_this_thread(int core) {
  require(core >= 0 && core < CPU_SETSIZE, "core to pin to", core, "0.." + std::to_string(CPU_SETSIZE - 1));
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
    throw config_error(got_need("core to pin to", core, "one of the cores this process may run on (sched_getaffinity)"));
  }
}

// The core the calling thread runs on now.
[[nodiscard]] inline int current_core() { return sched_getcpu(); }

}  // namespace gmi::actors

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
#include <utility>
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

// Actor cores for `gmis` GMIs on this host, disjoint: `per_gmi` each (0: the cores there are split evenly, one at
// least each), out of `from` (empty: available_cores()). Each set stays on one NUMA node where some node has
// per_gmi free cores (the node with the most free cores first, as choose_cores does); otherwise it takes cores from
// the nodes in order of free cores. Refuses gmis < 1, per_gmi < 0 and gmis x per_gmi above the cores there are,
// in one line.
[[nodiscard]] inline std::vector<std::vector<int>> gmi_core_sets(int gmis, int per_gmi, std::vector<int> from = {}) {
  if (from.empty()) from = available_cores();
  const int have = int(from.size());
  require(gmis >= 1 && gmis <= have, "GMIs with CPU actors", gmis,
          "1.." + std::to_string(have) + " (one core at least each; " + std::to_string(have) + " cores this process may run on)");
  require(per_gmi >= 0, "actor cores per GMI", per_gmi, ">= 0 (0: the cores split evenly)");
  const int n = per_gmi > 0 ? per_gmi : have / gmis;
  require(gmis * n <= have, "actor cores for " + std::to_string(gmis) + " GMIs",
          std::to_string(gmis) + " x " + std::to_string(n),
          "<= " + std::to_string(have) + " (the cores this process may run on)");
  std::map<int, std::vector<int>> free;  // node -> its unused cores, ascending
  for (int c : from) free[numa_node_of(c)].push_back(c);
  std::vector<std::vector<int>> out;
  for (int g = 0; g < gmis; ++g) {
    std::vector<std::pair<int, int>> nodes;  // (free cores, node), most free first, lower node on ties
    for (const auto& [node, cores] : free) nodes.emplace_back(int(cores.size()), node);
    std::stable_sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<int> set;
    for (const auto& [count, node] : nodes) {
      auto& cores = free[node];
      while (!cores.empty() && int(set.size()) < n) {
        set.push_back(cores.front());
        cores.erase(cores.begin());
      }
      if (int(set.size()) == n) break;
    }
    std::sort(set.begin(), set.end());
    out.push_back(std::move(set));
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

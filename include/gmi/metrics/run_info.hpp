#pragma once
// Who and where a result line comes from: run id, device, driver, git revision, in the fields every gmi
// result line carries (bench/results/*.jsonl).

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>

#include <gmi/cuda/device.hpp>
#include <gmi/metrics/summary.hpp>

#ifndef GMI_GIT_REVISION
#define GMI_GIT_REVISION "unknown"  // benchmarks and examples get the real one from CMake
#endif

namespace gmi::metrics {

struct run_info {
  std::string run_id;
  std::string device = "none";
  int gpus = 0;
  std::string driver = "none";
  std::string git = GMI_GIT_REVISION;
};

// Describes this machine; run ids look like 2026-11-21T10:00:00Z-h200-ab12cd (time, device, random tag).
inline run_info describe_run() {
  run_info info;
  // A copy of the tree without .git (a GPU machine) gets the revision from the environment instead.
  if (const char* rev = std::getenv("GMI_GIT_REVISION"); rev && *rev) info.git = rev;
  if (const auto n = gmi::cuda::device_count(); n) {
    info.gpus = *n;
    info.device = gmi::cuda::describe_device(0).name;
    int driver = 0;
    if (cudaDriverGetVersion(&driver) == cudaSuccess) {
      info.driver = std::to_string(driver / 1000) + "." + std::to_string((driver % 1000) / 10);
    }
  }
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::string short_device = "cpu";
  for (const char* model : {"H200", "H100", "A100", "L40S", "B200"}) {
    if (info.device.find(model) != std::string::npos) {
      short_device = model;
      for (auto& c : short_device) c = static_cast<char>(std::tolower(c));
    }
  }
  std::random_device rd;
  char tag[8];
  std::snprintf(tag, sizeof tag, "%06x", rd() & 0xffffffu);
  info.run_id = std::string(stamp) + "-" + short_device + "-" + tag;
  return info;
}

// A result line of bench-spec: the run's identity, then the caller's configuration and metric.
inline nlohmann::json result_line(const run_info& run, const std::string& bench, const std::string& impl,
                                  const std::string& metric, const summary& s) {
  return {{"run_id", run.run_id}, {"bench", bench}, {"impl", impl},    {"device", run.device},
          {"gpus", run.gpus},     {"driver", run.driver}, {"git", run.git}, {"metric", metric},
          {"median", s.median},   {"min", s.min},       {"max", s.max},   {"reps", s.reps}};
}

}  // namespace gmi::metrics

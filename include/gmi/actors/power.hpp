#pragma once
// Energy counters for the CPU/GPU ratio study: the host CPU's name (/proc/cpuinfo), CPU package energy from
// RAPL (/sys/class/powercap, where the kernel exposes it) and GPU energy from NVML (libnvidia-ml.so.1, opened at
// run time). Each reader says why it is absent instead of making a number up.

#include <dlfcn.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace gmi::actors {

// "AMD EPYC 9654 96-Core Processor" (the first "model name" of /proc/cpuinfo), or "unknown".
[[nodiscard]] inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    if (line.starts_with("model name")) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

// Energy in joules since some fixed point, or absent with the reason.
struct energy_reading {
  std::optional<double> joules;
  std::string absent_because;
};

// The sum of the top-level RAPL package domains (intel-rapl:N, also used by AMD's driver). Counters wrap at
// max_energy_range_uj; callers take differences over short spans, and rapl_joules_between corrects one wrap.
class rapl_counter {
 public:
  rapl_counter() {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (fs::directory_iterator it("/sys/class/powercap", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.find(':') == name.rfind(':') && name.find(':') != std::string::npos &&
          fs::exists(it->path() / "energy_uj")) {
        domains_.push_back(it->path().string());
      }
    }
  }
  [[nodiscard]] energy_reading read() const {
    if (domains_.empty()) return {std::nullopt, "no RAPL domains in /sys/class/powercap"};
    double total = 0;
    for (const auto& d : domains_) {
      std::ifstream f(d + "/energy_uj");
      std::uint64_t uj = 0;
      if (!(f >> uj)) return {std::nullopt, d + "/energy_uj is not readable (needs root on most kernels)"};
      total += double(uj) * 1e-6;
    }
    return {total, ""};
  }

 private:
  std::vector<std::string> domains_;
};

// Total energy of GPU `index` through NVML (nvmlDeviceGetTotalEnergyConsumption, millijoules since the driver
// loaded; Volta and newer).
class nvml_energy {
 public:
  explicit nvml_energy(unsigned index = 0) {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) {
      why_ = "libnvidia-ml.so.1 not found";
      return;
    }
    using init_t = int (*)();
    using handle_t = int (*)(unsigned, void**);
    auto init = reinterpret_cast<init_t>(dlsym(lib_, "nvmlInit_v2"));
    auto handle = reinterpret_cast<handle_t>(dlsym(lib_, "nvmlDeviceGetHandleByIndex_v2"));
    energy_ = reinterpret_cast<energy_t>(dlsym(lib_, "nvmlDeviceGetTotalEnergyConsumption"));
    if (!init || !handle || !energy_) {
      why_ = "libnvidia-ml.so.1 lacks the energy counter";
    } else if (init() != 0 || handle(index, &device_) != 0) {
      why_ = "NVML could not open GPU " + std::to_string(index);
    }
  }
  nvml_energy(const nvml_energy&) = delete;
  nvml_energy& operator=(const nvml_energy&) = delete;
  ~nvml_energy() {
    if (lib_) dlclose(lib_);
  }
  [[nodiscard]] energy_reading read() const {
    if (!why_.empty()) return {std::nullopt, why_};
    unsigned long long mj = 0;
    if (energy_(device_, &mj) != 0) return {std::nullopt, "nvmlDeviceGetTotalEnergyConsumption failed"};
    return {double(mj) * 1e-3, ""};
  }

 private:
  using energy_t = int (*)(void*, unsigned long long*);
  void* lib_ = nullptr;
  void* device_ = nullptr;
  energy_t energy_ = nullptr;
  std::string why_;
};

}  // namespace gmi::actors

#pragma once
// The trial the explorer runs for each candidate (Algorithm 1's profile(DRL_bench, GMIPerGPU, num_env)), kept
// abstract: a trial_function runs a short run and returns what it measured, so the explorer is tested with
// synthetic models and gmi::run plugs in its real serving or training trials. Also the memory projection that
// stops a row before a trial that would not fit the GMI's share of device memory.

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>

namespace gmi::plan {

// One point of the search: a partition backend, GMIs per GPU, environments per GMI.
struct candidate {
  std::string partition = "none";  // partition::<backend>::name: "none", "mps", "green_context", "mig", "cpu_cores"
  int gmis_per_gpu = 1;
  int envs_per_gmi = 128;

  friend bool operator==(const candidate&, const candidate&) = default;
};

// "mps 4 GMIs x 1024 envs"
[[nodiscard]] inline std::string describe(const candidate& c) {
  return c.partition + " " + std::to_string(c.gmis_per_gpu) + (c.gmis_per_gpu == 1 ? " GMI x " : " GMIs x ") +
         std::to_string(c.envs_per_gmi) + " envs";
}

// What one trial measured: all GMIs of the candidate running together on one GPU.
struct trial_result {
  bool ok = false;
  double throughput = 0;               // environment steps per second, summed over the GPU's GMIs
  std::uint64_t peak_memory_bytes = 0;  // peak device memory of one GMI (the largest, when they differ)
  std::string failure;                 // why the trial failed (out of memory, crash, refused), when !ok

  [[nodiscard]] static trial_result measured(double steps_per_second, std::uint64_t peak_bytes_per_gmi) {
    require(std::isfinite(steps_per_second) && steps_per_second >= 0, "trial throughput (steps/s)", steps_per_second,
            "a finite value >= 0");
    trial_result r;
    r.ok = true;
    r.throughput = steps_per_second;
    r.peak_memory_bytes = peak_bytes_per_gmi;
    return r;
  }
  [[nodiscard]] static trial_result failed(std::string why) {
    trial_result r;
    r.failure = std::move(why);
    return r;
  }
};

// Runs one trial. It may throw; the explorer records the exception's message as the trial's failure.
using trial_function = std::function<trial_result(const candidate&)>;

// Peak memory of one GMI as a function of its environments: a least-squares line through the trials so far
// (memory is a fixed part, context and network, plus a part per environment). The projection never falls below
// the largest measurement at or below the asked size: memory does not shrink as environments are added.
class memory_projection {
 public:
  void add(int envs, std::uint64_t peak_bytes) { points_.emplace_back(static_cast<double>(envs), static_cast<double>(peak_bytes)); }
  void clear() noexcept { points_.clear(); }
  [[nodiscard]] std::size_t points() const noexcept { return points_.size(); }

  // The fitted line (intercept bytes, bytes per environment); empty with fewer than two distinct sizes.
  [[nodiscard]] std::optional<std::pair<double, double>> line() const {
    if (points_.size() < 2) return std::nullopt;
    double sx = 0, sy = 0;
    for (const auto& [x, y] : points_) {
      sx += x;
      sy += y;
    }
    const double n = static_cast<double>(points_.size()), mx = sx / n, my = sy / n;
    double sxx = 0, sxy = 0;
    for (const auto& [x, y] : points_) {
      sxx += (x - mx) * (x - mx);
      sxy += (x - mx) * (y - my);
    }
    if (sxx <= 0) return std::nullopt;
    const double slope = sxy / sxx;
    return std::pair{my - slope * mx, slope};
  }

  // Projected peak bytes at `envs`; empty with fewer than two distinct sizes measured.
  [[nodiscard]] std::optional<double> at(int envs) const {
    const auto l = line();
    if (!l) return std::nullopt;
    double floor = 0;
    for (const auto& [x, y] : points_) {
      if (x <= envs) floor = std::max(floor, y);
    }
    return std::max(floor, l->first + l->second * envs);
  }

 private:
  std::vector<std::pair<double, double>> points_;  // (envs, bytes)
};

template <class Json>
void to_json(Json& j, const candidate& c) {
  j = Json{{"partition", c.partition}, {"gmis_per_gpu", c.gmis_per_gpu}, {"envs_per_gmi", c.envs_per_gmi}};
}
template <class Json>
void from_json(const Json& j, candidate& c) {
  j.at("partition").get_to(c.partition);
  j.at("gmis_per_gpu").get_to(c.gmis_per_gpu);
  j.at("envs_per_gmi").get_to(c.envs_per_gmi);
}

}  // namespace gmi::plan

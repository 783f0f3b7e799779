#pragma once
// Placement by metric (after Quiver: a measured workload metric decides whether work goes to CPUs or the GPU):
// for a task, the time of one env step on one host core and the time of one batched step on the GPU at the
// batch in question give two rates, cpu = cores / t_core and gpu = batch / t_gpu_batch; the GPU simulates when
// gpu >= threshold * cpu, else CPU actors do. threshold (default_placement_threshold) is a field to override.

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <string>
#include <utility>

#include <gmi/core/error.hpp>

namespace gmi::plan {

enum class placement { cpu_actors, gpu_simulation };

[[nodiscard]] inline const char* to_string(placement p) noexcept {
  return p == placement::cpu_actors ? "cpu" : "gpu";
}

// What was profiled for one task at one batch size.
struct placement_profile {
  std::string task;
  int batch = 0;                        // environments stepped together on the GPU (and across the CPU cores)
  int cpu_cores = 0;                    // host cores the CPU actors would get
  double cpu_seconds_per_step = 0;      // one env step on one core
  double gpu_seconds_per_batch_step = 0;  // one step of all `batch` environments on the GPU
};

// The default threshold, measured: the rule's ratio (gpu / cpu, one env step each) against the side that trained
// faster (PPO on CPU actors against PPO with GPU simulation at the same batch; docs/actors.md "Placement by metric").
// On an H200 host with 14 actor cores (b864026), every point of Ant, Humanoid, Anymal and Cartpole is decided right
// for thresholds in (1.035, 1.957]: the GPU simulation must step faster than the actors to train faster, since with
// CPU actors the GPU has only the policy and the update to run. 1.4 lies near the middle (the geometric mean 1.42).
inline constexpr double default_placement_threshold = 1.4;

struct placement_rule {
  double threshold = default_placement_threshold;  // gpu simulation when gpu_steps_per_s >= threshold * cpu_steps_per_s
};

struct placement_choice {
  std::string task;
  placement chosen = placement::cpu_actors;
  double cpu_steps_per_s = 0, gpu_steps_per_s = 0, threshold = default_placement_threshold;
  int batch = 0;

  // {"bench":"placement","task":..,"chosen":"cpu"|"gpu","cpu_steps_per_s":..,"gpu_steps_per_s":..,...}
  [[nodiscard]] nlohmann::json line() const {
    return {{"bench", "placement"},         {"task", task},
            {"chosen", to_string(chosen)},  {"cpu_steps_per_s", cpu_steps_per_s},
            {"gpu_steps_per_s", gpu_steps_per_s}, {"threshold", threshold},
            {"batch", batch}};
  }
};

// Refuses a profile with a non-positive count or time, or a threshold that is not positive, in one line.
[[nodiscard]] inline placement_choice choose_placement(const placement_profile& p, placement_rule rule = {}) {
  require(p.batch >= 1, "placement batch for " + p.task, p.batch, ">= 1");
  require(p.cpu_cores >= 1, "placement cpu_cores for " + p.task, p.cpu_cores, ">= 1");
  require(std::isfinite(p.cpu_seconds_per_step) && p.cpu_seconds_per_step > 0,
          "placement cpu_seconds_per_step for " + p.task, p.cpu_seconds_per_step, "a finite time > 0");
  require(std::isfinite(p.gpu_seconds_per_batch_step) && p.gpu_seconds_per_batch_step > 0,
          "placement gpu_seconds_per_batch_step for " + p.task, p.gpu_seconds_per_batch_step, "a finite time > 0");
  require(std::isfinite(rule.threshold) && rule.threshold > 0, "placement threshold", rule.threshold, "a finite value > 0");
  placement_choice c;
  c.task = p.task;
  c.batch = p.batch;
  c.threshold = rule.threshold;
  c.cpu_steps_per_s = double(p.cpu_cores) / p.cpu_seconds_per_step;
  c.gpu_steps_per_s = double(p.batch) / p.gpu_seconds_per_batch_step;
  c.chosen = c.gpu_steps_per_s >= rule.threshold * c.cpu_steps_per_s ? placement::gpu_simulation : placement::cpu_actors;
  return c;
}

// The plan's "placement" entry: the line's fields. Loading checks them and re-decides, so a choice its own rates
// do not support is refused in one line.
template <class Json>
void to_json(Json& j, const placement_choice& c) {
  j = Json{{"task", c.task},         {"chosen", to_string(c.chosen)}, {"cpu_steps_per_s", c.cpu_steps_per_s},
           {"gpu_steps_per_s", c.gpu_steps_per_s}, {"threshold", c.threshold}, {"batch", c.batch}};
}
template <class Json>
void from_json(const Json& j, placement_choice& c) {
  j.at("task").get_to(c.task);
  const auto chosen = j.at("chosen").template get<std::string>();
  require(chosen == "cpu" || chosen == "gpu", "placement.chosen", chosen, "cpu or gpu");
  // strict types: nlohmann would read true as 1
  for (const char* key : {"cpu_steps_per_s", "gpu_steps_per_s", "threshold"})
    require(j.at(key).is_number(), std::string("placement.") + key, j.at(key).dump(), "a number");
  require(j.at("batch").is_number_integer(), "placement.batch", j.at("batch").dump(), "an integer");
  j.at("cpu_steps_per_s").get_to(c.cpu_steps_per_s);
  j.at("gpu_steps_per_s").get_to(c.gpu_steps_per_s);
  j.at("threshold").get_to(c.threshold);
  j.at("batch").get_to(c.batch);
  require(c.batch >= 1, "placement.batch", c.batch, ">= 1");
  for (const auto& [name, v] : {std::pair<const char*, double>{"placement.cpu_steps_per_s", c.cpu_steps_per_s},
                                {"placement.gpu_steps_per_s", c.gpu_steps_per_s}, {"placement.threshold", c.threshold}})
    require(std::isfinite(v) && v > 0, name, v, "a finite value > 0");
  c.chosen = chosen == "gpu" ? placement::gpu_simulation : placement::cpu_actors;
  const bool gpu = c.gpu_steps_per_s >= c.threshold * c.cpu_steps_per_s;
  require(gpu == (c.chosen == placement::gpu_simulation), "placement.chosen", chosen,
          std::string("what its rates and threshold give (") + (gpu ? "gpu" : "cpu") + ")");
}

// Median-free but warm timing of a step function: calls f() until both min_calls and min_seconds are reached
// (after `warmup` calls) and returns the mean seconds per call. f runs on the calling thread (pin it first to
// time one core).
template <class F>
[[nodiscard]] double seconds_per_call(F&& f, int warmup = 10, int min_calls = 100, double min_seconds = 0.2) {
  require(min_calls >= 1, "seconds_per_call min_calls", min_calls, ">= 1");
  for (int i = 0; i < warmup; ++i) f();
  const auto t0 = std::chrono::steady_clock::now();
  long calls = 0;
  double elapsed = 0;
  while (calls < min_calls || elapsed < min_seconds) {
    f();
    ++calls;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return elapsed / double(calls);
}

}  // namespace gmi::plan

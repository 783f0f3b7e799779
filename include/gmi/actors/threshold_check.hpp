#pragma once
// The placement threshold checked against training (issue 38: "the placement metric picks the faster of CPU and
// GPU simulation"): gmi.bench.actors_train writes, per task and actor core count, PPO's training rate on CPU actors
// (impl "gmi", phase "train"), the same PPO with the simulation on the GPU (impl "gmi.gpu_simulation") and the
// placement line at that batch (plan::choose_placement's simulation rates). The rule picks GPU simulation when
// gpu_sim >= T x cpu_sim, so a point is decided right when (ratio >= T) matches which side trained faster
// (ratio = gpu_sim / cpu_sim). Over all points, the thresholds that decide every point right form (low, high]:
// low = the largest ratio where CPU actors trained faster, high = the smallest ratio where GPU simulation did.
// A point is a task at an actor core count and a batch (the env count both trainers step and the placement line
// profiled), so two batches at one core count are two points; lines without a batch are one point per core count.

#include <algorithm>
#include <cmath>
#include <istream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/core/error.hpp>

namespace gmi::actors {

// One task at one actor core count and batch: the simulation rates the rule compares and the training rates it
// should follow.
struct threshold_point {
  std::string task;
  int actor_cores = 0;
  int batch = 0;  // environments of the point (0: the lines do not say)
  double cpu_sim = 0, gpu_sim = 0;      // env steps/s of simulation alone (the placement line)
  double cpu_train = 0, gpu_train = 0;  // PPO env steps/s, CPU actors against GPU simulation
  [[nodiscard]] double ratio() const { return gpu_sim / cpu_sim; }
  [[nodiscard]] bool gpu_trains_faster() const { return gpu_train >= cpu_train; }
  [[nodiscard]] bool right_at(double threshold) const { return (ratio() >= threshold) == gpu_trains_faster(); }
};

struct threshold_verdict {
  double threshold = 1;
  int points = 0, right = 0;
  double low = 0;                                         // every right threshold is > low ...
  double high = std::numeric_limits<double>::infinity();  // ... and <= high
  [[nodiscard]] bool exists() const { return low < high; }
  // A threshold inside (low, high]: the one given when it is there, else the geometric middle (or a factor 2
  // inside the open side); nullopt when no threshold decides every point right.
  [[nodiscard]] std::optional<double> suggested() const {
    if (!exists()) return std::nullopt;
    if (threshold > low && threshold <= high) return threshold;
    if (low <= 0) return high / 2;
    if (std::isinf(high)) return low * 2;
    return std::sqrt(low * high);
  }
};

// Refuses no points, a non-positive threshold, or a point without its four rates > 0, in one line.
[[nodiscard]] inline threshold_verdict check_threshold(const std::vector<threshold_point>& points, double threshold) {
  require(!points.empty(), "placement threshold check points", 0, ">= 1 (actors_train's train and placement lines)");
  require(std::isfinite(threshold) && threshold > 0, "placement threshold", threshold, "a finite value > 0");
  threshold_verdict v;
  v.threshold = threshold;
  for (const threshold_point& p : points) {
    for (double r : {p.cpu_sim, p.gpu_sim, p.cpu_train, p.gpu_train}) {
      require(std::isfinite(r) && r > 0, "placement threshold check rates of " + p.task + " at " +
                                             std::to_string(p.actor_cores) + " actor cores and batch " +
                                             std::to_string(p.batch), r, "finite rates > 0");
    }
    ++v.points;
    v.right += p.right_at(threshold) ? 1 : 0;
    if (p.gpu_trains_faster()) v.high = std::min(v.high, p.ratio());
    else v.low = std::max(v.low, p.ratio());
  }
  return v;
}

// One task's points and the verdict of a threshold on them (the threshold is checked per task: each task's
// CPU and GPU simulators differ, so one task's points say nothing about another's).
struct task_verdict {
  std::string task;
  std::vector<threshold_point> points;
  threshold_verdict verdict;
};

// check_threshold on each task's points, in task name order; refuses what check_threshold refuses.
[[nodiscard]] inline std::vector<task_verdict> check_threshold_by_task(const std::vector<threshold_point>& points,
                                                                      double threshold) {
  require(!points.empty(), "placement threshold check points", 0, ">= 1 (actors_train's train and placement lines)");
  std::map<std::string, std::vector<threshold_point>> by_task;
  for (const threshold_point& p : points) by_task[p.task].push_back(p);
  std::vector<task_verdict> out;
  for (auto& [task, its] : by_task) {
    const threshold_verdict v = check_threshold(its, threshold);
    out.push_back({task, std::move(its), v});
  }
  return out;
}

// A line's batch: "batch" (actors_place's lines and every placement line), else the training lines' "num_envs",
// else 0 (older lines: one point per task and core count).
[[nodiscard]] inline int threshold_line_batch(const nlohmann::json& j) {
  if (j.contains("batch")) return j.at("batch").get<int>();
  if (j.contains("num_envs")) return j.at("num_envs").get<int>();
  return 0;
}

// Joins actors_train's and actors_place's lines (cpu_actors_ppo phase "train" of impl "gmi" by actor_cores and
// "gmi.gpu_simulation" by for_actor_cores, and placement lines by actor_cores) by task, actor core count and batch
// (threshold_line_batch); a point missing one of its three lines is left out, a line that is not JSON or lacks a
// field is refused in one line naming source:line.
[[nodiscard]] inline std::vector<threshold_point> threshold_points_from_lines(std::istream& in,
                                                                            const std::string& source) {
  using key_type = std::tuple<std::string, int, int>;  // task, actor cores, batch
  std::map<key_type, threshold_point> by_key;
  std::map<key_type, int> seen;  // bit 1: cpu train, 2: gpu train, 4: placement
  const auto point_of = [&](const nlohmann::json& j, int cores) -> std::pair<threshold_point&, int&> {
    const key_type key{j.at("task").get<std::string>(), cores, threshold_line_batch(j)};
    threshold_point& p = by_key[key];
    p.task = std::get<0>(key);
    p.actor_cores = cores;
    p.batch = std::get<2>(key);
    return {p, seen[key]};
  };
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = source + ":" + std::to_string(line);
    try {
      const auto j = nlohmann::json::parse(text);
      if (!j.is_object()) continue;
      const std::string bench = j.value("bench", "");
      if (bench == "cpu_actors_ppo" && j.value("phase", "") == "train") {
        const std::string impl = j.at("impl").get<std::string>();
        if (impl != "gmi" && impl != "gmi.gpu_simulation") continue;
        // GPU simulation lines carry actor_cores 0 and, in for_actor_cores, the point they are measured beside.
        auto [p, bits] = point_of(j, j.at(impl == "gmi" ? "actor_cores" : "for_actor_cores").get<int>());
        (impl == "gmi" ? p.cpu_train : p.gpu_train) = j.at("median").get<double>();
        bits |= impl == "gmi" ? 1 : 2;
      } else if (bench == "placement" && j.contains("actor_cores")) {
        auto [p, bits] = point_of(j, j.at("actor_cores").get<int>());
        p.cpu_sim = j.at("cpu_steps_per_s").get<double>();
        p.gpu_sim = j.at("gpu_steps_per_s").get<double>();
        bits |= 4;
      }
    } catch (const nlohmann::json::exception& e) {
      throw config_error(where + ": not an actors_train line (" + e.what() + ")");
    }
  }
  std::vector<threshold_point> out;
  for (const auto& [key, p] : by_key)
    if (seen[key] == 7) out.push_back(p);
  return out;
}

}  // namespace gmi::actors

#pragma once
// The CPU/GPU ratio, chosen from a measured sweep (seed 003: actor count and the CPU given to the actors limit
// throughput and energy efficiency): each point is actor cores per GMI, envs per core and GMIs per GPU with its
// measured steps/s (and steps per joule where energy was readable). choose_ratio picks the best point for a goal;
// the choice and its sweep are saved in the plan (plan.hpp, "cpu_actor_ratio") and checked when loaded.

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstddef>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <gmi/core/error.hpp>

namespace gmi::plan {

struct ratio_point {
  int cores_per_gmi = 0;  // actor cores stepping one GMI's environments
  int envs_per_core = 0;  // environments per actor core and env group
  int gmis_per_gpu = 0;
  double steps_per_s = 0;                 // env steps/s of one GPU (all its GMIs)
  std::optional<double> steps_per_joule;  // empty: energy not readable on that machine

  [[nodiscard]] int cores_per_gpu() const noexcept { return cores_per_gmi * gmis_per_gpu; }
};

enum class ratio_goal { throughput, efficiency };

[[nodiscard]] inline const char* ratio_goal_name(ratio_goal g) {
  return g == ratio_goal::efficiency ? "steps_per_joule" : "steps_per_s";
}
[[nodiscard]] inline ratio_goal ratio_goal_from_name(const std::string& s) {
  if (s == "steps_per_s") return ratio_goal::throughput;
  if (s == "steps_per_joule") return ratio_goal::efficiency;
  throw config_error(got_need("cpu_actor_ratio.goal", s, "steps_per_s or steps_per_joule"));
}

struct ratio_choice {
  ratio_point chosen;
  ratio_goal goal = ratio_goal::throughput;
  double tolerance = 0;  // points within this fraction of the best count as tied; the fewest cores per GPU wins
  std::vector<ratio_point> sweep;
  // The sweep's measured optimum for each goal (tolerance 0): the best steps/s point, and the best steps per joule
  // point where energy was read. The plan records both beside the choice.
  ratio_point best_steps_per_s;
  std::optional<ratio_point> best_steps_per_joule;
};

// Refuses a point that is not a measurement: counts below 1, rates not finite or not positive.
inline void validate(const ratio_point& p, const std::string& where = "ratio point") {
  require(p.cores_per_gmi >= 1, where + ".cores_per_gmi", p.cores_per_gmi, ">= 1");
  require(p.envs_per_core >= 1, where + ".envs_per_core", p.envs_per_core, ">= 1");
  require(p.gmis_per_gpu >= 1, where + ".gmis_per_gpu", p.gmis_per_gpu, ">= 1");
  require(std::isfinite(p.steps_per_s) && p.steps_per_s > 0, where + ".steps_per_s", p.steps_per_s,
          "a finite rate > 0");
  if (p.steps_per_joule) {
    require(std::isfinite(*p.steps_per_joule) && *p.steps_per_joule > 0, where + ".steps_per_joule",
            *p.steps_per_joule, "a finite rate > 0 or null");
  }
}

// The goal's value of a point, or empty when the point lacks it (no energy reading).
[[nodiscard]] inline std::optional<double> ratio_value(const ratio_point& p, ratio_goal g) {
  return g == ratio_goal::throughput ? std::optional<double>(p.steps_per_s) : p.steps_per_joule;
}

// The best point of the sweep for the goal; among points within `tolerance` of the best value, the one with the
// fewest actor cores per GPU (cores left for other work), then the higher value. Refuses an empty sweep, a
// malformed point, a tolerance outside [0, 1) and an efficiency goal with no energy measured.
[[nodiscard]] inline ratio_choice choose_ratio(const std::vector<ratio_point>& sweep,
                                               ratio_goal goal = ratio_goal::throughput, double tolerance = 0) {
  require(!sweep.empty(), "ratio sweep points", 0, ">= 1");
  require(std::isfinite(tolerance) && tolerance >= 0 && tolerance < 1, "ratio tolerance", tolerance, "0 <= t < 1");
  for (std::size_t i = 0; i < sweep.size(); ++i) validate(sweep[i], "ratio point " + std::to_string(i));
  double best = 0;
  for (const auto& p : sweep)
    if (const auto v = ratio_value(p, goal)) best = std::max(best, *v);
  require(best > 0, std::string("ratio sweep points with ") + ratio_goal_name(goal), 0,
          ">= 1 (energy unreadable on the sweep's machine: choose by steps_per_s)");
  const ratio_point* pick = nullptr;
  for (const auto& p : sweep) {
    const auto v = ratio_value(p, goal);
    if (!v || *v < (1 - tolerance) * best) continue;
    if (!pick || p.cores_per_gpu() < pick->cores_per_gpu() ||
        (p.cores_per_gpu() == pick->cores_per_gpu() && *v > *ratio_value(*pick, goal)))
      pick = &p;
  }
  ratio_choice c{*pick, goal, tolerance, sweep, {}, std::nullopt};
  const auto best_of = [&](ratio_goal g) -> std::optional<ratio_point> {
    std::optional<ratio_point> b;
    for (const auto& p : sweep) {
      const auto v = ratio_value(p, g);
      if (v && (!b || *v > *ratio_value(*b, g))) b = p;
    }
    return b;
  };
  c.best_steps_per_s = *best_of(ratio_goal::throughput);
  c.best_steps_per_joule = best_of(ratio_goal::efficiency);
  return c;
}

// The points of a ratio sweep's result lines (bench/actors/ratio_sweep.cu, one JSON object a line): lines of
// bench "cpu_gpu_ratio" with metric steps_per_s or steps_per_joule (their median), joined by (gmis_per_gpu,
// cores_per_gmi, envs_per_core); other lines are skipped. A steps_per_joule line without its steps_per_s line is
// refused, as is a line that is not JSON.
[[nodiscard]] inline std::vector<ratio_point> ratio_points_from_lines(std::istream& in, const std::string& source) {
  std::map<std::tuple<int, int, int>, ratio_point> by_key;
  std::map<std::tuple<int, int, int>, double> joules;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = source + ":" + std::to_string(line);
    try {
      const auto j = nlohmann::json::parse(text);
      if (!j.is_object() || j.value("bench", "") != "cpu_gpu_ratio" || !j.contains("median")) continue;
      const std::string metric = j.value("metric", "");
      if (metric != "steps_per_s" && metric != "steps_per_joule") continue;
      const auto key = std::make_tuple(j.at("gmis_per_gpu").get<int>(), j.at("cores_per_gmi").get<int>(),
                                       j.at("envs_per_core").get<int>());
      const double v = j.at("median").get<double>();
      if (metric == "steps_per_joule") {
        joules[key] = v;
        continue;
      }
      ratio_point& p = by_key[key];
      std::tie(p.gmis_per_gpu, p.cores_per_gmi, p.envs_per_core) = key;
      p.steps_per_s = v;
      validate(p, where);
    } catch (const nlohmann::json::exception& e) {
      throw config_error(where + ": not a ratio sweep line (" + e.what() + ")");
    }
  }
  for (const auto& [key, v] : joules) {
    const auto it = by_key.find(key);
    require(it != by_key.end(), source + ": steps_per_joule of gmis_per_gpu/cores_per_gmi/envs_per_core " +
                                    std::to_string(std::get<0>(key)) + "/" + std::to_string(std::get<1>(key)) + "/" +
                                    std::to_string(std::get<2>(key)),
            "without steps_per_s", "its steps_per_s line");
    it->second.steps_per_joule = v;
    validate(it->second, source);
  }
  std::vector<ratio_point> out;
  for (auto& [key, p] : by_key) out.push_back(p);
  return out;
}

// --- JSON (the plan's "cpu_actor_ratio") ---
namespace detail {
// Strict readers: nlohmann's get<int> takes true as 1 and 2.5 as 2; a plan field must be the type it claims.
template <class Json>
int json_count(const Json& j, const std::string& key, const std::string& where) {
  const auto& v = j.at(key);
  require(v.is_number_integer(), where + "." + key, v.dump(), "an integer");
  return v.template get<int>();
}
template <class Json>
double json_number(const Json& j, const std::string& key, const std::string& where) {
  const auto& v = j.at(key);
  require(v.is_number(), where + "." + key, v.dump(), "a number");
  return v.template get<double>();
}
}  // namespace detail

template <class Json>
void to_json(Json& j, const ratio_point& p) {
  j = Json{{"cores_per_gmi", p.cores_per_gmi},
           {"envs_per_core", p.envs_per_core},
           {"gmis_per_gpu", p.gmis_per_gpu},
           {"steps_per_s", p.steps_per_s},
           {"steps_per_joule", p.steps_per_joule ? Json(*p.steps_per_joule) : Json(nullptr)}};
}
template <class Json>
void from_json(const Json& j, ratio_point& p) {
  const std::string where = "cpu_actor_ratio point";
  p.cores_per_gmi = detail::json_count(j, "cores_per_gmi", where);
  p.envs_per_core = detail::json_count(j, "envs_per_core", where);
  p.gmis_per_gpu = detail::json_count(j, "gmis_per_gpu", where);
  p.steps_per_s = detail::json_number(j, "steps_per_s", where);
  p.steps_per_joule = j.at("steps_per_joule").is_null()
                          ? std::nullopt
                          : std::optional<double>(detail::json_number(j, "steps_per_joule", where));
}
template <class Json>
void to_json(Json& j, const ratio_choice& c) {
  j = Json{{"goal", ratio_goal_name(c.goal)},
           {"tolerance", c.tolerance},
           {"chosen", c.chosen},
           {"optimum", Json{{"steps_per_s", c.best_steps_per_s},
                            {"steps_per_joule", c.best_steps_per_joule ? Json(*c.best_steps_per_joule) : Json(nullptr)}}},
           {"sweep", c.sweep}};
}
// Loads and re-decides: the sweep must be valid and choose_ratio over it must give the saved choice, so a plan
// edited by hand (or damaged) is refused rather than run with a ratio its own sweep does not support.
template <class Json>
void from_json(const Json& j, ratio_choice& c) {
  const auto goal = ratio_goal_from_name(j.at("goal").template get<std::string>());
  const double tolerance = detail::json_number(j, "tolerance", "cpu_actor_ratio");
  ratio_point saved;
  j.at("chosen").get_to(saved);
  validate(saved, "cpu_actor_ratio.chosen");
  std::vector<ratio_point> sweep;
  j.at("sweep").get_to(sweep);
  for (std::size_t i = 0; i < sweep.size(); ++i) validate(sweep[i], "cpu_actor_ratio.sweep[" + std::to_string(i) + "]");
  c = choose_ratio(sweep, goal, tolerance);
  const auto& p = c.chosen;
  require(p.cores_per_gmi == saved.cores_per_gmi && p.envs_per_core == saved.envs_per_core &&
              p.gmis_per_gpu == saved.gmis_per_gpu,
          "cpu_actor_ratio.chosen", std::to_string(saved.cores_per_gmi) + " cores/GMI, " +
                                        std::to_string(saved.envs_per_core) + " envs/core, " +
                                        std::to_string(saved.gmis_per_gpu) + " GMIs/GPU",
          "the sweep's own choice (" + std::to_string(p.cores_per_gmi) + ", " + std::to_string(p.envs_per_core) +
              ", " + std::to_string(p.gmis_per_gpu) + ")");
  // The recorded optimum (plans saved before it was recorded have none) must be the sweep's too.
  if (!j.contains("optimum")) return;
  const auto same = [](const ratio_point& a, const ratio_point& b) {
    return a.cores_per_gmi == b.cores_per_gmi && a.envs_per_core == b.envs_per_core && a.gmis_per_gpu == b.gmis_per_gpu;
  };
  const auto text = [](const ratio_point& a) {
    return std::to_string(a.cores_per_gmi) + " cores/GMI, " + std::to_string(a.envs_per_core) + " envs/core, " +
           std::to_string(a.gmis_per_gpu) + " GMIs/GPU";
  };
  const auto& o = j.at("optimum");
  ratio_point fast;
  o.at("steps_per_s").get_to(fast);
  require(same(fast, c.best_steps_per_s), "cpu_actor_ratio.optimum.steps_per_s", text(fast),
          "the sweep's best steps/s point (" + text(c.best_steps_per_s) + ")");
  const auto& e = o.at("steps_per_joule");
  require(e.is_null() == !c.best_steps_per_joule.has_value(), "cpu_actor_ratio.optimum.steps_per_joule",
          e.is_null() ? std::string("null") : std::string("a point"),
          c.best_steps_per_joule ? "the sweep's best steps per joule point" : "null (the sweep has no energy)");
  if (!e.is_null()) {
    ratio_point efficient;
    e.get_to(efficient);
    require(same(efficient, *c.best_steps_per_joule), "cpu_actor_ratio.optimum.steps_per_joule", text(efficient),
            "the sweep's best steps per joule point (" + text(*c.best_steps_per_joule) + ")");
  }
}

}  // namespace gmi::plan

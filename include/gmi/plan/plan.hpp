#pragma once
// The coordinator's output: the chosen partition, GMIs per GPU and environments per GMI, with every trial that led
// there, the machine it was made for and the mapping decision. Saved as JSON (atomically); loading it on another
// machine (GPU count, model or memory) is refused with one line naming both machines.

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/status.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/plan/mapping.hpp>
#include <gmi/plan/placement.hpp>
#include <gmi/plan/profiler.hpp>
#include <gmi/plan/ratio.hpp>
#include <gmi/plan/topology.hpp>

namespace gmi::plan {

// What a plan depends on: how many GPUs, which model, how much memory each.
struct machine {
  int gpus = 0;
  std::vector<std::string> gpu_names;
  std::vector<std::uint64_t> gpu_memory_bytes;

  [[nodiscard]] static machine of(const topology& t) {
    machine m;
    m.gpus = static_cast<int>(t.gpus.size());
    for (const auto& g : t.gpus) {
      m.gpu_names.push_back(g.name);
      m.gpu_memory_bytes.push_back(g.memory_bytes);
    }
    return m;
  }

  [[nodiscard]] bool homogeneous() const {
    for (std::size_t i = 1; i < gpu_names.size(); ++i) {
      if (gpu_names[i] != gpu_names[0] || gpu_memory_bytes[i] != gpu_memory_bytes[0]) return false;
    }
    return true;
  }

  // "8 x NVIDIA A100-SXM4-80GB (79.2 GiB)", "1 x A (10.0 GiB) + 1 x B (20.0 GiB)", "no GPU"
  [[nodiscard]] std::string describe() const {
    if (gpus == 0 || gpu_names.empty()) return "no GPU";
    std::string out;
    std::size_t i = 0;
    while (i < gpu_names.size()) {
      std::size_t j = i;
      while (j < gpu_names.size() && gpu_names[j] == gpu_names[i] && gpu_memory_bytes[j] == gpu_memory_bytes[i]) ++j;
      char mem[32];
      std::snprintf(mem, sizeof mem, "%.1f", static_cast<double>(gpu_memory_bytes[i]) / (1024.0 * 1024 * 1024));
      out += (out.empty() ? "" : " + ") + std::to_string(j - i) + " x " + gpu_names[i] + " (" + mem + " GiB)";
      i = j;
    }
    return out;
  }
};

// Two GPUs count as the same when names match and memory differs by at most this fraction (drivers reserve
// slightly different amounts; a different model differs by far more).
inline constexpr double memory_tolerance = 0.01;

// ok when a plan made for `planned` applies to `here`, else invalid("made for X, this machine has Y").
[[nodiscard]] inline status compare_machines(const machine& planned, const machine& here) {
  bool same = planned.gpus == here.gpus && planned.gpu_names.size() == here.gpu_names.size() &&
              planned.gpu_memory_bytes.size() == here.gpu_memory_bytes.size();
  for (std::size_t i = 0; same && i < planned.gpu_names.size(); ++i) {
    const double a = static_cast<double>(planned.gpu_memory_bytes[i]);
    const double b = static_cast<double>(here.gpu_memory_bytes[i]);
    same = planned.gpu_names[i] == here.gpu_names[i] && std::fabs(a - b) <= memory_tolerance * std::max(a, b);
  }
  if (same) return status::ok();
  return status::invalid("made for " + planned.describe() + ", this machine has " + here.describe());
}

// What the explorer did with a candidate.
enum class verdict {
  first_point,  // first measurement of a row: the base of the next ratios, not a candidate (Algorithm 1 line 12)
  candidate,    // passed the checks, below the best so far
  best,         // passed the checks, the best so far when it was measured
  saturated,    // Sat = R_top / R_mem < alpha: row stopped (line 22), the point is not a candidate
  failed,       // the trial failed (out of memory, crash): row stopped
  memory_stop,  // not run: projected memory above the GMI's share (line 6), row stopped
  budget_stop,  // not run: the time budget would be exceeded; exploration stopped
  row_refused,  // not run: the backend can not implement this many GMIs per GPU (can_implement)
};

[[nodiscard]] inline const char* verdict_name(verdict v) {
  switch (v) {
    case verdict::first_point: return "first_point";
    case verdict::candidate: return "candidate";
    case verdict::best: return "best";
    case verdict::saturated: return "saturated";
    case verdict::failed: return "failed";
    case verdict::memory_stop: return "memory_stop";
    case verdict::budget_stop: return "budget_stop";
    case verdict::row_refused: return "row_refused";
  }
  return "unknown";
}

[[nodiscard]] inline verdict verdict_from_name(const std::string& s) {
  for (verdict v : {verdict::first_point, verdict::candidate, verdict::best, verdict::saturated, verdict::failed,
                    verdict::memory_stop, verdict::budget_stop, verdict::row_refused}) {
    if (s == verdict_name(v)) return v;
  }
  throw gmi::config_error(gmi::got_need("trial verdict", s,
                                        "first_point, candidate, best, saturated, failed, memory_stop, budget_stop or "
                                        "row_refused"));
}

// One row of the trial table (a trial run, or a candidate the explorer decided not to run).
struct trial_record {
  candidate what;
  bool measured = false;  // a trial ran
  bool ok = false;        // ... and succeeded
  double throughput = 0;  // steps/s of one GPU (all its GMIs)
  std::uint64_t peak_memory_bytes = 0;  // per GMI
  double seconds = 0;                   // the trial's wall time
  std::uint64_t memory_share_bytes = 0;             // GPU memory / GMIs per GPU
  std::optional<double> projected_memory_bytes;     // the projection checked before the trial (from the 3rd point)
  std::optional<double> r_top, r_mem, sat;          // from the 2nd point of a row on
  double system_throughput = 0;  // throughput x GPUs, for candidates
  verdict decision = verdict::first_point;
  std::string note;  // failure, refusal or stop reason
};

namespace detail {
inline std::string gib(double bytes) {
  char b[32];
  if (bytes >= 1024.0 * 1024 * 1024) {
    std::snprintf(b, sizeof b, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  } else {
    std::snprintf(b, sizeof b, "%.1f MiB", bytes / (1024.0 * 1024));
  }
  return b;
}
inline std::string fixed(double v, int digits) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}
}  // namespace detail

// The progress line of one trial: candidate, throughput, memory, decision.
// "mps 4 GMIs x 1024 envs: 1.23M steps/s/GPU, 812.0 MiB/GMI of 20.00 GiB, Sat 1.85 -> best (4.92M steps/s on 4 GPUs) [3.1 s]"
[[nodiscard]] inline std::string describe(const trial_record& r) {
  std::string out = describe(r.what) + ": ";
  if (r.measured && r.ok) {
    out += gmi::metrics::si(r.throughput) + " steps/s/GPU, " + detail::gib(static_cast<double>(r.peak_memory_bytes)) +
           "/GMI of " + detail::gib(static_cast<double>(r.memory_share_bytes));
    if (r.sat) out += ", Sat " + detail::fixed(*r.sat, 3);
  } else if (r.measured) {
    out += "trial failed";
  } else {
    out += "not run";
  }
  out += " -> ";
  out += verdict_name(r.decision);
  if (r.decision == verdict::best || r.decision == verdict::candidate) {
    out += " (" + gmi::metrics::si(r.system_throughput) + " steps/s projected)";
  }
  if (!r.note.empty()) out += ": " + r.note;
  if (r.measured) out += " [" + detail::fixed(r.seconds, 1) + " s]";
  return out;
}

struct plan {
  machine made_for;
  candidate chosen;
  double gpu_throughput = 0;        // the chosen trial's steps/s on one GPU
  double projected_throughput = 0;  // x GPUs (homogeneous GPUs)
  double alpha = 0;                 // the saturation threshold used
  double budget_seconds = 0;
  double explore_seconds = 0;
  std::string selection;   // "algorithm 1" or why a fallback chose
  std::string stopped_by;  // "every row finished" or the budget stop
  std::vector<trial_record> trials;
  std::optional<mapping_decision> mapping;  // empty: "not measured"
  // With a measured mapping: the split layout's best trial (a trainer GMI and gmis_per_gpu - 1 serving GMIs of
  // envs_per_gmi environments each); the run uses it when the mapping chose split.
  std::optional<candidate> split_chosen;
  // What the trials ran: "serving" (environment steps/s) or "colocated" (synchronous PPO, training samples/s).
  // A run uses a plan of its own layout's trials. Plans saved before this field existed were serving plans.
  std::string trials_of = "serving";
  // CPU actors: the ratio (actor cores per GMI, envs per core, GMIs per GPU) chosen from a measured sweep
  // (ratio.hpp); empty when no sweep ran. Re-decided from its sweep on load.
  std::optional<ratio_choice> cpu_actor_ratio;
  // CPU actors or GPU simulation for the task (placement.hpp); empty when not profiled.
  std::optional<placement_choice> task_placement;
};

inline constexpr const char* plan_format = "gmi plan";
inline constexpr int plan_version = 1;

template <class Json>
void to_json(Json& j, const machine& m) {
  j = Json{{"gpus", m.gpus}, {"gpu_names", m.gpu_names}, {"gpu_memory_bytes", m.gpu_memory_bytes}};
}
template <class Json>
void from_json(const Json& j, machine& m) {
  j.at("gpus").get_to(m.gpus);
  j.at("gpu_names").get_to(m.gpu_names);
  j.at("gpu_memory_bytes").get_to(m.gpu_memory_bytes);
  if (static_cast<int>(m.gpu_names.size()) != m.gpus || m.gpu_memory_bytes.size() != m.gpu_names.size()) {
    throw gmi::config_error(gmi::got_need("machine gpu_names/gpu_memory_bytes entries", m.gpu_names.size(),
                                          "one per GPU (gpus = " + std::to_string(m.gpus) + ")"));
  }
}

namespace detail {
template <class Json>
Json optional_number(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? Json(*v) : Json(nullptr);
}
template <class Json>
std::optional<double> read_optional_number(const Json& j, const char* key) {
  const auto& v = j.at(key);
  if (v.is_null()) return std::nullopt;
  return v.template get<double>();
}
}  // namespace detail

template <class Json>
void to_json(Json& j, const trial_record& r) {
  j = Json{{"partition", r.what.partition},
           {"gmis_per_gpu", r.what.gmis_per_gpu},
           {"envs_per_gmi", r.what.envs_per_gmi},
           {"measured", r.measured},
           {"ok", r.ok},
           {"throughput", r.throughput},
           {"peak_memory_bytes", r.peak_memory_bytes},
           {"seconds", r.seconds},
           {"memory_share_bytes", r.memory_share_bytes},
           {"projected_memory_bytes", detail::optional_number<Json>(r.projected_memory_bytes)},
           {"r_top", detail::optional_number<Json>(r.r_top)},
           {"r_mem", detail::optional_number<Json>(r.r_mem)},
           {"sat", detail::optional_number<Json>(r.sat)},
           {"system_throughput", r.system_throughput},
           {"decision", verdict_name(r.decision)},
           {"note", r.note}};
}
template <class Json>
void from_json(const Json& j, trial_record& r) {
  j.at("partition").get_to(r.what.partition);
  j.at("gmis_per_gpu").get_to(r.what.gmis_per_gpu);
  j.at("envs_per_gmi").get_to(r.what.envs_per_gmi);
  j.at("measured").get_to(r.measured);
  j.at("ok").get_to(r.ok);
  j.at("throughput").get_to(r.throughput);
  j.at("peak_memory_bytes").get_to(r.peak_memory_bytes);
  j.at("seconds").get_to(r.seconds);
  j.at("memory_share_bytes").get_to(r.memory_share_bytes);
  r.projected_memory_bytes = detail::read_optional_number(j, "projected_memory_bytes");
  r.r_top = detail::read_optional_number(j, "r_top");
  r.r_mem = detail::read_optional_number(j, "r_mem");
  r.sat = detail::read_optional_number(j, "sat");
  j.at("system_throughput").get_to(r.system_throughput);
  r.decision = verdict_from_name(j.at("decision").template get<std::string>());
  j.at("note").get_to(r.note);
}

template <class Json>
void to_json(Json& j, const plan& p) {
  j = Json{{"format", plan_format},
           {"version", plan_version},
           {"machine", p.made_for},
           {"partition", p.chosen.partition},
           {"gmis_per_gpu", p.chosen.gmis_per_gpu},
           {"envs_per_gmi", p.chosen.envs_per_gmi},
           {"gpu_throughput", p.gpu_throughput},
           {"projected_throughput", p.projected_throughput},
           {"alpha", p.alpha},
           {"budget_seconds", p.budget_seconds},
           {"explore_seconds", p.explore_seconds},
           {"selection", p.selection},
           {"stopped_by", p.stopped_by},
           {"mapping", p.mapping ? Json(*p.mapping) : Json("not measured")},
           {"trials_of", p.trials_of},
           {"split_chosen", p.split_chosen ? Json{{"partition", p.split_chosen->partition},
                                                   {"gmis_per_gpu", p.split_chosen->gmis_per_gpu},
                                                   {"envs_per_gmi", p.split_chosen->envs_per_gmi}}
                                           : Json(nullptr)},
           {"trials", p.trials}};
  if (p.cpu_actor_ratio) j["cpu_actor_ratio"] = *p.cpu_actor_ratio;
  if (p.task_placement) j["placement"] = *p.task_placement;
}
template <class Json>
void from_json(const Json& j, plan& p) {
  const auto format = j.at("format").template get<std::string>();
  if (format != plan_format) throw gmi::config_error(gmi::got_need("format", format, "\"gmi plan\""));
  const int version = j.at("version").template get<int>();
  if (version != plan_version) {
    throw gmi::config_error(gmi::got_need("version", version, std::to_string(plan_version)));
  }
  j.at("machine").get_to(p.made_for);
  j.at("partition").get_to(p.chosen.partition);
  j.at("gmis_per_gpu").get_to(p.chosen.gmis_per_gpu);
  j.at("envs_per_gmi").get_to(p.chosen.envs_per_gmi);
  j.at("gpu_throughput").get_to(p.gpu_throughput);
  j.at("projected_throughput").get_to(p.projected_throughput);
  j.at("alpha").get_to(p.alpha);
  j.at("budget_seconds").get_to(p.budget_seconds);
  j.at("explore_seconds").get_to(p.explore_seconds);
  j.at("selection").get_to(p.selection);
  j.at("stopped_by").get_to(p.stopped_by);
  const auto& m = j.at("mapping");
  if (m.is_string()) {
    if (m.template get<std::string>() != "not measured") {
      throw gmi::config_error(gmi::got_need("mapping", m.template get<std::string>(),
                                            "\"not measured\" or an object with the measured throughputs"));
    }
    p.mapping.reset();
  } else {
    p.mapping = m.template get<mapping_decision>();
  }
  p.trials_of = j.contains("trials_of") ? j.at("trials_of").template get<std::string>() : std::string("serving");
  require(p.trials_of == "serving" || p.trials_of == "colocated", "trials_of", p.trials_of, "serving or colocated");
  p.split_chosen.reset();
  if (j.contains("split_chosen") && !j.at("split_chosen").is_null()) {
    const auto& c = j.at("split_chosen");
    p.split_chosen = candidate{c.at("partition").template get<std::string>(), c.at("gmis_per_gpu").template get<int>(),
                               c.at("envs_per_gmi").template get<int>()};
    require(p.split_chosen->gmis_per_gpu >= 2, "split_chosen.gmis_per_gpu", p.split_chosen->gmis_per_gpu,
            ">= 2 (a trainer and a serving GMI)");
    require(p.split_chosen->envs_per_gmi >= 1, "split_chosen.envs_per_gmi", p.split_chosen->envs_per_gmi, ">= 1");
  }
  require(!(p.mapping && p.mapping->choice == mapping_kind::split) || p.split_chosen.has_value(), "mapping",
          "split without split_chosen", "the split layout's candidate when the mapping chose split");
  j.at("trials").get_to(p.trials);
  p.cpu_actor_ratio.reset();
  if (j.contains("cpu_actor_ratio") && !j.at("cpu_actor_ratio").is_null()) {
    p.cpu_actor_ratio = j.at("cpu_actor_ratio").template get<ratio_choice>();
  }
  p.task_placement.reset();
  if (j.contains("placement") && !j.at("placement").is_null()) {
    p.task_placement = j.at("placement").template get<placement_choice>();
  }
  require(p.chosen.gmis_per_gpu >= 1, "gmis_per_gpu", p.chosen.gmis_per_gpu, ">= 1");
  require(p.chosen.envs_per_gmi >= 1, "envs_per_gmi", p.chosen.envs_per_gmi, ">= 1");
}

// The plan as indented JSON, keys in the order above.
[[nodiscard]] inline std::string to_text(const plan& p) { return nlohmann::ordered_json(p).dump(2) + "\n"; }

// Parses a plan; config_error naming `source` and the problem when it is not one.
[[nodiscard]] inline plan from_text(const std::string& text, const std::string& source = "plan") {
  try {
    return nlohmann::ordered_json::parse(text).get<plan>();
  } catch (const gmi::config_error& e) {
    throw gmi::config_error(source + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw gmi::config_error(source + ": not a gmi plan (" + e.what() + ")");
  }
}

// Writes the plan to `path` atomically: `<path>.tmp.<pid>` next to it, fsync, rename over `path`.
// Before a search that may take minutes: whether save() can create its file next to `path` (a temp file is
// created and removed). Throws config_error naming the flag, the path and the system's reason.
inline void check_writable(const std::filesystem::path& path, const std::string& flag) {
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw gmi::config_error(gmi::got_need(flag, path.string(), std::string("a file that can be written (") +
                                                                   std::strerror(errno) + ")"));
  }
  ::close(fd);
  ::unlink(tmp.c_str());
}

inline void save(const plan& p, const std::filesystem::path& path) {
  const std::string text = to_text(p);
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  const auto fail = [&](const std::string& what) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return gmi::config_error("plan " + path.string() + ": " + what + ": " + why);
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw gmi::config_error("plan " + path.string() + ": can not create " + tmp.string() + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    throw fail("fsync");
  }
  if (::close(fd) != 0) throw fail("close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw fail("rename");
}

// Reads a plan and checks it was made for `here`: config_error "plan <path>: made for X, this machine has Y".
[[nodiscard]] inline plan load(const std::filesystem::path& path, const machine& here) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw gmi::config_error("plan " + path.string() + ": can not open (" + std::strerror(errno) + ")");
  std::ostringstream text;
  text << in.rdbuf();
  plan p = from_text(text.str(), "plan " + path.string());
  if (status st = compare_machines(p.made_for, here); !st) {
    throw gmi::config_error("plan " + path.string() + ": " + st.message());
  }
  return p;
}

// As above, for this machine (discover()).
[[nodiscard]] inline plan load(const std::filesystem::path& path) { return load(path, machine::of(discover())); }

}  // namespace gmi::plan

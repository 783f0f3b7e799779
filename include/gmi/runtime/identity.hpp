#pragma once
// A GMI's identity (global rank, GPU, slice, roles, groups) and how it travels from the launcher to a worker
// process: as GMI_* environment variables, so one binary is both launcher and worker.

#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>

namespace gmi::runtime {

struct identity {
  int rank = 0;           // global rank among all GMIs of the run
  int world = 1;          // number of GMIs in the run
  int gpu = -1;           // the GPU it runs on (CUDA ordinal of the launcher); -1: a host (cpu_cores) GMI
  int slice = 0;          // which slice of that GPU (or which core set of the host)
  int local_device = 0;   // the CUDA ordinal to use inside the GMI (0 when CUDA_VISIBLE_DEVICES names one GPU)
  std::string run_id;     // unique per run; names the shared-memory segment and MPS directories
  std::string shm_name;   // the run's shared-memory segment ("/gmi-<uid>-<run id>")
  std::vector<std::string> roles;         // e.g. {"env", "agent", "trainer"}
  std::vector<std::vector<int>> groups;   // every group of the run, as rank lists (the paper's get_group)

  // The groups this GMI is a member of (indices into groups).
  [[nodiscard]] std::vector<int> my_groups() const {
    std::vector<int> out;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      for (int r : groups[g]) {
        if (r == rank) {
          out.push_back(static_cast<int>(g));
          break;
        }
      }
    }
    return out;
  }

  [[nodiscard]] bool has_role(std::string_view role) const {
    for (const auto& r : roles) {
      if (r == role) return true;
    }
    return false;
  }

  // "GMI 3 (GPU 0, slice 1)" or "GMI 3 (host, slice 1)": the name every error about this GMI uses.
  [[nodiscard]] std::string describe() const {
    std::ostringstream out;
    out << "GMI " << rank << " (";
    if (gpu >= 0) {
      out << "GPU " << gpu;
    } else {
      out << "host";
    }
    out << ", slice " << slice << ')';
    return out.str();
  }
};

namespace detail {

inline std::string join_ints(const std::vector<int>& v, char sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += std::to_string(v[i]);
  }
  return out;
}

inline std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = s.find(sep, start);
    out.emplace_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

inline int parse_int(const char* var, std::string_view text) {
  try {
    std::size_t used = 0;
    const int v = std::stoi(std::string(text), &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw gmi::config_error(gmi::got_need(var, text, "an integer"));
}

inline const char* env_or_null(const char* name) { return std::getenv(name); }

}  // namespace detail

// The environment variables that carry `id` to a worker process.
[[nodiscard]] inline std::vector<std::pair<std::string, std::string>> to_env(const identity& id) {
  std::string roles;
  for (std::size_t i = 0; i < id.roles.size(); ++i) roles += (i ? "," : "") + id.roles[i];
  std::string groups;
  for (std::size_t g = 0; g < id.groups.size(); ++g) groups += (g ? ";" : "") + detail::join_ints(id.groups[g], ',');
  return {{"GMI_RANK", std::to_string(id.rank)},
          {"GMI_WORLD", std::to_string(id.world)},
          {"GMI_GPU", std::to_string(id.gpu)},
          {"GMI_SLICE", std::to_string(id.slice)},
          {"GMI_LOCAL_DEVICE", std::to_string(id.local_device)},
          {"GMI_RUN_ID", id.run_id},
          {"GMI_SHM", id.shm_name},
          {"GMI_ROLES", roles},
          {"GMI_GROUPS", groups}};
}

// The identity of this process when it was started as a GMI by the launcher; std::nullopt in the launcher
// (GMI_RANK unset). Throws config_error when the variables are present but malformed.
[[nodiscard]] inline std::optional<identity> this_gmi() {
  const char* rank = detail::env_or_null("GMI_RANK");
  if (!rank) return std::nullopt;
  identity id;
  id.rank = detail::parse_int("GMI_RANK", rank);
  auto get = [](const char* name) -> std::string {
    const char* v = detail::env_or_null(name);
    if (!v) throw gmi::config_error(gmi::got_need(name, "<unset>", "set by the gmi launcher alongside GMI_RANK"));
    return v;
  };
  id.world = detail::parse_int("GMI_WORLD", get("GMI_WORLD"));
  id.gpu = detail::parse_int("GMI_GPU", get("GMI_GPU"));
  id.slice = detail::parse_int("GMI_SLICE", get("GMI_SLICE"));
  id.local_device = detail::parse_int("GMI_LOCAL_DEVICE", get("GMI_LOCAL_DEVICE"));
  id.run_id = get("GMI_RUN_ID");
  id.shm_name = get("GMI_SHM");
  id.roles = detail::split(get("GMI_ROLES"), ',');
  for (const auto& g : detail::split(get("GMI_GROUPS"), ';')) {
    std::vector<int> members;
    for (const auto& r : detail::split(g, ',')) members.push_back(detail::parse_int("GMI_GROUPS", r));
    id.groups.push_back(std::move(members));
  }
  gmi::require(id.world >= 1, "GMI_WORLD", id.world, ">= 1");
  gmi::require(id.rank >= 0 && id.rank < id.world, "GMI_RANK", id.rank, "0..GMI_WORLD-1");
  return id;
}

}  // namespace gmi::runtime

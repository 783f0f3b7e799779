#pragma once
// A GMI's identity (global rank, GPU, slice, roles, groups, and the run's shape: GPUs and GMIs per GPU) and how it
// travels from the launcher to a worker process: as one variable, GMI_IDENTITY (JSON), so one binary is both
// launcher and worker and nothing re-derives the shape from rank and world.

#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/core/error.hpp>

namespace gmi::runtime {

struct identity {
  int rank = 0;           // global rank among all GMIs of the run
  int world = 1;          // number of GMIs in the run
  int gpu = -1;           // the GPU it runs on (CUDA ordinal of the launcher); -1: a host (cpu_cores) GMI
  int slice = 0;          // which slice of that GPU (or which core set of the host)
  int local_device = 0;   // the CUDA ordinal to use inside the GMI (0 when CUDA_VISIBLE_DEVICES names one GPU)
  int gpus = 1;           // GPUs in the run (1 for host GMIs)
  int gmis_per_gpu = 1;   // GMIs on each GPU: rank = gpu index * gmis_per_gpu + slice
  int device_sms = 0;     // MPS: SMs of the whole GPU as the launcher saw them, for the client's check; 0: none
  std::string run_id;     // unique per run; names the shared-memory segment and MPS directories
  std::string shm_name;   // the name of the run's shared-memory segment ("/gmi-<uid>-<run id>"), for messages
  std::vector<std::string> roles;         // e.g. {"env", "agent", "trainer"}
  std::vector<std::vector<int>> groups;   // every group of the run, as rank lists (the paper's get_group)
  // Multi-host runs: rank, world and groups above are this host's; these place it in the job.
  int host = -1;                // this GMI's host (launcher process) in the job; -1: a one-host run
  std::string host_name;        // the host's id (hostname, or what --host-id gave)
  int first_rank = 0;           // global rank of the host's GMI 0
  int global_world = 0;         // GMIs of every host; 0: world

  [[nodiscard]] int global_rank() const noexcept { return first_rank + rank; }
  [[nodiscard]] int global_size() const noexcept { return global_world > 0 ? global_world : world; }

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

  // This GMI's GPU among the run's (0 .. gpus - 1), not its CUDA ordinal.
  [[nodiscard]] int gpu_index() const noexcept { return gmis_per_gpu > 0 ? rank / gmis_per_gpu : 0; }

  // "GMI 3 (GPU 0, slice 1)" or "GMI 3 (host, slice 1)" (multi-host: "GMI 3 (host 1 'node7', GPU 0, slice 1)",
  // the global rank): the name every error about this GMI uses.
  [[nodiscard]] std::string describe() const {
    std::ostringstream out;
    out << "GMI " << global_rank() << " (";
    if (host >= 0) out << "host " << host << " '" << host_name << "', ";
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
// "0,1,2": a rank list for messages.
inline std::string join_ints(const std::vector<int>& v, char sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += std::to_string(v[i]);
  }
  return out;
}
}  // namespace detail

inline constexpr const char* identity_variable = "GMI_IDENTITY";

// The variable that carries `id` to a worker process.
[[nodiscard]] inline std::vector<std::pair<std::string, std::string>> to_env(const identity& id) {
  const nlohmann::json j = {{"rank", id.rank},         {"world", id.world},   {"gpu", id.gpu},
                            {"slice", id.slice},       {"local_device", id.local_device},
                            {"gpus", id.gpus},         {"gmis_per_gpu", id.gmis_per_gpu},
                            {"device_sms", id.device_sms},
                            {"run_id", id.run_id},     {"shm", id.shm_name},  {"roles", id.roles},
                            {"groups", id.groups},     {"host", id.host},     {"host_name", id.host_name},
                            {"first_rank", id.first_rank}, {"global_world", id.global_world}};
  return {{identity_variable, j.dump()}};
}

// The identity of this process when it was started as a GMI by the launcher; std::nullopt in the launcher
// (GMI_IDENTITY unset). Throws config_error naming the field when the variable is present but malformed.
[[nodiscard]] inline std::optional<identity> this_gmi() {
  const char* text = std::getenv(identity_variable);
  if (!text) return std::nullopt;
  const std::string what = identity_variable;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) throw gmi::config_error(gmi::got_need(what, text, "a JSON object set by the gmi launcher"));
  auto field = [&](const char* key, auto& out) {
    try {
      out = j.at(key).get<std::remove_reference_t<decltype(out)>>();
    } catch (const nlohmann::json::exception&) {
      throw gmi::config_error(gmi::got_need(what + "." + key, j.contains(key) ? j[key].dump() : "<missing>",
                                            "the value the gmi launcher sets"));
    }
  };
  identity id;
  field("rank", id.rank);
  field("world", id.world);
  field("gpu", id.gpu);
  field("slice", id.slice);
  field("local_device", id.local_device);
  field("gpus", id.gpus);
  field("gmis_per_gpu", id.gmis_per_gpu);
  field("device_sms", id.device_sms);
  field("run_id", id.run_id);
  field("shm", id.shm_name);
  field("roles", id.roles);
  field("groups", id.groups);
  if (j.contains("host")) {  // multi-host fields: absent from identities of one-host launchers
    field("host", id.host);
    field("host_name", id.host_name);
    field("first_rank", id.first_rank);
    field("global_world", id.global_world);
  }
  gmi::require(id.world >= 1, what + ".world", id.world, ">= 1");
  gmi::require(id.rank >= 0 && id.rank < id.world, what + ".rank", id.rank, "0..world-1");
  gmi::require(id.gpus >= 1 && id.gmis_per_gpu >= 1, what + ".gpus x gmis_per_gpu",
               std::to_string(id.gpus) + " x " + std::to_string(id.gmis_per_gpu), ">= 1 each");
  return id;
}

}  // namespace gmi::runtime

#pragma once
// Which host this launcher is in a multi-host job: one launcher process a host, started by mpirun, srun or
// torchrun (comm::detect_launcher reads their variables); its index is the launcher's rank. Its id names it in
// errors and in its shared-memory names. Several launchers on one machine are simulated hosts: each gets the id
// "<hostname>.<local rank>" (or the one --host-id gives) and its share of the machine's GPUs, and they share
// nothing through /dev/shm.

#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gmi/comm/nccl.hpp>
#include <gmi/core/error.hpp>
#include <gmi/runtime/identity.hpp>

namespace gmi::runtime {

struct host_info {
  int host = 0, hosts = 1;               // this launcher's index in the job, and the job's launchers
  int local_index = 0, local_count = 1;  // launchers on this machine (more than one: simulated hosts)
  std::string source = "none";           // the launcher: "openmpi", "slurm", "torchrun" or "none"
  std::string job;                       // the launcher's job key (empty without a launcher)
  std::string machine;                   // gethostname()
  std::string id;                        // names this host in errors and shared-memory names
};

// "GMIs 2-3" or "GMI 2": the global ranks of one host, for messages.
[[nodiscard]] inline std::string gmi_range(int first, int count) {
  return count == 1 ? "GMI " + std::to_string(first)
                    : "GMIs " + std::to_string(first) + "-" + std::to_string(first + count - 1);
}

// The host id as a piece of a /dev/shm name: letters, digits, '.', '_' and '-' kept, anything else '_'.
[[nodiscard]] inline std::string shm_safe(const std::string& id) {
  std::string out;
  for (char c : id) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-';
    out += keep ? c : '_';
  }
  return out.substr(0, 48);
}

// This launcher's place. `host_id` (a flag or config field) overrides the id; empty keeps the default.
[[nodiscard]] inline host_info detect_host(const std::string& host_id = {}) {
  host_info h;
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) std::snprintf(name, sizeof name, "unknown");
  h.machine = name;
  if (const auto env = comm::detect_launcher()) {
    h.host = env->rank;
    h.hosts = env->world;
    h.local_index = env->local_rank;
    h.local_count = env->local_world;
    h.source = env->source;
    h.job = env->job;
  }
  h.id = h.local_count > 1 ? h.machine + "." + std::to_string(h.local_index) : h.machine;
  if (!host_id.empty()) {
    require(shm_safe(host_id) == host_id, "host id", host_id, "letters, digits, '.', '_' or '-', at most 48");
    h.id = host_id;
  }
  return h;
}

// The host of a launcher that may start GMI processes: a GMI process (GMI_IDENTITY set, its variables inherited
// from its launcher's launcher) is never a host of its own, so it gets the one-host answer.
[[nodiscard]] inline host_info job_host(const std::string& host_id = {}) {
  if (this_gmi()) return host_info{};
  return detect_host(host_id);
}

// The GPUs (CUDA ordinals) of this host among `visible` ones: all of them with one launcher a machine; with
// local_count launchers on one machine, launcher i takes the i-th contiguous share (visible must divide evenly).
[[nodiscard]] inline std::vector<int> host_gpus(int visible, const host_info& h) {
  require(visible >= 1, "visible GPUs", visible, ">= 1");
  require(visible % h.local_count == 0, "GPUs for " + std::to_string(h.local_count) + " launchers on " + h.machine,
          visible, "a multiple of " + std::to_string(h.local_count) + " (each simulated host gets an equal share)");
  const int per = visible / h.local_count;
  std::vector<int> out;
  for (int g = 0; g < per; ++g) out.push_back(h.local_index * per + g);
  return out;
}

}  // namespace gmi::runtime

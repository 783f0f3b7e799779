#pragma once
// What the coordinator plans for: the GPUs of this machine (CUDA's view, matched to NVML's by UUID), the link
// between every GPU pair (NVLink or the PCIe path), MIG instances and the CPU cores this process may use.
// discover() never throws: without a driver or a GPU it answers a host-only topology whose `reason` says why.
// It initialises the CUDA runtime (no context); the launcher starts GMIs by re-exec, so that is safe to do first.

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <gmi/core/status.hpp>
#include <gmi/cuda/device.hpp>
#include <gmi/cuda/nvml.hpp>
#include <gmi/partition/cpu_cores.hpp>

namespace gmi::plan {

// One MIG device of a GPU (a compute instance), as NVML reports it.
struct mig_instance {
  std::string uuid;  // "MIG-..."; bind a GMI with CUDA_VISIBLE_DEVICES=uuid
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  int sm_count = 0;              // 0 when the driver does not say
  std::uint64_t memory_mib = 0;  // 0 when the driver does not say
};

struct gpu_info {
  int cuda_ordinal = 0;
  int nvml_index = -1;  // -1: NVML unavailable, or a MIG device made visible by UUID
  std::string name;
  std::string uuid;        // "GPU-..." from cudaDeviceProp::uuid
  std::string pci_bus_id;  // "0000:1b:00.0"
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  std::uint64_t memory_bytes = 0;  // cudaDeviceProp::totalGlobalMem
  int nvlinks_active = 0;          // active NVLinks of this GPU (0: none, or NVML unavailable)
  bool mig_enabled = false;
  std::vector<mig_instance> mig;
};

enum class link_kind { unknown, nvlink, pcie };

[[nodiscard]] inline const char* link_name(link_kind k) {
  switch (k) {
    case link_kind::nvlink: return "nvlink";
    case link_kind::pcie: return "pcie";
    case link_kind::unknown: break;
  }
  return "unknown";
}

[[nodiscard]] inline link_kind link_from_name(const std::string& s) {
  if (s == "nvlink") return link_kind::nvlink;
  if (s == "pcie") return link_kind::pcie;
  return link_kind::unknown;
}

// The link between CUDA devices a < b.
struct gpu_link {
  int a = 0, b = 0;
  link_kind kind = link_kind::unknown;
  std::string pcie_path;     // "PIX", "PXB", "PHB", "NODE", "SYS", "same board"; empty when unknown
  bool peer_access = false;  // cudaDeviceCanAccessPeer(a, b)
  std::string note;          // why kind is unknown
};

struct topology {
  std::string host;
  std::string driver;  // NVML's driver version, or "none"
  std::vector<gpu_info> gpus;
  std::vector<gpu_link> links;  // one per pair a < b
  std::vector<int> cpu_cores;   // the cores this process may run on
  std::string reason;           // why there are no GPUs (empty when there are)
  std::vector<std::string> notes;  // what could not be read (e.g. NVML absent: links unknown)

  [[nodiscard]] bool host_only() const noexcept { return gpus.empty(); }
  [[nodiscard]] const gpu_link* link(int a, int b) const noexcept {
    if (a > b) std::swap(a, b);
    for (const auto& l : links) {
      if (l.a == a && l.b == b) return &l;
    }
    return nullptr;
  }
};

namespace detail {

inline std::string hostname() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof buffer - 1) != 0) return "unknown";
  return buffer;
}

inline gpu_info describe_gpu(int ordinal, bool nvml_ok, std::vector<std::string>& notes) {
  gpu_info g;
  g.cuda_ordinal = ordinal;
  cudaDeviceProp p{};
  if (const cudaError_t e = cudaGetDeviceProperties(&p, ordinal); e != cudaSuccess) {
    cudaGetLastError();
    notes.push_back("GPU " + std::to_string(ordinal) + ": cudaGetDeviceProperties: " + cudaGetErrorName(e));
    return g;
  }
  g.name = p.name;
  g.uuid = gmi::cuda::nvml::uuid_string(p.uuid);
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, ordinal) == cudaSuccess) {
    g.pci_bus_id = bus;
  } else {
    cudaGetLastError();
  }
  g.sm_count = p.multiProcessorCount;
  g.cc_major = p.major;
  g.cc_minor = p.minor;
  g.memory_bytes = p.totalGlobalMem;
  if (!nvml_ok) return g;
  auto index = gmi::cuda::nvml::index_of_cuda_device(ordinal);
  if (!index) {
    notes.push_back("GPU " + std::to_string(ordinal) + ": " + index.error().message());
    return g;
  }
  g.nvml_index = *index;
  if (auto links = gmi::cuda::nvml::nvlink_active(g.nvml_index)) {
    for (bool up : *links) g.nvlinks_active += up ? 1 : 0;
  }
  if (auto mode = gmi::cuda::nvml::mig_mode_of(g.nvml_index)) g.mig_enabled = mode->current;
  if (g.mig_enabled) {
    if (auto devices = gmi::cuda::nvml::mig_devices(g.nvml_index)) {
      for (const auto& d : *devices) {
        g.mig.push_back({d.uuid, d.gpu_instance_id, d.compute_instance_id, d.sm_count, d.memory_mib});
      }
    } else {
      notes.push_back("GPU " + std::to_string(ordinal) + " MIG devices: " + devices.error().message());
    }
  }
  return g;
}

inline gpu_link describe_link(const gpu_info& a, const gpu_info& b) {
  gpu_link l;
  l.a = a.cuda_ordinal;
  l.b = b.cuda_ordinal;
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, a.cuda_ordinal, b.cuda_ordinal) == cudaSuccess) {
    l.peer_access = can != 0;
  } else {
    cudaGetLastError();
  }
  if (a.nvml_index < 0 || b.nvml_index < 0) {
    l.note = "no NVML index for both GPUs";
    return l;
  }
  if (auto path = gmi::cuda::nvml::common_ancestor(a.nvml_index, b.nvml_index)) {
    l.pcie_path = gmi::cuda::nvml::pcie_path_name(*path);
  }
  auto nv = gmi::cuda::nvml::nvlink_p2p(a.nvml_index, b.nvml_index);
  if (nv && *nv) {
    l.kind = link_kind::nvlink;
  } else if (nv || !l.pcie_path.empty()) {
    l.kind = link_kind::pcie;  // NVML answered: no NVLink peer path
  } else {
    l.note = nv.error().message();
  }
  return l;
}

}  // namespace detail

// A topology with no GPUs: the host's cores, and why there are no GPUs.
[[nodiscard]] inline topology host_only(std::string reason) {
  topology t;
  t.host = detail::hostname();
  t.driver = "none";
  t.reason = std::move(reason);
  try {
    t.cpu_cores = gmi::partition::cpu_cores::available_cores();
  } catch (const std::exception& e) {
    t.notes.push_back(std::string("cpu cores: ") + e.what());
  }
  return t;
}

// This machine, as far as it can be read. Never throws.
[[nodiscard]] inline topology discover() noexcept {
  try {
    auto n = gmi::cuda::device_count();
    if (!n) return host_only(n.error().message());
    topology t = host_only("");
    const auto& nvml = gmi::cuda::nvml::library::instance();
    const bool nvml_ok = nvml.available();
    if (nvml_ok) {
      t.driver = gmi::cuda::nvml::driver_version().value_or("unknown");
    } else {
      t.notes.push_back("links and MIG unknown: " + nvml.availability().message());
      int v = 0;
      if (cudaDriverGetVersion(&v) == cudaSuccess) {
        t.driver = "CUDA " + std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
      }
    }
    for (int i = 0; i < *n; ++i) t.gpus.push_back(detail::describe_gpu(i, nvml_ok, t.notes));
    for (std::size_t i = 0; i < t.gpus.size(); ++i) {
      for (std::size_t j = i + 1; j < t.gpus.size(); ++j) t.links.push_back(detail::describe_link(t.gpus[i], t.gpus[j]));
    }
    return t;
  } catch (const std::exception& e) {
    return host_only(std::string("GPU discovery failed: ") + e.what());
  } catch (...) {
    return host_only("GPU discovery failed");
  }
}

// "8 x NVIDIA H100 80GB HBM3 (79.1 GiB), NVLink", "host only (no NVIDIA driver: ...)", for logs.
[[nodiscard]] inline std::string describe(const topology& t) {
  if (t.host_only()) {
    return "host only, " + std::to_string(t.cpu_cores.size()) + " cores (" + t.reason + ")";
  }
  std::string out;
  std::size_t i = 0;
  while (i < t.gpus.size()) {
    std::size_t j = i;
    while (j < t.gpus.size() && t.gpus[j].name == t.gpus[i].name && t.gpus[j].memory_bytes == t.gpus[i].memory_bytes) ++j;
    char mem[32];
    std::snprintf(mem, sizeof mem, "%.1f", static_cast<double>(t.gpus[i].memory_bytes) / (1024.0 * 1024 * 1024));
    out += (out.empty() ? "" : " + ") + std::to_string(j - i) + " x " + t.gpus[i].name + " (" + mem + " GiB)";
    i = j;
  }
  int nvlink = 0;
  for (const auto& l : t.links) nvlink += l.kind == link_kind::nvlink ? 1 : 0;
  if (!t.links.empty()) {
    out += ", " + std::to_string(nvlink) + " of " + std::to_string(t.links.size()) + " GPU pairs over NVLink";
  }
  return out + ", " + std::to_string(t.cpu_cores.size()) + " cores";
}

// JSON (nlohmann, found by ADL).

template <class Json>
void to_json(Json& j, const mig_instance& m) {
  j = Json{{"uuid", m.uuid},
           {"gpu_instance_id", m.gpu_instance_id},
           {"compute_instance_id", m.compute_instance_id},
           {"sm_count", m.sm_count},
           {"memory_mib", m.memory_mib}};
}
template <class Json>
void from_json(const Json& j, mig_instance& m) {
  j.at("uuid").get_to(m.uuid);
  j.at("gpu_instance_id").get_to(m.gpu_instance_id);
  j.at("compute_instance_id").get_to(m.compute_instance_id);
  j.at("sm_count").get_to(m.sm_count);
  j.at("memory_mib").get_to(m.memory_mib);
}

template <class Json>
void to_json(Json& j, const gpu_info& g) {
  j = Json{{"cuda_ordinal", g.cuda_ordinal},
           {"nvml_index", g.nvml_index},
           {"name", g.name},
           {"uuid", g.uuid},
           {"pci_bus_id", g.pci_bus_id},
           {"sm_count", g.sm_count},
           {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
           {"memory_bytes", g.memory_bytes},
           {"nvlinks_active", g.nvlinks_active},
           {"mig_enabled", g.mig_enabled},
           {"mig", g.mig}};
}
template <class Json>
void from_json(const Json& j, gpu_info& g) {
  j.at("cuda_ordinal").get_to(g.cuda_ordinal);
  j.at("nvml_index").get_to(g.nvml_index);
  j.at("name").get_to(g.name);
  j.at("uuid").get_to(g.uuid);
  j.at("pci_bus_id").get_to(g.pci_bus_id);
  j.at("sm_count").get_to(g.sm_count);
  const auto cc = j.at("compute_capability").template get<std::string>();
  const auto dot = cc.find('.');
  if (dot == std::string::npos) {
    throw gmi::config_error(gmi::got_need("topology compute_capability", cc, "\"major.minor\""));
  }
  g.cc_major = std::stoi(cc.substr(0, dot));
  g.cc_minor = std::stoi(cc.substr(dot + 1));
  j.at("memory_bytes").get_to(g.memory_bytes);
  j.at("nvlinks_active").get_to(g.nvlinks_active);
  j.at("mig_enabled").get_to(g.mig_enabled);
  j.at("mig").get_to(g.mig);
}

template <class Json>
void to_json(Json& j, const gpu_link& l) {
  j = Json{{"a", l.a},
           {"b", l.b},
           {"kind", link_name(l.kind)},
           {"pcie_path", l.pcie_path},
           {"peer_access", l.peer_access},
           {"note", l.note}};
}
template <class Json>
void from_json(const Json& j, gpu_link& l) {
  j.at("a").get_to(l.a);
  j.at("b").get_to(l.b);
  l.kind = link_from_name(j.at("kind").template get<std::string>());
  j.at("pcie_path").get_to(l.pcie_path);
  j.at("peer_access").get_to(l.peer_access);
  j.at("note").get_to(l.note);
}

template <class Json>
void to_json(Json& j, const topology& t) {
  j = Json{{"host", t.host},   {"driver", t.driver}, {"gpus", t.gpus},   {"links", t.links},
           {"cpu_cores", t.cpu_cores}, {"reason", t.reason}, {"notes", t.notes}};
}
template <class Json>
void from_json(const Json& j, topology& t) {
  j.at("host").get_to(t.host);
  j.at("driver").get_to(t.driver);
  j.at("gpus").get_to(t.gpus);
  j.at("links").get_to(t.links);
  j.at("cpu_cores").get_to(t.cpu_cores);
  j.at("reason").get_to(t.reason);
  j.at("notes").get_to(t.notes);
}

}  // namespace gmi::plan

#pragma once
// NVML, loaded at run time with dlopen("libnvidia-ml.so.1"): device names, UUIDs, memory, utilization, MIG
// instances and NVLink state, read-only. Nothing links libnvidia-ml, so binaries load on machines without a
// driver, where every query answers status::unavailable("no NVIDIA driver: ...").
// Indices here are NVML's (every GPU of the machine, in PCI order), not CUDA ordinals: CUDA_VISIBLE_DEVICES and
// CUDA_DEVICE_ORDER do not apply. index_of_cuda_device maps one to the other by UUID.

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/status.hpp>

namespace gmi::cuda::nvml {

struct memory_info {
  std::uint64_t total = 0, free = 0, used = 0;  // bytes
};

struct utilization {
  unsigned gpu = 0;     // % of the last sample period with a kernel running
  unsigned memory = 0;  // % of the last sample period with device memory being read or written
};

struct mig_mode {
  bool current = false;  // MIG enabled now
  bool pending = false;  // MIG enabled after the next GPU reset
};

// One MIG device (a compute instance inside a GPU instance). Bind a process to it with CUDA_VISIBLE_DEVICES=uuid.
struct mig_device {
  unsigned slot = 0;  // index among the parent's MIG device handles
  std::string uuid;   // "MIG-..."
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  int sm_count = 0;                // 0 when the driver does not say
  std::uint64_t memory_mib = 0;    // 0 when the driver does not say
};

namespace detail {

// Hand-declared subset of nvml.h (no nvml.h is installed; layouts as in NVIDIA/go-nvml gen/nvml/nvml.h).
struct nvmlDevice_st;
using device_t = nvmlDevice_st*;
using return_t = int;  // nvmlReturn_t

enum : return_t {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_UNKNOWN = 999,
};

struct pci_info_t {  // nvmlPciInfo_t, filled by nvmlDeviceGetPciInfo_v3
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct memory_t {  // nvmlMemory_t (v1)
  unsigned long long total, free, used;
};
struct utilization_t {  // nvmlUtilization_t
  unsigned gpu, memory;
};
struct attributes_t {  // nvmlDeviceAttributes_t, filled by nvmlDeviceGetAttributes_v2
  unsigned multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount, sharedJpegCount,
      sharedOfaCount, gpuInstanceSliceCount, computeInstanceSliceCount;
  unsigned long long memorySizeMB;
};

inline constexpr unsigned string_buffer = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE, NVML_DEVICE_UUID_V2_BUFFER_SIZE
inline constexpr unsigned max_nvlinks = 18;    // NVML_NVLINK_MAX_LINKS

struct functions {
  return_t (*init)() = nullptr;                                   // nvmlInit_v2
  const char* (*error_string)(return_t) = nullptr;                // nvmlErrorString
  return_t (*driver_version)(char*, unsigned) = nullptr;          // nvmlSystemGetDriverVersion
  return_t (*count)(unsigned*) = nullptr;                         // nvmlDeviceGetCount_v2
  return_t (*handle_by_index)(unsigned, device_t*) = nullptr;     // nvmlDeviceGetHandleByIndex_v2
  return_t (*name)(device_t, char*, unsigned) = nullptr;          // nvmlDeviceGetName
  return_t (*uuid)(device_t, char*, unsigned) = nullptr;          // nvmlDeviceGetUUID
  return_t (*pci_info)(device_t, pci_info_t*) = nullptr;          // nvmlDeviceGetPciInfo_v3
  return_t (*memory)(device_t, memory_t*) = nullptr;              // nvmlDeviceGetMemoryInfo
  return_t (*utilization)(device_t, utilization_t*) = nullptr;    // nvmlDeviceGetUtilizationRates
  return_t (*mig_mode)(device_t, unsigned*, unsigned*) = nullptr;  // nvmlDeviceGetMigMode(current, pending)
  return_t (*max_mig_count)(device_t, unsigned*) = nullptr;       // nvmlDeviceGetMaxMigDeviceCount
  return_t (*mig_handle)(device_t, unsigned, device_t*) = nullptr;  // nvmlDeviceGetMigDeviceHandleByIndex
  return_t (*gpu_instance_id)(device_t, unsigned*) = nullptr;     // nvmlDeviceGetGpuInstanceId
  return_t (*compute_instance_id)(device_t, unsigned*) = nullptr;  // nvmlDeviceGetComputeInstanceId
  return_t (*attributes)(device_t, attributes_t*) = nullptr;      // nvmlDeviceGetAttributes_v2
  return_t (*nvlink_state)(device_t, unsigned, int*) = nullptr;   // nvmlDeviceGetNvLinkState(link, nvmlEnableState_t*)
};

inline const char* return_name(return_t r) {
  switch (r) {
    case NVML_SUCCESS: return "NVML_SUCCESS";
    case NVML_ERROR_UNINITIALIZED: return "NVML_ERROR_UNINITIALIZED";
    case NVML_ERROR_INVALID_ARGUMENT: return "NVML_ERROR_INVALID_ARGUMENT";
    case NVML_ERROR_NOT_SUPPORTED: return "NVML_ERROR_NOT_SUPPORTED";
    case NVML_ERROR_NO_PERMISSION: return "NVML_ERROR_NO_PERMISSION";
    case NVML_ERROR_NOT_FOUND: return "NVML_ERROR_NOT_FOUND";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "NVML_ERROR_INSUFFICIENT_SIZE";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "NVML_ERROR_DRIVER_NOT_LOADED";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case NVML_ERROR_GPU_IS_LOST: return "NVML_ERROR_GPU_IS_LOST";
    default: return "nvmlReturn_t";
  }
}

}  // namespace detail

// The NVML library of this process: opened and initialised once, on first use, thread-safely (a function-local
// static). nvmlShutdown is not called: the process exit releases NVML, and shutting it down from a static
// destructor could pull it from under a thread still querying.
class library {
 public:
  static const library& instance() {
    static const library lib;
    return lib;
  }

  // ok, or why NVML can not be used (the message starts with "no NVIDIA driver" when the library or driver is absent).
  [[nodiscard]] const status& availability() const noexcept { return state_; }
  [[nodiscard]] bool available() const noexcept { return state_.is_ok(); }
  [[nodiscard]] const detail::functions& fn() const noexcept { return fn_; }

  // "nvmlX: NVML_ERROR_... (description)"
  [[nodiscard]] std::string describe(detail::return_t r, const char* call) const {
    std::string text = std::string(call) + ": " + detail::return_name(r);
    if (text.ends_with("nvmlReturn_t")) text += ' ' + std::to_string(r);  // a code without a name here: the number
    if (fn_.error_string) text += std::string(" (") + fn_.error_string(r) + ")";
    return text;
  }

  // A status for a failed call: unsupported for features this GPU or driver lacks, invalid for bad arguments.
  [[nodiscard]] status to_status(detail::return_t r, const char* call) const {
    using namespace detail;
    if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_FUNCTION_NOT_FOUND) return status::unsupported(describe(r, call));
    if (r == NVML_ERROR_INVALID_ARGUMENT || r == NVML_ERROR_NOT_FOUND) return status::invalid(describe(r, call));
    if (r == NVML_ERROR_DRIVER_NOT_LOADED) return status::unavailable("no NVIDIA driver: " + describe(r, call));
    return status::failed(describe(r, call));
  }

  library(const library&) = delete;
  library& operator=(const library&) = delete;

 private:
  library() {
    handle_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char* why = dlerror();
      state_ = status::unavailable(std::string("no NVIDIA driver: dlopen(libnvidia-ml.so.1) failed: ") +
                                   (why ? why : "unknown reason"));
      return;
    }
    auto load = [this](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle_, name));
    };
    load(fn_.init, "nvmlInit_v2");
    load(fn_.error_string, "nvmlErrorString");
    load(fn_.driver_version, "nvmlSystemGetDriverVersion");
    load(fn_.count, "nvmlDeviceGetCount_v2");
    load(fn_.handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
    load(fn_.name, "nvmlDeviceGetName");
    load(fn_.uuid, "nvmlDeviceGetUUID");
    load(fn_.pci_info, "nvmlDeviceGetPciInfo_v3");
    load(fn_.memory, "nvmlDeviceGetMemoryInfo");
    load(fn_.utilization, "nvmlDeviceGetUtilizationRates");
    load(fn_.mig_mode, "nvmlDeviceGetMigMode");
    load(fn_.max_mig_count, "nvmlDeviceGetMaxMigDeviceCount");
    load(fn_.mig_handle, "nvmlDeviceGetMigDeviceHandleByIndex");
    load(fn_.gpu_instance_id, "nvmlDeviceGetGpuInstanceId");
    load(fn_.compute_instance_id, "nvmlDeviceGetComputeInstanceId");
    load(fn_.attributes, "nvmlDeviceGetAttributes_v2");
    load(fn_.nvlink_state, "nvmlDeviceGetNvLinkState");
    if (!fn_.init || !fn_.count || !fn_.handle_by_index) {
      state_ = status::unsupported("libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetCount_v2 or "
                                   "nvmlDeviceGetHandleByIndex_v2 (driver too old)");
      return;
    }
    if (const detail::return_t r = fn_.init(); r != detail::NVML_SUCCESS) {
      state_ = status::unavailable("no NVIDIA driver: " + describe(r, "nvmlInit_v2"));
    }
  }
  // The library stays loaded until exit (see the class comment).

  void* handle_ = nullptr;
  detail::functions fn_;
  status state_;
};

namespace detail {

inline const library& lib() { return library::instance(); }

// The handle of NVML device `index`, or why not.
inline result<device_t> handle(int index) {
  const library& l = lib();
  if (!l.available()) return l.availability();
  unsigned n = 0;
  if (const return_t r = l.fn().count(&n); r != NVML_SUCCESS) return l.to_status(r, "nvmlDeviceGetCount_v2");
  if (index < 0 || static_cast<unsigned>(index) >= n) {
    return status::invalid(gmi::got_need("NVML device index", index,
                                         n ? "0.." + std::to_string(n - 1) : std::string("none (0 devices)")));
  }
  device_t d = nullptr;
  if (const return_t r = l.fn().handle_by_index(static_cast<unsigned>(index), &d); r != NVML_SUCCESS) {
    return l.to_status(r, "nvmlDeviceGetHandleByIndex_v2");
  }
  return d;
}

inline status missing(const char* symbol) {
  return status::unsupported(std::string("libnvidia-ml.so.1 lacks ") + symbol);
}

template <class Fn>
result<std::string> read_string(device_t d, Fn fn, const char* call) {
  if (!fn) return missing(call);
  char buffer[string_buffer] = {};
  if (const return_t r = fn(d, buffer, string_buffer); r != NVML_SUCCESS) return lib().to_status(r, call);
  return std::string(buffer);
}

}  // namespace detail

// NVML's view of the machine: every GPU, whatever CUDA_VISIBLE_DEVICES says.
[[nodiscard]] inline result<int> device_count() {
  const library& l = detail::lib();
  if (!l.available()) return l.availability();
  unsigned n = 0;
  if (const detail::return_t r = l.fn().count(&n); r != detail::NVML_SUCCESS) {
    return l.to_status(r, "nvmlDeviceGetCount_v2");
  }
  return static_cast<int>(n);
}

[[nodiscard]] inline result<std::string> driver_version() {
  const library& l = detail::lib();
  if (!l.available()) return l.availability();
  if (!l.fn().driver_version) return detail::missing("nvmlSystemGetDriverVersion");
  char buffer[detail::string_buffer] = {};
  if (const detail::return_t r = l.fn().driver_version(buffer, detail::string_buffer); r != detail::NVML_SUCCESS) {
    return l.to_status(r, "nvmlSystemGetDriverVersion");
  }
  return std::string(buffer);
}

// "NVIDIA H200", ...
[[nodiscard]] inline result<std::string> name(int index) {
  auto d = detail::handle(index);
  if (!d) return d.error();
  return detail::read_string(*d, detail::lib().fn().name, "nvmlDeviceGetName");
}

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
[[nodiscard]] inline result<std::string> uuid(int index) {
  auto d = detail::handle(index);
  if (!d) return d.error();
  return detail::read_string(*d, detail::lib().fn().uuid, "nvmlDeviceGetUUID");
}

// "00000000:1B:00.0" (domain:bus:device.function)
[[nodiscard]] inline result<std::string> pci_bus_id(int index) {
  auto d = detail::handle(index);
  if (!d) return d.error();
  const auto& fn = detail::lib().fn();
  if (!fn.pci_info) return detail::missing("nvmlDeviceGetPciInfo_v3");
  detail::pci_info_t info{};
  if (const detail::return_t r = fn.pci_info(*d, &info); r != detail::NVML_SUCCESS) {
    return detail::lib().to_status(r, "nvmlDeviceGetPciInfo_v3");
  }
  return std::string(info.busId);
}

[[nodiscard]] inline result<memory_info> memory(int index) {
  auto d = detail::handle(index);
  if (!d) return d.error();
  const auto& fn = detail::lib().fn();
  if (!fn.memory) return detail::missing("nvmlDeviceGetMemoryInfo");
  detail::memory_t m{};
  if (const detail::return_t r = fn.memory(*d, &m); r != detail::NVML_SUCCESS) {
    return detail::lib().to_status(r, "nvmlDeviceGetMemoryInfo");
  }
  return memory_info{m.total, m.free, m.used};
}

[[nodiscard]] inline result<utilization> utilization_rates(int index) {
  auto d = detail::handle(index);
  if (!d) return d.error();
  const auto& fn = detail::lib().fn();
  if (!fn.utilization) return detail::missing("nvmlDeviceGetUtilizationRates");
  detail::utilization_t u{};
  if (const detail::return_t r = fn.utilization(*d, &u); r != detail::NVML_SUCCESS) {
    return detail::lib().to_status(r, "nvmlDeviceGetUtilizationRates");
  }
  return utilization{u.gpu, u.memory};
}

// MIG mode; status::unsupported on GPUs without MIG. Read-only: gmi never changes MIG mode.
[[nodiscard]] inline result<mig_mode> mig_mode_of(int index) {
  auto d = detail::handle(index);
  if (!d) return d.error();
  const auto& fn = detail::lib().fn();
  if (!fn.mig_mode) return detail::missing("nvmlDeviceGetMigMode");
  unsigned current = 0, pending = 0;
  if (const detail::return_t r = fn.mig_mode(*d, &current, &pending); r != detail::NVML_SUCCESS) {
    return detail::lib().to_status(r, "nvmlDeviceGetMigMode");
  }
  return mig_mode{current != 0, pending != 0};
}

// The MIG devices of GPU `index`: empty when MIG is disabled or unsupported there.
[[nodiscard]] inline result<std::vector<mig_device>> mig_devices(int index) {
  auto d = detail::handle(index);
  if (!d) return d.error();
  auto mode = mig_mode_of(index);
  if (!mode) {
    if (mode.error().value() == status::code::unsupported) return std::vector<mig_device>{};
    return mode.error();
  }
  if (!mode->current) return std::vector<mig_device>{};
  const library& l = detail::lib();
  const auto& fn = l.fn();
  if (!fn.max_mig_count || !fn.mig_handle) return detail::missing("nvmlDeviceGetMigDeviceHandleByIndex");
  unsigned slots = 0;
  if (const detail::return_t r = fn.max_mig_count(*d, &slots); r != detail::NVML_SUCCESS) {
    return l.to_status(r, "nvmlDeviceGetMaxMigDeviceCount");
  }
  std::vector<mig_device> out;
  for (unsigned slot = 0; slot < slots; ++slot) {
    detail::device_t m = nullptr;
    const detail::return_t r = fn.mig_handle(*d, slot, &m);
    if (r == detail::NVML_ERROR_NOT_FOUND || r == detail::NVML_ERROR_INVALID_ARGUMENT) continue;  // empty slot
    if (r != detail::NVML_SUCCESS) return l.to_status(r, "nvmlDeviceGetMigDeviceHandleByIndex");
    mig_device md;
    md.slot = slot;
    auto id = detail::read_string(m, fn.uuid, "nvmlDeviceGetUUID");
    if (!id) return id.error();
    md.uuid = *id;
    if (fn.gpu_instance_id) fn.gpu_instance_id(m, &md.gpu_instance_id);
    if (fn.compute_instance_id) fn.compute_instance_id(m, &md.compute_instance_id);
    detail::attributes_t a{};
    if (fn.attributes && fn.attributes(m, &a) == detail::NVML_SUCCESS) {
      md.sm_count = static_cast<int>(a.multiprocessorCount);
      md.memory_mib = a.memorySizeMB;
    }
    out.push_back(std::move(md));
  }
  return out;
}

// Whether each NVLink of GPU `index` is active, link 0 first; empty for GPUs without NVLink (PCIe cards).
[[nodiscard]] inline result<std::vector<bool>> nvlink_active(int index) {
  auto d = detail::handle(index);
  if (!d) return d.error();
  const library& l = detail::lib();
  if (!l.fn().nvlink_state) return detail::missing("nvmlDeviceGetNvLinkState");
  std::vector<bool> links;
  for (unsigned link = 0; link < detail::max_nvlinks; ++link) {
    int active = 0;  // nvmlEnableState_t
    const detail::return_t r = l.fn().nvlink_state(*d, link, &active);
    if (r == detail::NVML_ERROR_NOT_SUPPORTED || r == detail::NVML_ERROR_INVALID_ARGUMENT) break;  // past the last link
    if (r != detail::NVML_SUCCESS) return l.to_status(r, "nvmlDeviceGetNvLinkState");
    links.push_back(active != 0);
  }
  return links;
}

// "GPU-..." (or "MIG-..." for a MIG device) from the 16 bytes CUDA reports in cudaDeviceProp::uuid.
[[nodiscard]] inline std::string uuid_string(const cudaUUID_t& id, const char* prefix = "GPU-") {
  std::string out(prefix);
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(id.bytes[i]));
    out += hex;
  }
  return out;
}

// The NVML index of CUDA device `ordinal` (matched by UUID, so CUDA_VISIBLE_DEVICES and ordering do not matter).
[[nodiscard]] inline result<int> index_of_cuda_device(int ordinal) {
  auto n = device_count();
  if (!n) return n.error();
  cudaDeviceProp p{};
  if (const cudaError_t e = cudaGetDeviceProperties(&p, ordinal); e != cudaSuccess) {
    cudaGetLastError();
    return status::invalid(std::string("cudaGetDeviceProperties(") + std::to_string(ordinal) +
                           "): " + cudaGetErrorName(e));
  }
  const std::string want = uuid_string(p.uuid);
  for (int i = 0; i < *n; ++i) {
    auto u = uuid(i);
    if (u && *u == want) return i;
  }
  return status::unavailable("CUDA device " + std::to_string(ordinal) + " (" + want +
                             ") is not among NVML's devices (a MIG device? see mig_devices)");
}

// --- GPU pairs (added for plan/topology): NVLink peer-to-peer and the PCIe path between two GPUs. Self-contained:
// the two symbols are looked up here, next to the library the class above already loaded.

// nvmlGpuTopologyLevel_t: the closest common ancestor of two GPUs, as `nvidia-smi topo -m` names it.
enum class pcie_path : int {
  same_board = 0,          // NVML_TOPOLOGY_INTERNAL (two GPUs of one board)
  single_switch = 10,      // PIX: one PCIe switch
  multiple_switches = 20,  // PXB: several PCIe switches, no host bridge
  host_bridge = 30,        // PHB: a PCIe host bridge
  numa_node = 40,          // NODE: host bridges of one NUMA node
  system = 50,             // SYS: across NUMA nodes (SMP interconnect)
};

[[nodiscard]] inline const char* pcie_path_name(pcie_path p) {
  switch (p) {
    case pcie_path::same_board: return "same board";
    case pcie_path::single_switch: return "PIX";
    case pcie_path::multiple_switches: return "PXB";
    case pcie_path::host_bridge: return "PHB";
    case pcie_path::numa_node: return "NODE";
    case pcie_path::system: return "SYS";
  }
  return "unknown";
}

namespace detail {

struct pair_functions {
  return_t (*p2p_status)(device_t, device_t, int, int*) = nullptr;  // nvmlDeviceGetP2PStatus(a, b, caps index, status)
  return_t (*common_ancestor)(device_t, device_t, int*) = nullptr;  // nvmlDeviceGetTopologyCommonAncestor
};

inline const pair_functions& pair_fn() {
  static const pair_functions fns = [] {
    pair_functions out;
    if (!lib().available()) return out;
    // RTLD_NOLOAD: the handle of the copy library::instance() opened (never closed, like that one).
    void* handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!handle) return out;
    out.p2p_status = reinterpret_cast<decltype(out.p2p_status)>(dlsym(handle, "nvmlDeviceGetP2PStatus"));
    out.common_ancestor =
        reinterpret_cast<decltype(out.common_ancestor)>(dlsym(handle, "nvmlDeviceGetTopologyCommonAncestor"));
    return out;
  }();
  return fns;
}

inline constexpr int p2p_caps_index_nvlink = 2;  // NVML_P2P_CAPS_INDEX_NVLINK
inline constexpr int p2p_status_ok = 0;          // NVML_P2P_STATUS_OK

}  // namespace detail

// Whether NVML GPUs `a` and `b` reach each other peer-to-peer over NVLink (directly or through NVSwitch).
[[nodiscard]] inline result<bool> nvlink_p2p(int a, int b) {
  auto da = detail::handle(a);
  if (!da) return da.error();
  auto db = detail::handle(b);
  if (!db) return db.error();
  const auto& fn = detail::pair_fn();
  if (!fn.p2p_status) return detail::missing("nvmlDeviceGetP2PStatus");
  int st = -1;  // nvmlGpuP2PStatus_t
  if (const detail::return_t r = fn.p2p_status(*da, *db, detail::p2p_caps_index_nvlink, &st); r != detail::NVML_SUCCESS) {
    return detail::lib().to_status(r, "nvmlDeviceGetP2PStatus");
  }
  return st == detail::p2p_status_ok;
}

// The PCIe path between NVML GPUs `a` and `b` (their closest common ancestor).
[[nodiscard]] inline result<pcie_path> common_ancestor(int a, int b) {
  auto da = detail::handle(a);
  if (!da) return da.error();
  auto db = detail::handle(b);
  if (!db) return db.error();
  const auto& fn = detail::pair_fn();
  if (!fn.common_ancestor) return detail::missing("nvmlDeviceGetTopologyCommonAncestor");
  int level = 0;  // nvmlGpuTopologyLevel_t
  if (const detail::return_t r = fn.common_ancestor(*da, *db, &level); r != detail::NVML_SUCCESS) {
    return detail::lib().to_status(r, "nvmlDeviceGetTopologyCommonAncestor");
  }
  return static_cast<pcie_path>(level);
}

}  // namespace gmi::cuda::nvml

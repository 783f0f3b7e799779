#pragma once
// Green contexts: hard SM slices of one GPU inside one process (driver API, reached through driver_entry so
// nothing links libcuda). A GMI launches only on its own green streams; the primary context stays idle,
// because kernels launched there run on every SM, the slices' included (docs: cuda-notes section 2).

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <source_location>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/status.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/device.hpp>

namespace gmi::cuda {

// The SM resource of a device as the driver reports it, and the slice sizes gmi accepts.
struct sm_resource {
  int device = 0;
  int sm_count = 0;               // SMs available to green contexts on this device
  int min_partition_size = 0;     // sm.minSmPartitionSize: smallest slice
  int coscheduled_alignment = 0;  // sm.smCoscheduledAlignment: SMs guaranteed on one GPC
  int granularity = 0;            // slice sizes must be multiples of this (see detail::slice_granularity)
  int cc_major = 0, cc_minor = 0;
};

// Flags of split_sm (CUdevSmResourceSplit_flags).
enum class split_flags : unsigned {
  none = 0,
  // Finer slices at the cost of large thread clusters; gmi then accepts any min_sms >= 1 and the driver rounds.
  ignore_sm_coscheduling = CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING,
  // sm_90+: aim for slices that allow maximal thread clusters.
  max_potential_cluster_size = CU_DEV_SM_RESOURCE_SPLIT_MAX_POTENTIAL_CLUSTER_SIZE,
};

// The result of one split: equal, disjoint groups plus the leftover SMs, which carry no co-scheduling or
// performance guarantee (cuda.h, cuDevSmResourceSplitByCount) and so are reported, not handed to a GMI.
struct sm_split {
  int device = 0;
  int total_sms = 0;
  std::vector<CUdevResource> groups;
  CUdevResource leftover{};

  [[nodiscard]] std::size_t size() const noexcept { return groups.size(); }
  [[nodiscard]] int sm_count(std::size_t group) const { return static_cast<int>(groups.at(group).sm.smCount); }
  [[nodiscard]] int leftover_sms() const noexcept {
    return leftover.type == CU_DEV_RESOURCE_TYPE_SM ? static_cast<int>(leftover.sm.smCount) : 0;
  }
};

namespace detail {

// The driver functions green contexts need, looked up once per process.
struct green_api {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetDevResource) device_get_resource = nullptr;
  decltype(&::cuDevSmResourceSplitByCount) split_by_count = nullptr;
  decltype(&::cuDevResourceGenerateDesc) generate_desc = nullptr;
  decltype(&::cuGreenCtxCreate) create = nullptr;
  decltype(&::cuGreenCtxDestroy) destroy = nullptr;
  decltype(&::cuCtxFromGreenCtx) to_context = nullptr;
  decltype(&::cuGreenCtxGetDevResource) get_resource = nullptr;
  decltype(&::cuGreenCtxStreamCreate) stream_create = nullptr;
  decltype(&::cuStreamDestroy) stream_destroy = nullptr;
  decltype(&::cuStreamSynchronize) stream_synchronize = nullptr;
  decltype(&::cuStreamQuery) stream_query = nullptr;
  decltype(&::cuCtxSetCurrent) set_current = nullptr;
  decltype(&::cuCtxGetCurrent) get_current = nullptr;
  std::string missing;  // the first symbol not found; empty when all were

  [[nodiscard]] bool complete() const noexcept { return missing.empty(); }
};

inline const green_api& green_driver() {
  static const green_api api = [] {
    green_api a;
    auto load = [&a](auto& fn, const char* name) {
      fn = driver_entry<std::remove_reference_t<decltype(fn)>>(name);
      if (!fn && a.missing.empty()) a.missing = name;
    };
    load(a.init, "cuInit");
    load(a.device_get, "cuDeviceGet");
    load(a.device_get_resource, "cuDeviceGetDevResource");
    load(a.split_by_count, "cuDevSmResourceSplitByCount");
    load(a.generate_desc, "cuDevResourceGenerateDesc");
    load(a.create, "cuGreenCtxCreate");
    load(a.destroy, "cuGreenCtxDestroy");
    load(a.to_context, "cuCtxFromGreenCtx");
    load(a.get_resource, "cuGreenCtxGetDevResource");
    load(a.stream_create, "cuGreenCtxStreamCreate");
    load(a.stream_destroy, "cuStreamDestroy");
    load(a.stream_synchronize, "cuStreamSynchronize");
    load(a.stream_query, "cuStreamQuery");
    load(a.set_current, "cuCtxSetCurrent");
    load(a.get_current, "cuCtxGetCurrent");
    if (a.init) a.init(0);  // idempotent; cuDeviceGet needs it
    return a;
  }();
  return api;
}

// ok when green contexts can be used on `device`, else why not (never throws).
inline status green_available(int device) {
  auto n = device_count();
  if (!n) return n.error();
  if (device < 0 || device >= *n) {
    return status::invalid(gmi::got_need("device", device, "0.." + std::to_string(*n - 1)));
  }
  const green_api& api = green_driver();
  if (!api.complete()) {
    return status::unsupported("green contexts need a driver with " + api.missing +
                               " (CUDA 12.4+ driver); this driver lacks it");
  }
  return status::ok();
}

inline std::string driver_status_text(CUresult r, const char* call) {
  return std::string(call) + ": " + driver_error_text(r);
}

// The guideline of cuda.h (green contexts overview): sm_90+ slices are multiples of 8 SMs, older ones of 2.
// The driver's smCoscheduledAlignment describes the whole device (smCount is a multiple of it: 132 SMs on
// H100/H200), so it can be finer than the slice rule; gmi asks for the stricter of the two.
inline int slice_granularity(int cc_major, int coscheduled_alignment) {
  const int guideline = cc_major >= 9 ? 8 : 2;
  return std::max(guideline, coscheduled_alignment);
}

struct device_sm {
  sm_resource info;
  CUdevResource raw{};
};

// Queries the SM resource without throwing.
inline result<device_sm> try_query_sm(int device) {
  if (status st = green_available(device); !st) return st;
  const green_api& api = green_driver();
  CUdevice dev{};
  if (CUresult r = api.device_get(&dev, device); r != CUDA_SUCCESS) {
    return status::failed(driver_status_text(r, "cuDeviceGet"));
  }
  device_sm out;
  if (CUresult r = api.device_get_resource(dev, &out.raw, CU_DEV_RESOURCE_TYPE_SM); r != CUDA_SUCCESS) {
    return status::failed(driver_status_text(r, "cuDeviceGetDevResource(SM)"));
  }
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    cudaGetLastError();
    return status::failed("cudaDeviceGetAttribute(compute capability) failed for device " + std::to_string(device));
  }
  out.info.device = device;
  out.info.sm_count = static_cast<int>(out.raw.sm.smCount);
  out.info.min_partition_size = static_cast<int>(out.raw.sm.minSmPartitionSize);
  out.info.coscheduled_alignment = static_cast<int>(out.raw.sm.smCoscheduledAlignment);
  out.info.granularity = slice_granularity(major, out.info.coscheduled_alignment);
  out.info.cc_major = major;
  out.info.cc_minor = minor;
  return out;
}

[[noreturn]] inline void throw_status(const status& st, std::source_location where) {
  if (st.value() == status::code::invalid) throw gmi::config_error(st.message(), where);
  const int code = st.value() == status::code::unavailable   ? CUDA_ERROR_NO_DEVICE
                   : st.value() == status::code::unsupported ? CUDA_ERROR_NOT_SUPPORTED
                                                             : CUDA_ERROR_UNKNOWN;
  throw gmi::cuda_error(code, st.message(), where);
}

// Checks a split request against the queried resource; with the driver's dry run when `dry_run` is set.
inline status check_split(const device_sm& d, int groups, int min_sms, unsigned flags, bool dry_run) {
  const sm_resource& r = d.info;
  const std::string rule = "minimum slice " + std::to_string(std::max(r.min_partition_size, r.granularity)) +
                           " SMs in multiples of " + std::to_string(r.granularity);
  if (groups < 1) return status::invalid(gmi::got_need("groups", groups, ">= 1"));
  if (min_sms < 1) return status::invalid(gmi::got_need("min_sms_per_group", min_sms, ">= 1; " + rule));
  const bool coscheduled = (flags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING) == 0;
  if (coscheduled && (min_sms < r.min_partition_size || min_sms % r.granularity != 0)) {
    return status::invalid(gmi::got_need("min_sms_per_group", min_sms,
                                         rule + " (device " + std::to_string(r.device) + ", sm_" +
                                             std::to_string(r.cc_major) + std::to_string(r.cc_minor) + ")"));
  }
  const long long wanted = static_cast<long long>(groups) * min_sms;
  if (wanted > r.sm_count) {
    return status::invalid("groups x min_sms: got " + std::to_string(groups) + " x " + std::to_string(min_sms) +
                           " = " + std::to_string(wanted) + " SMs, need <= " + std::to_string(r.sm_count) +
                           " SMs of device " + std::to_string(r.device) + "; " + rule);
  }
  if (dry_run) {
    // Cluster and alignment rules can leave fewer groups than the plain division suggests: ask the driver.
    unsigned possible = static_cast<unsigned>(groups);
    const CUresult e = green_driver().split_by_count(nullptr, &possible, &d.raw, nullptr, flags,
                                                     static_cast<unsigned>(min_sms));
    if (e != CUDA_SUCCESS) return status::failed(driver_status_text(e, "cuDevSmResourceSplitByCount (dry run)"));
    if (possible < static_cast<unsigned>(groups)) {
      return status::invalid("groups: got " + std::to_string(groups) + " of >= " + std::to_string(min_sms) +
                             " SMs, need <= " + std::to_string(possible) + ": the driver can make only " +
                             std::to_string(possible) + " such groups from the " + std::to_string(r.sm_count) +
                             " SMs of device " + std::to_string(r.device) + "; " + rule);
    }
  }
  return status::ok();
}

}  // namespace detail
// Shared with partition::green_context and plan::explore: whether green contexts work here, the SM slice step.
using detail::green_available;
using detail::slice_granularity;
using detail::try_query_sm;

// The SM resource of `device` (throws cuda_error without a driver or device, config_error for a bad ordinal).
[[nodiscard]] inline sm_resource query_sm_resource(int device,
                                                   std::source_location where = std::source_location::current()) {
  auto d = detail::try_query_sm(device);
  if (!d) detail::throw_status(d.error(), where);
  return d->info;
}

// Whether `device` can be split into `groups` slices of at least `min_sms` SMs; never throws, and says why not
// (no driver, no device, bad sizes, too many groups).
[[nodiscard]] inline status can_split(int device, int groups, int min_sms, split_flags flags = split_flags::none) {
  try {
    auto d = detail::try_query_sm(device);
    if (!d) return d.error();
    return detail::check_split(*d, groups, min_sms, static_cast<unsigned>(flags), true);
  } catch (const std::exception& e) {  // e.g. bad_alloc while formatting: still a status, never a throw
    return status::failed(e.what());
  }
}

// Splits the SMs of `device` into `groups` equal, disjoint slices of at least `min_sms` SMs each (rounded up by
// the driver). Throws config_error for requests that can not be met (the message says which limit), cuda_error
// without a driver or device.
[[nodiscard]] inline sm_split split_sm(int device, int groups, int min_sms, split_flags flags = split_flags::none,
                                       std::source_location where = std::source_location::current()) {
  auto d = detail::try_query_sm(device);
  if (!d) detail::throw_status(d.error(), where);
  const unsigned f = static_cast<unsigned>(flags);
  if (status st = detail::check_split(*d, groups, min_sms, f, false); !st) detail::throw_status(st, where);
  sm_split out;
  out.device = device;
  out.total_sms = d->info.sm_count;
  out.groups.resize(static_cast<std::size_t>(groups));
  unsigned made = static_cast<unsigned>(groups);
  GMI_CUDA_TRY(detail::green_driver().split_by_count(out.groups.data(), &made, &d->raw, &out.leftover, f,
                                                     static_cast<unsigned>(min_sms)));
  if (made < static_cast<unsigned>(groups)) {
    throw gmi::config_error("groups: got " + std::to_string(groups) + " of >= " + std::to_string(min_sms) +
                                " SMs, need <= " + std::to_string(made) + ": the driver made only " +
                                std::to_string(made) + " such groups from the " + std::to_string(out.total_sms) +
                                " SMs of device " + std::to_string(device),
                            where);
  }
  return out;
}

// A green context: a context limited to the SMs of its resources. Owns the CUgreenCtx; the streams made from it
// (green_stream) must be destroyed first, since cuGreenCtxDestroy leaves them behind.
// Like any driver context it may be used by one thread at a time (no internal locking, cuda.h).
class green_context {
 public:
  // One group of a split.
  green_context(const sm_split& split, std::size_t group)
      : green_context(split.device, std::span<const CUdevResource>(&split.groups.at(group), 1)) {}

  // Several groups of the same split merged into one larger slice.
  green_context(const sm_split& split, std::span<const std::size_t> groups) : device_(split.device) {
    std::vector<CUdevResource> chosen;
    chosen.reserve(groups.size());
    for (std::size_t g : groups) {
      gmi::require(g < split.groups.size(), "green_context group index", g,
                   "< " + std::to_string(split.groups.size()) + " (groups in the split)");
      chosen.push_back(split.groups[g]);
    }
    create(chosen);
  }

  // Any SM resources of one device that came from one split (cuDevResourceGenerateDesc's rule).
  green_context(int device, std::span<const CUdevResource> resources) : device_(device) {
    create(std::vector<CUdevResource>(resources.begin(), resources.end()));
  }

  green_context(const green_context&) = delete;
  green_context& operator=(const green_context&) = delete;
  green_context(green_context&& o) noexcept
      : handle_(std::exchange(o.handle_, nullptr)),
        context_(std::exchange(o.context_, nullptr)),
        device_(o.device_),
        sm_count_(std::exchange(o.sm_count_, 0)) {}
  green_context& operator=(green_context&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, nullptr);
      context_ = std::exchange(o.context_, nullptr);
      device_ = o.device_;
      sm_count_ = std::exchange(o.sm_count_, 0);
    }
    return *this;
  }
  ~green_context() { reset(); }

  [[nodiscard]] CUgreenCtx get() const noexcept { return handle_; }
  // The CUcontext view (cuCtxFromGreenCtx): the primary context restricted to this slice. Owned by the green
  // context; never destroy it.
  [[nodiscard]] CUcontext as_context() const noexcept { return context_; }
  [[nodiscard]] int device() const noexcept { return device_; }
  // SMs of this slice, as the driver reports them for the created context.
  [[nodiscard]] int sm_count() const noexcept { return sm_count_; }

  // Makes this slice the calling thread's current context, so runtime calls (cudaMalloc, <<<>>> on a green
  // stream) work under it. Any cudaSetDevice (NCCL calls it) makes the primary context current again:
  // call this again after such calls.
  void make_current() const { GMI_CUDA_TRY(detail::green_driver().set_current(context_)); }

 private:
  void create(std::vector<CUdevResource> resources) {
    gmi::require(!resources.empty(), "green_context resources", resources.size(), ">= 1");
    if (status st = detail::green_available(device_); !st) detail::throw_status(st, std::source_location::current());
    const auto& api = detail::green_driver();
    CUdevice dev{};
    GMI_CUDA_TRY(api.device_get(&dev, device_));
    CUdevResourceDesc desc = nullptr;
    GMI_CUDA_TRY(api.generate_desc(&desc, resources.data(), static_cast<unsigned>(resources.size())));
    GMI_CUDA_TRY(api.create(&handle_, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    try {
      GMI_CUDA_TRY(api.to_context(&context_, handle_));
      CUdevResource mine{};
      GMI_CUDA_TRY(api.get_resource(handle_, &mine, CU_DEV_RESOURCE_TYPE_SM));
      sm_count_ = static_cast<int>(mine.sm.smCount);
    } catch (...) {
      reset();
      throw;
    }
  }
  void reset() noexcept {
    if (handle_) detail::green_driver().destroy(handle_);
    handle_ = nullptr;
    context_ = nullptr;
    sm_count_ = 0;
  }

  CUgreenCtx handle_ = nullptr;
  CUcontext context_ = nullptr;
  int device_ = 0;
  int sm_count_ = 0;
};

// Makes a green context current for a scope and restores the thread's previous context on exit.
class scoped_current {
 public:
  explicit scoped_current(const green_context& g) {
    GMI_CUDA_TRY(detail::green_driver().get_current(&previous_));
    g.make_current();
  }
  scoped_current(const scoped_current&) = delete;
  scoped_current& operator=(const scoped_current&) = delete;
  ~scoped_current() { detail::green_driver().set_current(previous_); }

 private:
  CUcontext previous_ = nullptr;
};

// A non-blocking stream whose kernels run only on the SMs of its green context (cuGreenCtxStreamCreate).
// Usable wherever a cudaStream_t is (CUstream and cudaStream_t are one type). Destroy it before its context.
class green_stream {
 public:
  // priority: lower is higher, clamped by the driver to cuCtxGetStreamPriorityRange.
  explicit green_stream(const green_context& g, int priority = 0) {
    gmi::require(g.get() != nullptr, "green_stream context", "an empty (moved-from) green_context",
                 "a live green_context");
    GMI_CUDA_TRY(detail::green_driver().stream_create(&handle_, g.get(), CU_STREAM_NON_BLOCKING, priority));
  }
  green_stream(const green_stream&) = delete;
  green_stream& operator=(const green_stream&) = delete;
  green_stream(green_stream&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  green_stream& operator=(green_stream&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  ~green_stream() { reset(); }

  [[nodiscard]] cudaStream_t get() const noexcept { return handle_; }
  operator cudaStream_t() const noexcept { return handle_; }  // NOLINT: a stream is used where a handle is

  void synchronize() const { GMI_CUDA_TRY(detail::green_driver().stream_synchronize(handle_)); }
  // true when all work queued so far has finished (never blocks).
  [[nodiscard]] bool ready() const {
    const CUresult r = detail::green_driver().stream_query(handle_);
    if (r == CUDA_ERROR_NOT_READY) return false;
    GMI_CUDA_TRY(r);
    return true;
  }

 private:
  void reset() noexcept {
    if (handle_) detail::green_driver().stream_destroy(handle_);
    handle_ = nullptr;
  }
  CUstream handle_ = nullptr;
};

}  // namespace gmi::cuda

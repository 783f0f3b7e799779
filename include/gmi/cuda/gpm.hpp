#pragma once
// GPU Performance Monitoring (NVML GPM, Hopper and newer): how busy the SMs really were between two samples.
// NVML's classic "GPU utilization" only says whether any kernel ran during its sample period (100% for one
// warp on one SM), so it can not tell a latency-bound single instance from a full GPU. GPM's SM activity
// (share of SM cycles with at least one warp resident) and SM occupancy (resident warps over the maximum) can.
// Loaded through the same libnvidia-ml.so.1 as nvml.hpp; every failure is a status, never an exception.
// GPM calls are serialized process-wide: on 4 x H200 two threads in nvmlGpmMetricsGet at once (the
// slice-0 GMIs of two GPUs) crashed inside libnvidia-ml with SIGSEGV every time.

#include <dlfcn.h>

#include <memory>
#include <mutex>
#include <string>

#include <gmi/core/status.hpp>
#include <gmi/cuda/nvml.hpp>

namespace gmi::cuda::gpm {

// Between two samples, in percent (0..100).
struct activity {
  double sm_active = 0;     // NVML_GPM_METRIC_SM_UTIL
  double sm_occupancy = 0;  // NVML_GPM_METRIC_SM_OCCUPANCY
};

namespace detail {

// Hand-declared subset of nvml.h's GPM API (metric ids and struct layouts as in NVIDIA/go-nvml gen/nvml/nvml.h).
using sample_t = struct gpm_sample_st*;  // nvmlGpmSample_t
inline constexpr unsigned metric_sm_util = 2;       // NVML_GPM_METRIC_SM_UTIL
inline constexpr unsigned metric_sm_occupancy = 3;  // NVML_GPM_METRIC_SM_OCCUPANCY
inline constexpr unsigned metrics_get_version = 1;  // NVML_GPM_METRICS_GET_VERSION
inline constexpr unsigned support_version = 1;      // NVML_GPM_SUPPORT_VERSION
// The array's capacity only bounds numMetrics; NVML reads numMetrics entries. 2 is all we ask for, but the
// header's NVML_GPM_METRIC_MAX has grown between drivers, so leave generous room.
inline constexpr unsigned metric_capacity = 512;

struct metric_t {  // nvmlGpmMetric_t
  unsigned metricId;
  nvml::detail::return_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};
struct metrics_get_t {  // nvmlGpmMetricsGet_t
  unsigned version;
  unsigned numMetrics;
  sample_t sample1;
  sample_t sample2;
  metric_t metrics[metric_capacity];
};
struct support_t {  // nvmlGpmSupport_t
  unsigned version;
  unsigned isSupportedDevice;
};

struct functions {
  nvml::detail::return_t (*query_support)(nvml::detail::device_t, support_t*) = nullptr;  // nvmlGpmQueryDeviceSupport
  nvml::detail::return_t (*alloc)(sample_t*) = nullptr;                                   // nvmlGpmSampleAlloc
  nvml::detail::return_t (*free)(sample_t) = nullptr;                                     // nvmlGpmSampleFree
  nvml::detail::return_t (*get)(nvml::detail::device_t, sample_t) = nullptr;              // nvmlGpmSampleGet
  nvml::detail::return_t (*metrics)(metrics_get_t*) = nullptr;                            // nvmlGpmMetricsGet
};

// Held around every GPM call of this process (see the top of this file).
inline std::mutex& call_mutex() {
  static std::mutex m;
  return m;
}

// Looked up once; the library handle stays open until exit (like nvml::library).
inline const functions& fn() {
  static const functions f = [] {
    functions out;
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return out;
    auto load = [h](auto& p, const char* name) { p = reinterpret_cast<std::remove_reference_t<decltype(p)>>(dlsym(h, name)); };
    load(out.query_support, "nvmlGpmQueryDeviceSupport");
    load(out.alloc, "nvmlGpmSampleAlloc");
    load(out.free, "nvmlGpmSampleFree");
    load(out.get, "nvmlGpmSampleGet");
    load(out.metrics, "nvmlGpmMetricsGet");
    return out;
  }();
  return f;
}

}  // namespace detail

// Samples one GPU (NVML index): start() takes the first sample, finish() the second and returns the activity
// between them. Keep the two at least ~100 ms apart for a meaningful average.
class sampler {
 public:
  explicit sampler(int nvml_index) : index_(nvml_index) {}
  sampler(const sampler&) = delete;
  sampler& operator=(const sampler&) = delete;
  ~sampler() {
    const auto& f = detail::fn();
    const std::lock_guard lock(detail::call_mutex());
    if (f.free) {
      if (first_) f.free(first_);
      if (second_) f.free(second_);
    }
  }

  // ok, or why GPM can not be used on this GPU (no driver, pre-Hopper GPU, old driver, no permission).
  [[nodiscard]] gmi::status start() {
    auto d = nvml::detail::handle(index_);
    if (!d) return d.error();
    device_ = *d;
    const auto& f = detail::fn();
    if (!f.query_support || !f.alloc || !f.free || !f.get || !f.metrics) {
      return gmi::status::unsupported("libnvidia-ml.so.1 lacks the GPM API (nvmlGpm*; driver older than 520)");
    }
    const std::lock_guard lock(detail::call_mutex());
    detail::support_t s{detail::support_version, 0};
    if (const auto r = f.query_support(device_, &s); r != nvml::detail::NVML_SUCCESS) {
      return nvml::library::instance().to_status(r, "nvmlGpmQueryDeviceSupport");
    }
    if (!s.isSupportedDevice) return gmi::status::unsupported("GPM: not supported on this GPU (Hopper or newer needed)");
    if (!first_ && f.alloc(&first_) != nvml::detail::NVML_SUCCESS) return gmi::status::failed("nvmlGpmSampleAlloc failed");
    if (!second_ && f.alloc(&second_) != nvml::detail::NVML_SUCCESS) return gmi::status::failed("nvmlGpmSampleAlloc failed");
    if (const auto r = f.get(device_, first_); r != nvml::detail::NVML_SUCCESS) {
      return nvml::library::instance().to_status(r, "nvmlGpmSampleGet");
    }
    started_ = true;
    return gmi::status::ok();
  }

  [[nodiscard]] gmi::result<activity> finish() {
    if (!started_) return gmi::status::invalid("GPM sampler: finish() without a successful start()");
    const auto& f = detail::fn();
    const std::lock_guard lock(detail::call_mutex());
    if (const auto r = f.get(device_, second_); r != nvml::detail::NVML_SUCCESS) {
      return nvml::library::instance().to_status(r, "nvmlGpmSampleGet");
    }
    auto m = std::make_unique<detail::metrics_get_t>();
    m->version = detail::metrics_get_version;
    m->numMetrics = 2;
    m->sample1 = first_;
    m->sample2 = second_;
    m->metrics[0].metricId = detail::metric_sm_util;
    m->metrics[1].metricId = detail::metric_sm_occupancy;
    if (const auto r = f.metrics(m.get()); r != nvml::detail::NVML_SUCCESS) {
      return nvml::library::instance().to_status(r, "nvmlGpmMetricsGet");
    }
    for (unsigned i = 0; i < 2; ++i) {
      if (m->metrics[i].nvmlReturn != nvml::detail::NVML_SUCCESS) {
        return nvml::library::instance().to_status(m->metrics[i].nvmlReturn, "nvmlGpmMetricsGet (metric)");
      }
    }
    started_ = false;
    return activity{m->metrics[0].value, m->metrics[1].value};
  }

 private:
  int index_;
  nvml::detail::device_t device_ = nullptr;
  detail::sample_t first_ = nullptr;
  detail::sample_t second_ = nullptr;
  bool started_ = false;
};

}  // namespace gmi::cuda::gpm

#pragma once
// GPU utilization beside throughput: GPM SM activity and occupancy (cuda/gpm.hpp) over a run's measured window,
// sampled by the GMI of slice 0 on each GPU (one sampler a GPU, whatever its GMIs), and their mean over the GPUs
// in the launcher. Serving windows and synchronous training both report it; a GPU without GPM (pre-Hopper, no
// driver, no permission) gives a note instead of a figure, never an error.

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include <gmi/cuda/gpm.hpp>

namespace gmi {

struct sm_activity {
  std::optional<double> active, occupancy;  // percent over the window
  std::string note;                         // why there is no figure (empty on slices other than 0)
};

// JSON keys sm_active_pct, sm_occupancy_pct, gpm_note: absent when unset.
inline void put_sm_activity(nlohmann::json& j, const sm_activity& a) {
  if (a.active) j["sm_active_pct"] = *a.active;
  if (a.occupancy) j["sm_occupancy_pct"] = *a.occupancy;
  if (!a.note.empty()) j["gpm_note"] = a.note;
}
[[nodiscard]] inline sm_activity get_sm_activity(const nlohmann::json& j) {
  sm_activity a;
  if (j.contains("sm_active_pct")) a.active = j["sm_active_pct"].get<double>();
  if (j.contains("sm_occupancy_pct")) a.occupancy = j["sm_occupancy_pct"].get<double>();
  if (j.contains("gpm_note")) a.note = j["gpm_note"].get<std::string>();
  return a;
}

// Slice 0's sampler over one window: start() when it opens, finish() when it closes. Other slices sample nothing
// and finish() gives them an empty sm_activity.
class sm_activity_window {
 public:
  sm_activity_window(int slice, int nvml_index) {
    if (slice != 0) return;
    if (nvml_index < 0) {
      result_.note = "no NVML index for this device";
    } else {
      sampler_.emplace(nvml_index);
    }
  }

  void start() {
    if (!sampler_ || started_) return;
    if (const gmi::status st = sampler_->start(); !st) {
      result_.note = st.message();
      sampler_.reset();
      return;
    }
    started_ = true;
    opened_ = std::chrono::steady_clock::now();
  }

  // The window's figure (once; a window that never started gives a note).
  [[nodiscard]] sm_activity finish() {
    if (sampler_ && !started_) {
      result_.note = "the measured window never opened";
      sampler_.reset();
    }
    if (sampler_) {
      // GPM needs a window of some length: a very short run reads 0% (docs/architecture.md).
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - opened_).count();
      if (seconds < min_window_seconds) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "a window of %.2f s is too short for GPM (>= %.1f s)", seconds, min_window_seconds);
        result_.note = buf;
        sampler_.reset();
        return result_;
      }
      if (auto a = sampler_->finish()) {
        result_.active = a->sm_active;
        result_.occupancy = a->sm_occupancy;
      } else {
        result_.note = a.error().message();
      }
      sampler_.reset();
    }
    return result_;
  }

 private:
  static constexpr double min_window_seconds = 0.5;
  std::optional<cuda::gpm::sampler> sampler_;
  bool started_ = false;
  std::chrono::steady_clock::time_point opened_;
  sm_activity result_;
};

// The launcher's figure: the mean over the GPUs that have one; with none, the first GPU's note.
class sm_activity_mean {
 public:
  void add(const sm_activity& a) {
    if (a.active) {
      active_ += *a.active;
      occupancy_ += a.occupancy.value_or(0);
      ++gpus_;
    } else if (!a.note.empty() && note_.empty()) {
      note_ = a.note;
    }
  }
  [[nodiscard]] sm_activity mean() const {
    sm_activity m;
    if (gpus_ > 0) {
      m.active = active_ / gpus_;
      m.occupancy = occupancy_ / gpus_;
    } else {
      m.note = note_;
    }
    return m;
  }
  [[nodiscard]] int gpus() const noexcept { return gpus_; }

 private:
  double active_ = 0, occupancy_ = 0;
  int gpus_ = 0;
  std::string note_;
};

// "SM activity 80%, occupancy 40% (GPM)", "GPM n/a: <why>" or "GPM n/a".
[[nodiscard]] inline std::string sm_activity_text(const sm_activity& a) {
  if (a.active) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "SM activity %.0f%%, occupancy %.0f%% (GPM)", *a.active, a.occupancy.value_or(0));
    return buf;
  }
  return a.note.empty() ? "GPM n/a" : "GPM n/a: " + a.note;
}

}  // namespace gmi

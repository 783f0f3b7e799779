#pragma once
// partition::green_context: hard SM slices of each GPU inside one process (driver-API green contexts), GMIs as
// threads. The session splits each GPU into gmis_per_gpu equal slices (multiples of the device's slice step;
// leftover SMs are reported, never given out); each GMI thread makes a binding: its green context current and
// its green stream, on which every launch of that GMI goes (cuda-notes section 2).

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/status.hpp>
#include <gmi/cuda/device.hpp>
#include <gmi/cuda/green_context.hpp>
#include <gmi/partition/none.hpp>

namespace gmi::partition {

struct green_context {
  using partition_concept = partition_tag;
  static constexpr const char* name = "green_context";

  struct config {
    std::vector<int> gpus{0};
    int gmis_per_gpu = 1;
    int sms_per_gmi = 0;  // 0: the largest slice that gives every GMI one
  };

  // The largest slice size (a multiple of the device's step) that `groups` slices of `device` can have;
  // 0 when none (the status then says why).
  static int largest_slice(int device, int groups, gmi::status* why = nullptr) {
    auto r = gmi::cuda::try_query_sm(device);
    if (!r) {
      if (why) *why = r.error();
      return 0;
    }
    const auto& info = r->info;
    const int step = std::max(1, info.granularity);
    gmi::status last = gmi::status::ok();
    for (int sms = info.sm_count / std::max(1, groups) / step * step; sms >= std::max(step, info.min_partition_size);
         sms -= step) {
      last = gmi::cuda::can_split(device, groups, sms);
      if (last) return sms;
    }
    if (why) {
      *why = gmi::status::invalid(gmi::got_need("gmis_per_gpu", groups,
                                                "<= " + std::to_string(info.sm_count / std::max(step, info.min_partition_size)) +
                                                    " on device " + std::to_string(device) + " (" +
                                                    std::to_string(info.sm_count) + " SMs, minimum slice " +
                                                    std::to_string(std::max(step, info.min_partition_size)) +
                                                    " SMs in multiples of " + std::to_string(step) + ")"));
    }
    return 0;
  }

  // Never throws: no driver, no device, too many GMIs for the minimum slice, a bad slice size.
  static gmi::status can_implement(const config& c) noexcept {
    try {
      if (c.gmis_per_gpu < 1) return gmi::status::invalid(gmi::got_need("gmis_per_gpu", c.gmis_per_gpu, ">= 1"));
      if (c.gpus.empty()) return gmi::status::invalid(gmi::got_need("gpus", "none", "at least one GPU"));
      for (int g : c.gpus) {
        if (gmi::status st = gmi::cuda::green_available(g); !st) return st;
        if (c.sms_per_gmi > 0) {
          if (gmi::status st = gmi::cuda::can_split(g, c.gmis_per_gpu, c.sms_per_gmi); !st) return st;
        } else {
          gmi::status why;
          if (largest_slice(g, c.gmis_per_gpu, &why) == 0) return why;
        }
      }
      return gmi::status::ok();
    } catch (const std::exception& e) {
      return gmi::status::failed(e.what());
    }
  }
  static gmi::status can_implement(int gmis_per_gpu) noexcept {
    config c;
    c.gmis_per_gpu = gmis_per_gpu;
    return can_implement(c);
  }

  // The slices of every GPU of a run. Create it in the launcher thread before the GMI threads start.
  class session {
   public:
    explicit session(config c) : cfg_(std::move(c)) {
      gmi::throw_unless_ok(can_implement(cfg_));
      for (int g : cfg_.gpus) {
        const int sms = cfg_.sms_per_gmi > 0 ? cfg_.sms_per_gmi : largest_slice(g, cfg_.gmis_per_gpu);
        splits_.push_back(gmi::cuda::split_sm(g, cfg_.gmis_per_gpu, sms));
      }
    }
    [[nodiscard]] const config& settings() const noexcept { return cfg_; }
    [[nodiscard]] const gmi::cuda::sm_split& split(int gpu) const {
      for (const auto& s : splits_) {
        if (s.device == gpu) return s;
      }
      throw gmi::config_error(gmi::got_need("green_context gpu", gpu, "one of the session's GPUs"));
    }
    [[nodiscard]] int slice_sms(int gpu) const { return split(gpu).sm_count(0); }
    // SMs no GMI gets (no co-scheduling or performance guarantee from the driver).
    [[nodiscard]] int leftover_sms(int gpu) const { return split(gpu).leftover_sms(); }
    // "GPU 0: 4 slices of 32 SMs, 4 SMs left over of 132"
    [[nodiscard]] std::string describe() const {
      std::string out;
      for (const auto& s : splits_) {
        if (!out.empty()) out += "; ";
        out += "GPU " + std::to_string(s.device) + ": " + std::to_string(s.size()) + " slices of " +
               std::to_string(s.sm_count(0)) + " SMs, " + std::to_string(s.leftover_sms()) + " SMs left over of " +
               std::to_string(s.total_sms);
      }
      return out;
    }

   private:
    config cfg_;
    std::vector<gmi::cuda::sm_split> splits_;
  };

  // A GMI thread's hold on its slice: the green context (current on this thread while the binding lives) and its
  // green stream. Make it on the GMI's own thread; launch only on stream() (never the default stream, which runs
  // on the primary context and every SM).
  class binding {
   public:
    binding(const session& s, int gpu, int slice)
        : context_(s.split(gpu), static_cast<std::size_t>(slice)), stream_(context_), current_(context_) {}
    binding(const binding&) = delete;
    binding& operator=(const binding&) = delete;

    [[nodiscard]] const gmi::cuda::green_context& context() const noexcept { return context_; }
    [[nodiscard]] const gmi::cuda::green_stream& stream() const noexcept { return stream_; }
    [[nodiscard]] int sm_count() const noexcept { return context_.sm_count(); }
    // After anything that calls cudaSetDevice (NCCL): make the slice current again.
    void reassert() const { context_.make_current(); }

   private:
    gmi::cuda::green_context context_;  // destroyed last: its stream and current-ness go first
    gmi::cuda::green_stream stream_;
    gmi::cuda::scoped_current current_;
  };

  static session create(const config& c) { return session(c); }
};

}  // namespace gmi::partition

#pragma once
// partition::mig: attach only. Discovers existing MIG instances through read-only NVML and binds one GMI process
// to each (CUDA_VISIBLE_DEVICES=MIG-<uuid>). It never enables MIG or creates/destroys instances: when a layout
// needs instances that do not exist, can_implement prints the profile plan for an administrator to apply.

#include <string>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/status.hpp>
#include <gmi/cuda/nvml.hpp>
#include <gmi/partition/none.hpp>

namespace gmi::partition {

struct mig {
  using partition_concept = partition_tag;
  static constexpr const char* name = "mig";
  static constexpr int max_instances_per_gpu = 7;  // 7 compute slices on A100/H100/H200

  struct config {
    std::vector<int> gpus{0};  // NVML indices
    int gmis_per_gpu = 1;
  };

  // One row of the MIG profile table (cuda-notes section 3).
  struct profile {
    const char* h100;  // H100 80GB name
    const char* h200;  // H200 141GB name
    int max_instances;
    int sms;  // expected
  };
  static constexpr profile profiles[] = {
      {"7g.80gb", "7g.141gb", 1, 132}, {"4g.40gb", "4g.71gb", 1, 64}, {"3g.40gb", "3g.71gb", 2, 60},
      {"2g.20gb", "2g.35gb", 3, 32},   {"1g.20gb", "1g.35gb", 4, 16}, {"1g.10gb", "1g.18gb", 7, 16},
  };

  // The plan for `gmis` instances on a GPU named `gpu_name` at NVML index `index`: the largest profile that fits
  // `gmis` times, and the nvidia-smi commands an administrator would run. Empty when none fits.
  static std::string plan(const std::string& gpu_name, int index, int gmis) {
    if (gmis < 1 || gmis > max_instances_per_gpu) return {};
    const bool h200 = gpu_name.find("H200") != std::string::npos || gpu_name.find("141") != std::string::npos;
    for (const profile& p : profiles) {
      if (p.max_instances < gmis) continue;
      const std::string prof = h200 ? p.h200 : p.h100;
      std::string list;
      for (int i = 0; i < gmis; ++i) list += (i ? "," : "") + prof;
      const std::string i = std::to_string(index);
      return std::to_string(gmis) + " x " + prof + " (about " + std::to_string(p.sms) +
             " SMs each): nvidia-smi -i " + i + " -mig 1 && nvidia-smi mig -i " + i + " -cgi " + list + " -C";
    }
    return {};
  }

  // Never throws, never mutates. Answers: no NVML, GPU index out of range, MIG unsupported, MIG disabled (with
  // the plan), too few instances (with the plan).
  static gmi::status can_implement(const config& c) noexcept {
    try {
      if (c.gmis_per_gpu < 1 || c.gmis_per_gpu > max_instances_per_gpu) {
        return gmi::status::invalid(gmi::got_need("gmis_per_gpu", c.gmis_per_gpu,
                                                  "1.." + std::to_string(max_instances_per_gpu) +
                                                      " (MIG instances per GPU)"));
      }
      const auto& lib = gmi::cuda::nvml::library::instance();
      if (!lib.available()) return lib.availability();
      auto n = gmi::cuda::nvml::device_count();
      if (!n) return n.error();
      for (int g : c.gpus) {
        if (g < 0 || g >= *n) {
          return gmi::status::invalid(gmi::got_need("gpu", g, "0.." + std::to_string(*n - 1) + " (NVML GPUs)"));
        }
        const std::string gpu_name = gmi::cuda::nvml::name(g).value_or("unknown GPU");
        auto mode = gmi::cuda::nvml::mig_mode_of(g);
        if (!mode) {
          return gmi::status::unsupported("MIG is not supported on GPU " + std::to_string(g) + " (" + gpu_name +
                                          "): " + mode.error().message());
        }
        const std::string how = plan(gpu_name, g, c.gmis_per_gpu);
        if (!mode->current) {
          return gmi::status::unavailable("MIG is disabled on GPU " + std::to_string(g) + " (" + gpu_name +
                                          "); an administrator must enable it and create instances: " + how);
        }
        auto devices = gmi::cuda::nvml::mig_devices(g);
        if (!devices) return devices.error();
        if (static_cast<int>(devices->size()) < c.gmis_per_gpu) {
          return gmi::status::unavailable("GPU " + std::to_string(g) + " (" + gpu_name + ") has " +
                                          std::to_string(devices->size()) + " MIG instances, need " +
                                          std::to_string(c.gmis_per_gpu) + "; an administrator could create: " + how);
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

  // The instances a run binds to: per GPU of the config, its first gmis_per_gpu MIG devices.
  class session {
   public:
    explicit session(config c) : cfg_(std::move(c)) {
      gmi::throw_unless_ok(can_implement(cfg_));
      for (int g : cfg_.gpus) {
        auto d = gmi::cuda::nvml::mig_devices(g).value();
        d.resize(static_cast<std::size_t>(cfg_.gmis_per_gpu));
        instances_.emplace_back(g, std::move(d));
      }
    }
    [[nodiscard]] const gmi::cuda::nvml::mig_device& instance(int gpu, int slice) const {
      for (const auto& [g, d] : instances_) {
        if (g == gpu) return d.at(static_cast<std::size_t>(slice));
      }
      throw gmi::config_error(gmi::got_need("MIG gpu", gpu, "one of the session's GPUs"));
    }
    // The environment that binds a GMI process to its instance (its local ordinal is then 0).
    [[nodiscard]] std::vector<std::pair<std::string, std::string>> client_env(int gpu, int slice) const {
      return {{"CUDA_VISIBLE_DEVICES", instance(gpu, slice).uuid}};
    }

   private:
    config cfg_;
    std::vector<std::pair<int, std::vector<gmi::cuda::nvml::mig_device>>> instances_;
  };
};

}  // namespace gmi::partition

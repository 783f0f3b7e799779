#pragma once
// The channel's dispense stage: a time-major rollout cut into packages of package_steps x package_envs
// records (pure logic, tested on its own).

#include <cstddef>
#include <cstdint>
#include <string>

#include <gmi/core/error.hpp>

namespace gmi::comm {

// One package of a rollout: rows = package_steps rows of row_bytes (package_envs records), src_pitch apart.
struct package_region {
  std::uint64_t index;  // position in the rollout, time blocks outermost
  std::uint32_t step0, env0;
  const std::byte* src;
  std::size_t src_pitch, row_bytes;
  std::uint32_t rows;
  [[nodiscard]] std::size_t bytes() const noexcept { return row_bytes * rows; }
  [[nodiscard]] bool contiguous() const noexcept { return rows == 1 || row_bytes == src_pitch; }
};

// Cuts a time-major rollout ([step][env][record]) into packages of package_steps x package_envs records.
// Time blocks go first, so a producer may dispense the first steps of a rollout before the last are written.
class dispenser {
 public:
  dispenser(std::uint32_t record_bytes, std::uint32_t package_steps, std::uint32_t package_envs)
      : record_bytes_(record_bytes), steps_(package_steps), envs_(package_envs) {
    require(record_bytes >= 1 && package_steps >= 1 && package_envs >= 1, "dispenser record/package sizes",
            std::to_string(record_bytes) + "/" + std::to_string(package_steps) + "/" + std::to_string(package_envs),
            "all >= 1");
  }
  // Packages in a rollout of steps x envs; throws config_error unless the package shape divides it.
  [[nodiscard]] std::uint64_t packages(std::uint32_t steps, std::uint32_t envs) const {
    require(steps >= 1 && steps % steps_ == 0, "rollout steps", steps,
            "a positive multiple of package_steps " + std::to_string(steps_));
    require(envs >= 1 && envs % envs_ == 0, "rollout envs", envs,
            "a positive multiple of package_envs " + std::to_string(envs_));
    return std::uint64_t{steps / steps_} * (envs / envs_);
  }
  // Calls fn(package_region) for every package, in order.
  template <class Fn>
  void dispense(const void* rollout, std::uint32_t steps, std::uint32_t envs, Fn&& fn) const {
    const std::uint64_t n = packages(steps, envs);
    const std::size_t pitch = std::size_t{envs} * record_bytes_;
    const std::uint32_t env_blocks = envs / envs_;
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint32_t t0 = static_cast<std::uint32_t>(i / env_blocks) * steps_;
      const std::uint32_t e0 = static_cast<std::uint32_t>(i % env_blocks) * envs_;
      fn(package_region{i, t0, e0,
                        static_cast<const std::byte*>(rollout) + std::size_t{t0} * pitch + std::size_t{e0} * record_bytes_,
                        pitch, std::size_t{envs_} * record_bytes_, steps_});
    }
  }
  [[nodiscard]] std::uint64_t package_bytes() const noexcept { return std::uint64_t{record_bytes_} * steps_ * envs_; }

 private:
  std::uint32_t record_bytes_, steps_, envs_;
};

}  // namespace gmi::comm

#pragma once
// Reference experience for the channel tests: every 32-bit word of every record says which producer, rollout,
// step, env and word it is, so a consumer can check each package it receives against where it came from.
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <dirent.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace gmi_test {

inline std::uint32_t record_word(std::uint32_t producer, std::uint64_t rollout, std::uint32_t step, std::uint32_t env,
                                 std::uint32_t word) {
  std::uint64_t x = (std::uint64_t{producer} << 56) ^ (rollout << 40) ^ (std::uint64_t{step} << 24) ^
                    (std::uint64_t{env} << 8) ^ word;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 29;
  return static_cast<std::uint32_t>(x);
}

// A time-major rollout [steps][envs][record_bytes / 4 words].
inline std::vector<std::uint32_t> make_rollout(std::uint32_t producer, std::uint64_t rollout, std::uint32_t steps,
                                               std::uint32_t envs, std::uint32_t record_bytes) {
  const std::uint32_t words = record_bytes / 4;
  std::vector<std::uint32_t> v(std::size_t{steps} * envs * words);
  for (std::uint32_t t = 0; t < steps; ++t)
    for (std::uint32_t e = 0; e < envs; ++e)
      for (std::uint32_t w = 0; w < words; ++w) v[(std::size_t{t} * envs + e) * words + w] = record_word(producer, rollout, t, e, w);
  return v;
}

struct geometry {
  std::uint32_t steps, envs, record_bytes, package_steps, package_envs;
  [[nodiscard]] std::uint64_t packages_per_rollout() const {
    return std::uint64_t{steps / package_steps} * (envs / package_envs);
  }
  [[nodiscard]] std::size_t package_bytes() const { return std::size_t{record_bytes} * package_steps * package_envs; }
};

// Wrong words in one package (time-major [package_steps][package_envs][words]) with running index `index` of `producer`.
inline std::size_t check_package(const geometry& g, const std::uint32_t* p, std::uint32_t producer, std::uint64_t index) {
  const std::uint64_t per = g.packages_per_rollout();
  const std::uint64_t rollout = index / per, i = index % per;
  const std::uint32_t env_blocks = g.envs / g.package_envs;
  const auto t0 = static_cast<std::uint32_t>(i / env_blocks) * g.package_steps;
  const auto e0 = static_cast<std::uint32_t>(i % env_blocks) * g.package_envs;
  const std::uint32_t words = g.record_bytes / 4;
  std::size_t wrong = 0;
  for (std::uint32_t t = 0; t < g.package_steps; ++t)
    for (std::uint32_t e = 0; e < g.package_envs; ++e)
      for (std::uint32_t w = 0; w < words; ++w)
        wrong += *p++ != record_word(producer, rollout, t0 + t, e0 + e, w);
  return wrong;
}

// Names in /dev/shm that belong to this user's gmi segments with this tag prefix (leak checks).
inline int segments_with(const std::string& tag) {
  const std::string prefix = "gmi-" + std::to_string(::getuid()) + "-" + tag;
  int n = 0;
  if (DIR* d = ::opendir("/dev/shm")) {
    while (const dirent* e = ::readdir(d)) n += std::string(e->d_name).rfind(prefix, 0) == 0;
    ::closedir(d);
  }
  return n;
}

}  // namespace gmi_test

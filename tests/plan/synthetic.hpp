#pragma once
// Synthetic machines, clocks and throughput/memory models for the plan tests: every number a test asserts follows
// from these formulas (the expected visit sequences were computed by an independent re-implementation).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gmi/plan/explorer.hpp>

namespace gmi_test {

inline constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

// `gpus` identical GPUs with `memory` bytes each, all pairs over NVLink.
inline gmi::plan::topology fake_topology(int gpus, std::uint64_t memory, std::string name = "NVIDIA H100 80GB HBM3") {
  gmi::plan::topology t;
  t.host = "test-host";
  t.driver = "580.00";
  for (int i = 0; i < gpus; ++i) {
    gmi::plan::gpu_info g;
    g.cuda_ordinal = i;
    g.nvml_index = i;
    g.name = name;
    g.uuid = "GPU-0000000" + std::to_string(i);
    g.sm_count = 132;
    g.cc_major = 9;
    g.memory_bytes = memory;
    t.gpus.push_back(g);
  }
  for (int a = 0; a < gpus; ++a) {
    for (int b = a + 1; b < gpus; ++b) t.links.push_back({a, b, gmi::plan::link_kind::nvlink, "SYS", true, ""});
  }
  t.cpu_cores = {0, 1, 2, 3};
  return t;
}

// A clock the trials advance: deterministic budgets.
struct fake_clock {
  double now = 1000;
  std::function<double()> fn() {
    return [this] { return now; };
  }
};

// Records each candidate it is asked for, answers from `model`, advances `clock` by `seconds` per trial.
struct recording_trial {
  std::function<gmi::plan::trial_result(const gmi::plan::candidate&)> model;
  fake_clock* clock = nullptr;
  double seconds = 1;
  std::vector<std::pair<int, int>> visits;  // (gmis_per_gpu, envs_per_gmi)

  gmi::plan::trial_function fn() {
    return [this](const gmi::plan::candidate& c) {
      visits.emplace_back(c.gmis_per_gpu, c.envs_per_gmi);
      if (clock) clock->now += seconds;
      return model(c);
    };
  }
};

// Throughput of one GPU saturating in its total environments N = gmis x envs, 5% lost per extra GMI; memory of a
// GMI: 256 MiB fixed + 256 KiB per environment.
inline gmi::plan::trial_result saturating_model(const gmi::plan::candidate& c) {
  const double n = static_cast<double>(c.gmis_per_gpu) * c.envs_per_gmi;
  const double top = 1e7 * n / (n + 4096.0) * (1 - 0.05 * (c.gmis_per_gpu - 1));
  return gmi::plan::trial_result::measured(top, 256 * MiB + 256 * KiB * static_cast<std::uint64_t>(c.envs_per_gmi));
}

// Throughput linear in total environments (never saturates); memory 1 GiB + 1 MiB per environment.
inline gmi::plan::trial_result linear_model(const gmi::plan::candidate& c) {
  const double n = static_cast<double>(c.gmis_per_gpu) * c.envs_per_gmi;
  return gmi::plan::trial_result::measured(1000.0 * n, GiB + MiB * static_cast<std::uint64_t>(c.envs_per_gmi));
}

// Every row accepted (tests do not depend on this machine's backends).
inline gmi::status accept_all(const std::string&, int) { return gmi::status::ok(); }

}  // namespace gmi_test

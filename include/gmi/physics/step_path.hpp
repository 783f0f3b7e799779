#pragma once
// Which device path steps a physics task's environments (docs/physics.md, "The env driver's path"): a thread per
// environment (the pipeline's arrays in per-thread local memory) or a warp per environment (batch_warp.cuh: the
// model and the arrays in shared memory, the stages spread over the lanes). The rule, its inputs and the
// overrides are host code, so configuration and tests need no nvcc; rl/physics_env_step.cuh gathers the device's
// inputs and launches the chosen path.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include <gmi/core/error.hpp>

namespace gmi::physics {

enum class step_path {
  automatic,  // the rule below
  threads,    // one thread per environment
  warp,       // one warp per environment
};

inline constexpr const char* step_path_name(step_path p) {
  return p == step_path::automatic ? "auto" : p == step_path::threads ? "thread_per_env" : "warp_per_env";
}

// "auto" (or ""), "threads" / "thread_per_env", "warp" / "warp_per_env"; anything else is a config_error naming
// `what` (the flag or config field it came from).
inline step_path parse_step_path(std::string_view s, std::string_view what = "physics step path") {
  if (s.empty() || s == "auto") return step_path::automatic;
  if (s == "threads" || s == "thread_per_env") return step_path::threads;
  if (s == "warp" || s == "warp_per_env") return step_path::warp;
  throw gmi::config_error(gmi::got_need(std::string(what), std::string(s), "auto, threads or warp"));
}

namespace detail {
inline step_path& requested_step_path() {
  static step_path p = step_path::automatic;
  return p;
}
}  // namespace detail

// Asks every physics env batch stepped on a GPU from now on in this process for path `s` (the flag form: "auto",
// "threads", "warp"); it wins over a task's params.step_path. Throws config_error for other names.
inline void request_step_path(std::string_view s, std::string_view what = "--physics-step") {
  detail::requested_step_path() = parse_step_path(s, what);
}
inline step_path requested_step_path() { return detail::requested_step_path(); }

// What the rule looks at: the task's size and the environment count against the device.
struct step_path_inputs {
  std::size_t scratch_bytes_per_env = 0;   // the model's pipeline arrays for one environment (float)
  std::size_t table_bytes = 0;             // the model's words
  std::size_t shared_bytes_per_block = 0;  // the device's opt-in shared memory per block
  std::size_t num_envs = 0;
  std::size_t sm_count = 0;  // the SMs the step may use
};

// The rule's two thresholds, checked and moved by bench/physics/device_driver.sh (it prints the rule's choice beside
// both paths' rates; bench/results/physics/2026-11-28-NVIDIA-H200-a22f379-driver-paths.jsonl set the second).
// Below this many bytes of arrays per environment a thread per environment keeps its traffic small, and a warp
// spends most lanes idle on a model with few bodies, pairs and rows.
inline constexpr std::size_t warp_min_scratch_bytes = 4096;
// Above this many environments per SM the warp path (a few environments resident per SM, bound by shared memory)
// has reached its rate, while the thread path still gains from more resident threads: measured, the warp path won
// for the ant, humanoid and anymal at 31 environments per SM; at 62 it lost for the humanoid (0.70x) and anymal
// (0.98x) and won for the ant (1.10x); at 124 it lost for all three.
inline constexpr std::size_t warp_max_envs_per_sm = 48;

struct step_path_choice {
  step_path path = step_path::threads;
  std::string reason;  // one line: why (the rule's inputs or the override)
};

// The path for `asked` (a task's params.step_path) under the process-wide request `requested` (which wins unless
// automatic), else the rule: warp per environment when the task's arrays fit a block's shared memory with the
// model, are at least warp_min_scratch_bytes, and num_envs is at most warp_max_envs_per_sm per SM. A warp path
// asked for that does not fit the shared memory is a config_error.
inline step_path_choice choose_step_path(step_path asked, step_path requested, const step_path_inputs& in) {
  const bool fits = in.shared_bytes_per_block >= in.table_bytes + in.scratch_bytes_per_env;
  const std::string need = std::to_string(in.table_bytes) + " bytes of model + " +
                           std::to_string(in.scratch_bytes_per_env) + " bytes of arrays per environment";
  const step_path explicit_path = requested != step_path::automatic ? requested : asked;
  const char* source = requested != step_path::automatic ? "requested for the process" : "params.step_path";
  if (explicit_path == step_path::threads) return {step_path::threads, std::string("thread per env: ") + source};
  if (explicit_path == step_path::warp) {
    gmi::require(fits, "physics warp-per-env step: shared memory per block", in.shared_bytes_per_block, ">= " + need);
    return {step_path::warp, std::string("warp per env: ") + source};
  }
  if (!fits)
    return {step_path::threads, "thread per env: " + need + " exceed the shared memory per block (" +
                                    std::to_string(in.shared_bytes_per_block) + ")"};
  if (in.scratch_bytes_per_env < warp_min_scratch_bytes)
    return {step_path::threads, "thread per env: " + std::to_string(in.scratch_bytes_per_env) +
                                    " bytes of arrays per environment < " + std::to_string(warp_min_scratch_bytes)};
  const std::size_t most = warp_max_envs_per_sm * in.sm_count;
  if (in.num_envs > most)
    return {step_path::threads, "thread per env: " + std::to_string(in.num_envs) + " environments > " +
                                    std::to_string(warp_max_envs_per_sm) + " per SM on " +
                                    std::to_string(in.sm_count) + " SMs"};
  return {step_path::warp, "warp per env: " + std::to_string(in.scratch_bytes_per_env) +
                               " bytes of arrays per environment fit the shared memory, " +
                               std::to_string(in.num_envs) + " environments <= " + std::to_string(most)};
}

}  // namespace gmi::physics

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
#include <gmi/physics/model.hpp>

namespace gmi::physics {

enum class step_path {
  automatic,  // the rule below
  threads,    // one thread per environment
  warp,       // one warp per environment
  staged,     // a thread per environment per stage, a kernel per stage (rl/physics_staged_step.cuh); never automatic
};

inline constexpr const char* step_path_name(step_path p) {
  return p == step_path::automatic ? "auto"
         : p == step_path::threads ? "thread_per_env"
         : p == step_path::warp    ? "warp_per_env"
                                   : "staged_per_env";
}

// "auto" (or ""), "threads" / "thread_per_env", "warp" / "warp_per_env", "staged" / "staged_per_env"; anything else
// is a config_error naming `what` (the flag or config field it came from).
inline step_path parse_step_path(std::string_view s, std::string_view what = "physics step path") {
  if (s.empty() || s == "auto") return step_path::automatic;
  if (s == "threads" || s == "thread_per_env") return step_path::threads;
  if (s == "warp" || s == "warp_per_env") return step_path::warp;
  if (s == "staged" || s == "staged_per_env") return step_path::staged;
  throw gmi::config_error(gmi::got_need(std::string(what), std::string(s), "auto, threads, warp or staged"));
}

namespace detail {
inline step_path& requested_step_path() {
  static step_path p = step_path::automatic;
  return p;
}
}  // namespace detail

// Asks every physics env batch stepped on a GPU from now on in this process for path `s` (the flag form: "auto",
// "threads", "warp", "staged"); it wins over a task's params.step_path. Throws config_error for other names.
inline void request_step_path(std::string_view s, std::string_view what = "--physics-step") {
  detail::requested_step_path() = parse_step_path(s, what);
}
inline step_path requested_step_path() { return detail::requested_step_path(); }

// Where the warp path puts an environment: lanes per environment (8, 16 or 32: a warp steps 4, 2 or 1
// environments) and whether the constraint rows' arrays (efc_J, efc_W, efc_A4) live in a global slot per resident
// tile instead of shared memory (batch_warp.cuh).
struct tile_layout {
  int lanes = 32;
  bool spill_rows = false;
};

inline constexpr bool valid_tile_lanes(int lanes) { return lanes == 8 || lanes == 16 || lanes == 32; }

// The default tile: 8 lanes for a model whose moving bodies and dofs all fit 8 (a small model, not measured), else
// 16. Measured at 2157117 on an H200 (bench/results/physics/2026-11-28-NVIDIA-H200-2157117-tiles.jsonl): 16 lanes
// with the rows in global slots was the fastest layout at 4096 environments for the ant_v4 (14 dofs), the humanoid_v4
// (23) and anymal (18), ahead of 32 lanes, whose extra lanes idle while they hold the same registers; wider stages
// wrap round the tile.
inline constexpr int default_tile_lanes(const model_sizes& s) {
  const int widest = s.nbody - 1 > s.nv ? s.nbody - 1 : s.nv;
  return widest <= 8 ? 8 : 16;
}

namespace detail {
struct layout_request {
  int lanes = 0;          // 0: default_tile_lanes of the model
  bool spill_rows = true;  // the rows in global slots: more environments resident (measured faster, above)
};
inline layout_request& requested_tile_layout() {
  static layout_request r;
  return r;
}
}  // namespace detail

// Asks every physics env batch stepped on a GPU with the warp path from now on in this process for `lanes` lanes
// per environment (0: the model's default_tile_lanes; else 8, 16 or 32) and the constraint rows in shared memory
// ("shared") or global slots ("global"). Throws config_error for other values.
inline void request_tile_layout(int lanes, std::string_view rows = "global", std::string_view what = "--tile-lanes") {
  if (lanes != 0 && !valid_tile_lanes(lanes)) throw gmi::config_error(gmi::got_need(std::string(what), lanes, "0, 8, 16 or 32"));
  if (rows != "shared" && rows != "global")
    throw gmi::config_error(gmi::got_need("physics solver rows", std::string(rows), "shared or global"));
  detail::requested_tile_layout() = {lanes, rows == "global"};
}

// The layout the warp path takes for a model of sizes s under the process-wide request.
inline tile_layout tile_layout_for(const model_sizes& s) {
  const detail::layout_request r = detail::requested_tile_layout();
  return {r.lanes != 0 ? r.lanes : default_tile_lanes(s), r.spill_rows};
}

// Threads a block of the staged path's kernels (rl/physics_staged_step.cuh; a thread per environment in each). 64 (not
// measured against the others yet: bench/physics/device_staged.sh measures 64 and 128) spreads 16384 environments
// over 256 blocks, all of an H200's 132 SMs, where 128 leaves 4 of them idle and 256 half; at most 32 blocks an SM
// still allow 2048 threads.
inline constexpr int default_staged_block = 64;
inline constexpr bool valid_staged_block(int threads) {
  return threads == 32 || threads == 64 || threads == 128 || threads == 256;
}
namespace detail {
inline int& requested_staged_block() {
  static int b = default_staged_block;
  return b;
}
}  // namespace detail

// Asks the staged path's kernels in this process for blocks of `threads` (0: default_staged_block; else 32, 64, 128
// or 256). Throws config_error for other values.
inline void request_staged_block(int threads, std::string_view what = "--staged-block") {
  if (threads != 0 && !valid_staged_block(threads))
    throw gmi::config_error(gmi::got_need(std::string(what), threads, "0, 32, 64, 128 or 256"));
  detail::requested_staged_block() = threads != 0 ? threads : default_staged_block;
}
[[nodiscard]] inline int requested_staged_block() { return detail::requested_staged_block(); }

// What the rule looks at: the task's size and the environment count against the device.
struct step_path_inputs {
  std::size_t scratch_bytes_per_env = 0;   // shared memory of one environment's arrays in the warp path's layout
  std::size_t table_bytes = 0;             // the model's words
  std::size_t shared_bytes_per_block = 0;  // the device's opt-in shared memory per block
  std::size_t num_envs = 0;
  std::size_t sm_count = 0;  // the SMs the step may use
  // Environments of the warp path resident on one SM at once (the occupancy calculator's, for the kernel's
  // registers and shared memory); 0: unknown, taken as one block of what fits the shared memory per block.
  std::size_t resident_envs_per_sm = 0;
};

// The rule's two thresholds, checked and moved by bench/physics/device_subwarp.sh (it prints the rule's choice
// beside every path's rate).
// Below this many bytes of arrays per environment a thread per environment keeps its traffic small, and a warp
// spends most lanes idle on a model with few bodies, pairs and rows.
inline constexpr std::size_t warp_min_scratch_bytes = 4096;
// The warp path holds only its resident environments per SM and levels off once the count passes many times
// that, while the thread path keeps gaining from more resident threads. Measured at c74e00d through the env driver
// with the default layout (16 lanes, rows global; 16 ant_v4, 14 humanoid_v4, 16 anymal environments resident per SM on
// an H200, bench/results/physics/2026-11-28-NVIDIA-H200-c74e00d-subwarp.jsonl): the warp path won at 4096 and
// 16384 environments for all three tasks (up to 7.8, 8.9 and 7.8 times the resident count per SM) and lost at
// 65536 (31 to 35 times); the bound sits between, at twice the largest count where it won.
inline constexpr std::size_t warp_max_waves = 16;

struct step_path_choice {
  step_path path = step_path::threads;
  std::string reason;  // one line: why (the rule's inputs or the override)
};

// Environments of the warp path resident per SM: the occupancy calculator's count, or one block of what fits.
inline std::size_t resident_envs_per_sm(const step_path_inputs& in) {
  if (in.resident_envs_per_sm > 0) return in.resident_envs_per_sm;
  if (in.scratch_bytes_per_env == 0 || in.shared_bytes_per_block < in.table_bytes) return 0;
  return (in.shared_bytes_per_block - in.table_bytes) / in.scratch_bytes_per_env;
}

// The path for `asked` (a task's params.step_path) under the process-wide request `requested` (which wins unless
// automatic), else the rule: the warp path when the task's arrays fit a block's shared memory with the model, are
// at least warp_min_scratch_bytes, and num_envs is at most warp_max_waves times the environments the warp path
// holds resident (per SM, times the SMs). A warp path asked for that does not fit the shared memory is a
// config_error.
inline step_path_choice choose_step_path(step_path asked, step_path requested, const step_path_inputs& in) {
  const bool fits = in.shared_bytes_per_block >= in.table_bytes + in.scratch_bytes_per_env;
  const std::string need = std::to_string(in.table_bytes) + " bytes of model + " +
                           std::to_string(in.scratch_bytes_per_env) + " bytes of arrays per environment";
  const step_path explicit_path = requested != step_path::automatic ? requested : asked;
  const char* source = requested != step_path::automatic ? "requested for the process" : "params.step_path";
  if (explicit_path == step_path::threads) return {step_path::threads, std::string("thread per env: ") + source};
  if (explicit_path == step_path::staged) return {step_path::staged, std::string("staged per env: ") + source};
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
  const std::size_t resident = resident_envs_per_sm(in);
  const std::size_t most = warp_max_waves * resident * in.sm_count;
  if (in.num_envs > most)
    return {step_path::threads, "thread per env: " + std::to_string(in.num_envs) + " environments > " +
                                    std::to_string(warp_max_waves) + " x " + std::to_string(resident) +
                                    " resident per SM x " + std::to_string(in.sm_count) + " SMs"};
  return {step_path::warp, "warp per env: " + std::to_string(in.scratch_bytes_per_env) +
                               " bytes of arrays per environment fit the shared memory, " +
                               std::to_string(in.num_envs) + " environments <= " + std::to_string(most) + " (" +
                               std::to_string(resident) + " resident per SM)"};
}

}  // namespace gmi::physics

#pragma once
// The wide-network rule: which GPU paths a PPO trainer takes for its network without being told. A network whose
// widest layer has at least network_config::lt_min_width units is wide: its rollout runs batched (normalize,
// cuBLASLt forward, sampling, the env step of all envs; rl/batched_rollout.cuh) and its minibatch gradients as
// cuBLASLt products ("gemm"); a narrower one keeps the per-sample gradient kernels, and one thread per env for its
// rollout unless it has batched_collection_min_inputs inputs or more.
// request_collection_path / request_gradient_path override the rule process-wide (the gradient path's names live
// here too, so configuration code needs no nvcc). default_layer_kernels: the layer kernels (network_config::kernels
// "auto") a serving tier or a PPO trainer takes for a wide network at tf32/bf16, from bench/wide/device_wholenet.sh's
// wholenet-against-cublaslt cases (docs/networks.md). Host-only.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include <gmi/core/error.hpp>
#include <gmi/nn/network_config.hpp>

namespace gmi::rl {

// How a GPU trainer collects its rollout.
enum class collection_path {
  threads,  // one thread per env runs the whole policy forward, sampling and env step (ppo_collect_kernel)
  batched,  // per step: normalize, cuBLASLt forward over the batch, a sampling kernel, the batch env step
};

inline constexpr const char* collection_path_name(collection_path p) {
  return p == collection_path::threads ? "threads" : "batched";
}

namespace detail {
inline std::string& requested_collection_path() {
  static std::string path;
  return path;
}
// How the GPU trainer's minibatch_gradient (ppo.cuh) forms a minibatch's partial rows, and the one asked for
// (rl::request_gradient_path; "": the network's default), process-wide, read when a trainer is built.
enum class gradient_path { warps, tiles, threads, gemm };
inline std::string& requested_gradient_path() {
  static std::string path;
  return path;
}
inline const char* gradient_path_name(gradient_path p) {
  return p == gradient_path::warps     ? "warps"
         : p == gradient_path::tiles   ? "tiles"
         : p == gradient_path::threads ? "threads"
                                       : "gemm";
}
}  // namespace detail

// Asks every GPU trainer built from now on in this process for the gradient path `path` ("warps", "tiles",
// "threads", "gemm"; "": each network's default; gmi::run's --ppo-gradient), checked per network.
inline void request_gradient_path(std::string path) { detail::requested_gradient_path() = std::move(path); }

// Whether Net (an actor-critic with ::net, or an mlp) is wide under cfg: its widest layer >= cfg.lt_min_width.
template <class Net>
constexpr bool is_wide(const nn::network_config& cfg = {}) {
  if constexpr (requires { Net::net::max_width; }) return Net::net::max_width >= cfg.lt_min_width;
  else return Net::max_width >= cfg.lt_min_width;
}

// The collection path: "threads" or "batched" as asked for (gmi::run's --collection), "" (the default): by the
// rule above. Anything else is a config_error naming the flag.
inline collection_path parse_collection_path(std::string_view want, bool wide) {
  if (want.empty()) return wide ? collection_path::batched : collection_path::threads;
  if (want == "threads") return collection_path::threads;
  if (want == "batched") return collection_path::batched;
  throw gmi::config_error(gmi::got_need("--collection", std::string(want),
                                        std::string("threads, batched or nothing (the default, ") +
                                            (wide ? "batched" : "threads") + ", for this network)"));
}

// Asks every GPU trainer built from now on in this process for collection path `path` ("", "threads",
// "batched"); checked when a trainer is built.
inline void request_collection_path(std::string path) { detail::requested_collection_path() = std::move(path); }

// A narrow network's rollout also runs batched from this many inputs on: the thread-per-env forward does the first
// layer's inputs x width products one after another in every env's thread, a batched forward as one product. On
// one H200 (bench/results/learning-suite/2026-11-29-NVIDIA-H200-7e73ea3-batched.jsonl, 64-64 networks, 2 seeds
// each, the same returns) batched against thread-per-env took 0.44x the seconds a run at 60 inputs (1024 envs),
// 0.70x at 48 (4000), 0.55x at 108 (4096); 0.97x at 23 (2048) and 0.98x at 3 (512); 1.12x at 21 (8192).
inline constexpr int batched_collection_min_inputs = 32;

// Whether Net's rollout runs batched unless told otherwise: a wide network, or one with at least
// batched_collection_min_inputs inputs.
template <class Net>
constexpr bool collects_batched_by_default(const nn::network_config& cfg = {}) {
  constexpr int inputs = [] {
    if constexpr (requires { Net::obs_dim; }) return Net::obs_dim;
    else return Net::in;
  }();
  return is_wide<Net>(cfg) || inputs >= batched_collection_min_inputs;
}

template <class Net>
collection_path chosen_collection_path(const nn::network_config& cfg = {}) {
  return parse_collection_path(detail::requested_collection_path(), collects_batched_by_default<Net>(cfg));
}

// How the GPU trainer collects Net's rollouts ("threads" or "batched"), for result lines; throws config_error
// when request_collection_path asked for something else.
template <class Net>
const char* collection_path_name(const nn::network_config& cfg = {}) {
  return collection_path_name(chosen_collection_path<Net>(cfg));
}

// What a wide network's layer kernels run in: a serving tier's steps (only the forward without a record), or a
// PPO trainer's iterations (the collection's forward as wholenet or cuBLASLt, the update's products by cuBLASLt).
enum class kernels_use { serving, training };

// The rule's two measured sizes: a widest layer of at least this many units is ShadowHand-size (512-unit layers);
// Humanoid (400) and Ant (256) are below.
inline constexpr int kernels_large_width = 512;
// Rows from which serving a ShadowHand-size network at tf32 takes cuBLASLt: wholenet led at 4096 rows and trailed
// at 16384; this is the geometric middle of the two.
inline constexpr std::size_t kernels_large_tf32_rows = 8192;

// The layer kernels for a network whose widest layer is max_width, at precision p, over `rows` rows (the env
// count), where wholenet_fits says whether the whole-network kernel fits the device (nn::wholenet_fits):
//  - fp32, or wholenet does not fit: cublaslt (the only kernels there);
//  - serving: wholenet, but cublaslt for a ShadowHand-size network at tf32 from kernels_large_tf32_rows rows;
//  - training: at tf32 wholenet below ShadowHand-size and cublaslt from it; at bf16 the other way round (those
//    were the faster kernels in each measured case, Ant at bf16 within a few percent).
inline constexpr nn::layer_kernels default_layer_kernels(kernels_use use, nn::precision p, int max_width,
                                                         std::size_t rows, bool wholenet_fits) {
  if (p == nn::precision::fp32 || !wholenet_fits) return nn::layer_kernels::cublaslt;
  const bool large = max_width >= kernels_large_width;
  if (use == kernels_use::serving)
    return large && p == nn::precision::tf32 && rows >= kernels_large_tf32_rows ? nn::layer_kernels::cublaslt
                                                                                : nn::layer_kernels::wholenet;
  return (p == nn::precision::tf32) != large ? nn::layer_kernels::wholenet : nn::layer_kernels::cublaslt;
}

// cfg with its kernels settled: "auto" by default_layer_kernels, an explicit choice kept as asked.
inline constexpr nn::network_config resolve_layer_kernels(nn::network_config cfg, kernels_use use, int max_width,
                                                          std::size_t rows, bool wholenet_fits) {
  if (cfg.kernels == nn::layer_kernels::automatic)
    cfg.kernels = default_layer_kernels(use, cfg.precision, max_width, rows, wholenet_fits);
  return cfg;
}

}  // namespace gmi::rl

// gmi.bench.wide: the wide-network benchmark of issue 37. Serving (rl::batched_server: normalize, the MLP as
// cuBLASLt products, sampling, the env step of all envs as products for the linear proxies, one CUDA graph per
// window) with the ShadowHand-, Humanoid- and Ant-size policies at 4096 and 16384 envs in each precision asked
// for; Cartpole serving at 512 envs (the one-thread-per-env kernel); PPO training iterations (collection +
// update; collection and gradient paths by the wide-network rule, recorded) in each training precision; the
// rule's threshold (Ant proxy, policies 64, 128 and 256 wide, both sides of the rule forced); the peak dense GEMM
// rate (cuBLASLt, 8192^3, TF32 and bf16); one 8192 x 512 x 512 layer product alone, cuBLASLt against the own
// tensor-core kernel with the ELU epilogue (layer_gemm); Adam's step at ShadowHand's parameter count in one
// kernel and in three (adam); one minibatch's forward with record and backward alone through lt_mlp, by
// --wgrad-chunks (backward). --kernels picks the layer kernels of the serving and training cases (cublaslt,
// mma, wholenet, auto: rl/wide_rule.hpp's rule, recorded as kernels_chosen; tf32 and bf16 only: fp32 always runs
// cuBLASLt). Medians of --reps windows; one JSON line per case. This file holds the flags and the result line;
// the cases are their own translation units (wide_bench.hpp lists them), built in parallel.
#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>

#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/nn/network_config.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "wide_bench.hpp"

namespace gmi_wide {

void emit(const options& o, nlohmann::json l, const stats& s) {
  l["bench"] = "wide";
  l["impl"] = "gmi";
  l["median"] = s.median;
  l["min"] = s.min;
  l["max"] = s.max;
  l["reps"] = o.reps;
  l["run_id"] = o.run_id;
  l["git"] = o.git;
  l["device"] = o.device;
  l["gmis_per_gpu"] = 1;
  std::cout << l.dump() << std::endl;
  if (!o.out.empty()) std::ofstream(o.out, std::ios::app) << l.dump() << '\n';
}

}  // namespace gmi_wide

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  namespace nn = gmi::nn;
  using namespace gmi_wide;
  CLI::App app{"gmi.bench.wide: serving and PPO training with the paper's wide networks", "gmi.bench.wide"};
  options o;
  std::string precisions = "tf32,bf16", training_precisions = "fp32,tf32",
              cases = "peak,serving,cartpole,training,threshold", envs_list = "4096,16384", kernels = "cublaslt",
              wgrad = "0", keep16 = "1", fuse_dz = "0", training_nets = "shadow_hand,humanoid,ant",
              backward = "auto";
  app.add_option("--reps", o.reps, "windows per case")->check(CLI::Range(1, 50))->capture_default_str();
  app.add_option("--seconds", o.seconds, "seconds per window")->check(CLI::Range(0.01, 60.0))->capture_default_str();
  app.add_option("--precisions", precisions, "serving precisions: fp32, tf32, bf16")->capture_default_str();
  app.add_option("--training-precisions", training_precisions, "training precisions: fp32, tf32, bf16")
      ->capture_default_str();
  app.add_option("--envs", envs_list, "serving env counts")->capture_default_str();
  app.add_option("--training-envs", o.training_envs, "envs of the training runs")->capture_default_str();
  app.add_option("--wgrad-chunks", wgrad,
                 "weight-gradient chunks of training and backward: 0 (auto), 1 (one product) to 64")
      ->capture_default_str();
  app.add_option("--keep-inputs16", keep16,
                 "bf16 training and backward: 1 the backward reads the forward's bf16 inputs, 0 it converts them "
                 "(network_config::keep_bf16_inputs); a list runs each")
      ->capture_default_str();
  app.add_option("--fuse-dz-sums", fuse_dz,
                 "training and backward: 1 the dz pass also forms the bias gradient's column partials, 0 separate "
                 "passes (network_config::fuse_dz_sums); a list runs each")
      ->capture_default_str();
  app.add_option("--training-networks", training_nets, "networks of the training case: shadow_hand, humanoid, ant")
      ->capture_default_str();
  app.add_option("--network-backward", backward,
                 "training and backward: the backward's input-gradient chain, cublaslt, wholenet (one kernel, "
                 "tf32 / bf16 only) or auto (network_config::backward); a list runs each")
      ->capture_default_str();
  app.add_option("--cases", cases, "peak, serving, cartpole, training, threshold, layer_gemm, adam, backward")
      ->capture_default_str();
  app.add_option("--kernels", kernels,
                 "layer kernels of serving and training: cublaslt, mma, wholenet, auto (rl/wide_rule.hpp's rule)")
      ->capture_default_str();
  app.add_option("--out", o.out, "append result lines here");
  app.add_option("--run-id", o.run_id, "run id shared with the JAX reference");
  app.add_option("--git", o.git, "revision for the result lines");
  CLI11_PARSE(app, argc, argv);
  try {
    o.precisions = split(precisions);
    for (const auto& p : o.precisions) (void)nn::parse_precision(p, "--precisions");
    o.training_precisions = split(training_precisions);
    for (const auto& n : split(training_nets))
      gmi::require(n == "shadow_hand" || n == "humanoid" || n == "ant", "--training-networks", n,
                   "shadow_hand, humanoid, ant");
    for (const auto& p : o.training_precisions) (void)nn::parse_precision(p, "--training-precisions");
    o.kernels = split(kernels);
    for (const auto& k : o.kernels) (void)nn::parse_layer_kernels(k, "--kernels");
    o.wgrad_chunks.clear();
    for (const auto& w : split(wgrad)) {
      const char* end = w.c_str();
      const long v = std::strtol(w.c_str(), const_cast<char**>(&end), 10);
      gmi::require(*end == '\0' && v >= 0 && v <= nn::max_weight_grad_chunks, "--wgrad-chunks", w, "0 to 64");
      o.wgrad_chunks.push_back(static_cast<int>(v));
    }
    o.keep_inputs16.clear();
    for (const auto& k : split(keep16)) {
      gmi::require(k == "0" || k == "1", "--keep-inputs16", k, "0 or 1");
      o.keep_inputs16.push_back(k == "1" ? 1 : 0);
    }
    o.fuse_dz.clear();
    for (const auto& k : split(fuse_dz)) {
      gmi::require(k == "0" || k == "1", "--fuse-dz-sums", k, "0 or 1");
      o.fuse_dz.push_back(k == "1" ? 1 : 0);
    }
    o.backward = split(backward);
    for (const auto& b : o.backward) (void)nn::parse_backward_kernels(b, "--network-backward");
    o.serving_envs.clear();
    for (const auto& e : split(envs_list)) {
      const int n = std::atoi(e.c_str());
      gmi::require(n >= 1, "--envs", e, "positive env counts");
      o.serving_envs.push_back(n);
    }
  } catch (const gmi::config_error& e) {
    std::fprintf(stderr, "gmi.bench.wide: %s\n", e.what());
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::puts("[gmi] SKIPPED: gmi.bench.wide needs a GPU");
    return 77;
  }
  cudaDeviceProp prop{};
  GMI_CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
  o.device = prop.name;
  const auto want = split(cases);
  auto has = [&](const char* c) { return std::find(want.begin(), want.end(), c) != want.end(); };
  if (has("peak")) peak_gemm(o);
  if (has("serving")) {
    serving_shadow_hand(o);
    serving_humanoid(o);
    serving_ant(o);
  }
  if (has("cartpole")) cartpole_serving(o);
  if (has("layer_gemm")) layer_gemm(o);
  if (has("adam")) adam_steps(o);
  if (has("backward")) backward_passes(o);
  if (has("training"))
    for (const auto& p : o.training_precisions)
      for (const auto& k : o.kernels) {
        const auto nets = split(training_nets);
        const auto wants = [&](const char* n) { return std::find(nets.begin(), nets.end(), n) != nets.end(); };
        if (wants("shadow_hand")) training_shadow_hand(o, p, k);
        if (wants("humanoid")) training_humanoid(o, p, k);
        if (wants("ant")) training_ant(o, p, k);
      }
  if (has("threshold"))  // the wide-network rule's crossover: each width with both paths, fp32
    for (const char* rule : {"narrow", "wide"}) {
      threshold_ant_64(o, rule);
      threshold_ant_128(o, rule);
      threshold_ant(o, rule);
    }
  return 0;
}

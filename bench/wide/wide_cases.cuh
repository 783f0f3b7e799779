#pragma once
// gmi.bench.wide's serving and training cases as templates over (Task, Net): each wide_serving_*.cu /
// wide_training_*.cu instantiates one network, so the networks' kernels (batched serving, PPO trainer, wholenet
// in both precisions) compile in separate translation units.
#include <gmi/envs/cartpole.hpp>
#include <gmi/envs/lq_proxy.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/nn/actor_critic.hpp>
#include <gmi/rl/batched_serving.cuh>
#include <gmi/rl/ppo.cuh>
#include <gmi/rl/wide_rule.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "wide_bench.hpp"

namespace gmi_wide {

namespace envs = gmi::envs;
namespace nn = gmi::nn;

template <class Task, class Hidden>
using policy_of = nn::gaussian_actor_critic<Task::obs_dim, Task::act_dim, Hidden>;
using shadow_hand_ac = policy_of<envs::shadow_hand_proxy, nn::layers<512, 512, 512, 256>>;
using humanoid_ac = policy_of<envs::humanoid_proxy, nn::layers<200, 400, 100>>;
using ant_ac = policy_of<envs::ant_proxy, nn::layers<256, 128, 64>>;
using cartpole_ac = policy_of<envs::cartpole, nn::layers<32, 32>>;
using ant_64_ac = policy_of<envs::ant_proxy, nn::layers<64, 64>>;
using ant_128_ac = policy_of<envs::ant_proxy, nn::layers<128, 128>>;

// The weight-gradient chunks each layer of Mlp takes at batch n on device 0 (network_config::weight_grad_chunks).
template <class Mlp>
std::vector<int> chunks_taken(const nn::network_config& cfg, std::size_t n) {
  int sms = 1;
  GMI_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<int> c;
  for (int l = 0; l < Mlp::layers::count; ++l)
    c.push_back(nn::weight_grad_chunks(cfg, Mlp::layers::width(l), Mlp::layers::width(l + 1),
                                       static_cast<long long>(n), sms));
  return c;
}

template <class Task, class Net>
void serving(const options& o, const char* net_name) {
  for (const int n : o.serving_envs)
    for (const auto& pname : o.precisions)
      for (const auto& kname : o.kernels) {
        const nn::network_config cfg{.precision = nn::parse_precision(pname, "--precisions"),
                                     .kernels = nn::parse_layer_kernels(kname, "--kernels")};
        if (cfg.precision == nn::precision::fp32 && cfg.kernels != nn::layer_kernels::cublaslt) continue;
        gmi::cuda::stream s;
        gmi::rl::batched_server<Task, Net> server(n, 1, gmi::exec::cuda{.stream = s.get()}, 20, cfg);
        const int window = server.graph_steps();
        const auto st = measure(o, static_cast<double>(n) * window, [&](int k) {
          server.serve(k * window);
          server.synchronize();
        });
        const double macs = static_cast<double>(Net::net::layers::forward_macs);
        constexpr double env_macs = double(Task::substeps) * Task::obs_dim * (Task::obs_dim + Task::act_dim);
        emit(o,
             {{"case", "serving"}, {"net", net_name}, {"task", Task::name}, {"precision", pname}, {"num_envs", n},
              {"kernels", kname},
              {"kernels_chosen", nn::layer_kernels_name(
                                     gmi::rl::with_rule_kernels<Net>(cfg, gmi::rl::kernels_use::serving, n).kernels)},
              {"metric", "steps_per_s"}, {"path", server.path()}, {"tflops", 2.0 * macs * st.median / 1e12},
              {"env_tflops", 2.0 * env_macs * st.median / 1e12},
              {"total_tflops", 2.0 * (macs + env_macs) * st.median / 1e12}},
             st);
      }
}

// rule: "auto" (the wide-network rule with the default threshold), "wide" or "narrow" (the rule's threshold moved
// so that Net is taken as wide or as narrow: both sides of the rule on one network).
template <class Task, class Net>
void training(const options& o, const char* net_name, const std::string& pname, const char* rule = "auto",
              const std::string& kname = "cublaslt") {
  for (const int wgrad : o.wgrad_chunks)
  for (const int keep16 : o.keep_inputs16)
  for (const int fuse : o.fuse_dz)
  for (const auto& bname : o.backward) {
    if (repeats_kept_run(o, keep16, pname)) continue;
    gmi::cuda::stream s;
    gmi::rl::ppo_config c;  // defaults: horizon 16, minibatch 8192, 8 epochs
    c.network.precision = nn::parse_precision(pname, "--training-precisions");
    c.network.kernels = nn::parse_layer_kernels(kname, "--kernels");
    c.network.weight_grad_chunks = wgrad;
    c.network.keep_bf16_inputs = keep16 != 0;
    c.network.fuse_dz_sums = fuse != 0;
    c.network.backward = nn::parse_backward_kernels(bname, "--network-backward");
    if (c.network.precision == nn::precision::fp32 && c.network.backward == nn::backward_kernels::wholenet) continue;
    if (c.network.precision == nn::precision::fp32 && c.network.kernels != nn::layer_kernels::cublaslt) return;
    if (std::string(rule) == "wide") c.network.lt_min_width = 1;
    if (std::string(rule) == "narrow") c.network.lt_min_width = 1 << 20;
    gmi::rl::ppo_trainer<Task, Net, gmi::exec::cuda> t(o.training_envs, 1, c, {}, gmi::exec::cuda{.stream = s.get()});
    const double samples = static_cast<double>(c.horizon) * o.training_envs;
    t.iterate();  // eager first iteration
    const auto st = measure(o, samples, [&](int k) {
      for (int i = 0; i < k; ++i) t.iterate();
      t.synchronize();
    });
    const double macs = static_cast<double>(Net::net::layers::forward_macs);
    const double minibatches = std::max(1.0, samples / std::min<double>(c.minibatch, samples));
    // collection forward + epochs x (forward + backward, about 3x the forward) per sample
    const double flops_per_sample = 2.0 * macs * (1.0 + 3.0 * c.epochs);
    constexpr double env_macs = double(Task::substeps) * Task::obs_dim * (Task::obs_dim + Task::act_dim);
    emit(o,
         {{"case", std::string(rule) == "auto" ? "training" : "threshold"}, {"net", net_name}, {"task", Task::name},
          {"precision", pname}, {"kernels", kname},
          {"kernels_chosen", nn::layer_kernels_name(gmi::rl::with_rule_kernels<Net>(
                                 c.network, gmi::rl::kernels_use::training, o.training_envs).kernels)},
          {"num_envs", o.training_envs}, {"metric", "steps_per_s"},
          {"horizon", c.horizon},
          {"epochs", c.epochs}, {"minibatch", c.minibatch}, {"minibatches", minibatches}, {"rule", rule},
          {"max_width", Net::net::max_width},
          {"gradient_path", gmi::rl::minibatch_gradient_name<Net>(c.network)},
          {"collection", gmi::rl::collection_path_name<Net>(c.network)},
          {"wgrad_chunks", wgrad}, {"wgrad_chunks_taken", chunks_taken<typename Net::net>(c.network, c.minibatch)},
          {"keep_inputs16", keep16}, {"fuse_dz_sums", fuse}, {"backward", bname},
          {"tflops", flops_per_sample * st.median / 1e12},
          {"total_tflops", (flops_per_sample + 2.0 * env_macs) * st.median / 1e12}},
         st);
  }
}

}  // namespace gmi_wide

#pragma once
// Host entry points into serving with the whole-network kernel (rl::batched_server, network_config::kernels
// wholenet), for the doctest file.

#include <string>
#include <vector>

namespace ppo_gpu {

struct serving_run {
  std::string path;
  std::vector<float> actions, log_probs, obs, rewards;  // after the steps
};

// The Ant proxy with the paper's Ant policy served to `envs` envs at precision (tf32, bf16) with kernels (cublaslt,
// wholenet), seed 5: steps + 1 eager steps (graph false), or one eager step and one captured window of `steps`
// steps (graph true, steps >= 1).
serving_run ant_serving_run(const std::string& precision, const std::string& kernels, int envs, int steps, bool graph);

// The path (rl::batched_server::path) of the ShadowHand proxy with the paper's ShadowHand policy served to `envs`
// envs at precision with kernels (cublaslt, wholenet, auto), after one eager step.
std::string shadow_hand_serving_path(const std::string& precision, const std::string& kernels, int envs);

}  // namespace ppo_gpu

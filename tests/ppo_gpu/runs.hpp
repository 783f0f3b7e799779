#pragma once
// Host-callable runs of the CUDA PPO trainer for the doctest file (compiled by g++).
#include <string>
#include <vector>

struct ppo_run_result {
  std::vector<float> params;          // after the iterations
  std::vector<float> first_values;    // values of the first collection (horizon + 1 rows)
  std::vector<float> first_rewards;
  double policy_loss, value_loss, approx_kl;
  double best_return;                 // best windowed mean return seen
  int iterations;
};

// iterations of PPO on Cartpole; on_gpu false runs the same on host threads.
ppo_run_result run_cartpole_ppo(bool on_gpu, int num_envs, unsigned long long seed, int iterations, int minibatch,
                                int epochs, bool stop_when_solved);

// 6 iterations straight vs 3, save_state, load_state into a fresh trainer, 3 more: the same weights?
bool gpu_resume_matches_straight_run();

// lr_schedule::linear on the GPU (the first iteration eager, the rest replayed graphs): the lr each of `iterations`
// iterations used, and the lr of a trainer resumed from a checkpoint after half of them and run to the end.
struct linear_lr_run {
  std::vector<float> lrs, resumed_lrs, want;
};
linear_lr_run gpu_linear_lr_run(int iterations);

// One PPO iteration from seed 7 (512 envs, minibatch 8192, 2 epochs) with the minibatch gradient formed the way
// rl::request_gradient_path(path) asks (warps, tiles, threads; "" runs the host trainer): Cartpole's 4-32-32 network, and
// franka_cabinet_proxy's 23-64-64 one (too wide for the warp kernel). A path the network does not fit is refused.
struct gradient_path_run {
  std::vector<float> params;
  double policy_loss = 0, value_loss = 0;
  std::string path;     // the path taken ("host" for the host trainer)
  std::string backward_path;  // isaac_ant_kernels_run: the lt_mlp backward's input-gradient chain ("whole_tf32", ...)
  std::string refusal;  // the config_error's message, where refused
};
gradient_path_run cartpole_iteration(const std::string& path);
gradient_path_run wide_proxy_iteration(const std::string& path);
gradient_path_run isaac_ant_iteration(const std::string& path);  // 60-256-128-64-8: weights from global memory
// `iterations` GPU PPO iterations (the second on replays the captured graph) of the Ant network from seed 7, its
// batched collection and gemm gradients in `precision` (tf32, bf16) with the layer kernels `kernels` (cublaslt,
// mma: network_config::kernels) and the backward's chain `backward` (network_config::backward); path: the lt_mlp
// path the trainer's gradient ran ("lt_tf32", "mma_bf16", ...).
gradient_path_run isaac_ant_kernels_run(const std::string& precision, const std::string& kernels, int iterations,
                                        const std::string& backward = "auto");

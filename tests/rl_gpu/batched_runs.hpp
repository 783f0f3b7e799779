#pragma once
// Host-callable runs of the batched rollout (rl/batched_rollout.cuh) beside the thread-per-env collection
// (ppo_rollout_view::collect in a kernel) for the doctest file: two env batches and rollouts from the same seed,
// the same weights; what the two wrote, compared.
#include <string>

struct batched_compare {
  std::string path;          // batched_rollout::path()
  double actions = 0, log_probs = 0, values = 0, rewards = 0, advantages = 0, obs = 0;  // largest relative errors
  long ends_differ = 0;      // steps whose end flag differs
  long blocks_differ = 0;    // envs whose policy-stream counter differs
  long ends = 0;             // end flags set (thread path), so a test knows episodes ended
};

// task: "ant" (the linear proxy: matrix-product substeps) or "cartpole" (a thread per env), each with a wide
// policy; precision "fp32" or "tf32"; max_steps: the env's time limit (small: truncations in the rollout).
batched_compare compare_batched_collection(const std::string& task, const std::string& precision, int num_envs,
                                           int horizon, int max_steps);

// The batched server's graph replay against its own eager steps: largest relative difference of the actions
// after `steps` steps from the same start (ant proxy, fp32).
double batched_server_graph_vs_eager(int num_envs, int steps);

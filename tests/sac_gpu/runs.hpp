#pragma once
// Host entry points into the device SAC trainer, for the doctest file (compiled by the host compiler).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sac_gpu {

struct learn_result {
  double random_return = 0, final_return = 0, seconds = 0;
  std::size_t env_steps = 0, updates = 0;
  std::vector<std::string> log;  // one line per 1000 env steps
  // With replay shards (sac_config::replay_shards > 1): per shard its environments, memory ("device" or
  // "pinned_host"), draws; the placement steps, those decided, the moves.
  std::vector<std::size_t> shard_envs;
  std::vector<std::string> shard_memory;
  std::vector<double> shard_drawn;
  std::uint64_t placement_steps = 0, decided_steps = 0, moves = 0;
};
// The replay settings of a run (sac_config's replay_shards, placement_every, replay_device_mib; mib < 0: none).
struct shard_settings {
  int shards = 1;
  std::size_t every = 0;
  double mib = -1;
};

// One batch through the device kernels and through the host sac_gradients, same inputs: the soft targets, the
// critic gradient and the actor gradient of both, and the largest relative differences.
struct agreement {
  double targets = 0, critic_grad = 0, actor_grad = 0, actor_loss_host = 0, actor_loss_device = 0;
  double log_prob_host = 0, log_prob_device = 0, critic_loss_host = 0, critic_loss_device = 0;
  const char* path = "";  // the critic's batched path on the device
};
// hidden: 32 (the shared-memory kernels) or 256 (cuBLASLt).
agreement device_matches_host(std::size_t batch, int hidden);

// SAC on the device on Pendulum with the settings of tests/sac's learning test, num_envs environments.
learn_result learn_pendulum(int num_envs, std::size_t env_steps, shard_settings replay = {});

// `gmis` device learners as threads on GPU 0 (runtime::thread_group), each with its own environments (seed 100 +
// rank) and replay table, synced (rl::sac_sync) for `env_steps` each: through the context's allreduce on the host,
// or `on_device` through comm::hierarchical_allreduce on the trainers' sum buffers.
struct data_parallel {
  bool weights_equal = false;   // actor and both critics, bit for bit, on every learner
  bool weights_moved = false;   // rank 0's actor is not its initial one
  std::size_t updates = 0;      // rank 0's
  std::uint64_t device_sums = 0, host_sums = 0;  // rank 0's sums by path
};
data_parallel device_learners(int gmis, std::size_t env_steps, bool on_device = false);

// Global sampling (rl/sac_global.hpp): 2 device learners as threads on GPU 0 (8 environments each, learn_pendulum's
// settings), learner 0 keeping up to 100000 transitions and learner 1 up to 2000, gradients summed on the device,
// each update one sample of 2 x 128 over both tables; `env_steps` each, then rank 0's deterministic return.
struct global_result {
  std::vector<double> drawn, expected;  // per learner: its draws, and its tables' share of the draws summed
  std::vector<std::uint64_t> empty, global_updates;  // per learner: updates with no draws, with a global sample
  std::vector<std::size_t> tables;      // per learner: its table's items at the end
  std::size_t updates = 0;
  std::uint64_t device_sums = 0;
  bool weights_equal = false, weights_moved = false;
  double final_return = 0, seconds = 0;
};
global_result global_learners(std::size_t env_steps);

// The weighting on the device: 2 learners (8 environments each, batch 128, gradients summed on the device) whose plan
// gives learner 0 all 256 draws of every update, seeded as a lone learner's (seed 100), and learner 1 none (its
// update without draws), against a lone device learner of batch 256 and seed 100 (both launched kernel by kernel).
struct lone_match {
  bool equals_lone = false;   // learner 0's weights the lone learner's, bit for bit
  bool weights_equal = false, weights_moved = false;
  std::size_t updates = 0, lone_updates = 0;
  std::uint64_t empty_updates_second = 0, device_sums = 0;
};
lone_match global_against_lone(std::size_t env_steps);

// The same group twice from the same seeds, gradients averaged on the device and through the host.
struct sum_paths {
  bool weights_equal = false;    // the device run: every learner's weights the same bits
  bool paths_bit_equal = false;  // rank 0's weights of both runs the same bits (sums in the same order)
  double distance = 0;           // |device run - host run| over every weight / |host run's actor - its initial one|
  std::size_t updates = 0;
  std::uint64_t device_sums = 0, host_sums_of_device_run = 0;
};
sum_paths device_sum_against_host_sum(int gmis, std::size_t env_steps);

// Split roles on GPU GMIs: first one actor's packed rows (12 steps of 3 envs) through a learner's device insert,
// then `gmis` thread GMIs on GPU 0, GMI 0 learning (detail::split_learner over a sac_device_trainer) until it
// holds `env_steps` transitions, the others acting (detail::split_actor_run), 8 envs each.
struct split_result {
  std::size_t rows_sent = 0, rows_found = 0, learner_table = 0, single_insert_updates = 0;  // the single insert
  std::size_t learner_env_steps = 0, learner_updates = 0, learner_table_after = 0;
  std::size_t actor_env_steps = 0;  // collected by the actors, the round in flight at the end included
  std::size_t actor_updates = 0;    // the actors' own gradient steps (none)
  bool weights_moved = false;
};
split_result split_on_gpu(int gmis, std::size_t env_steps);

// The same SAC run twice from one seed (Pendulum, 8 envs, hidden 256: the gemm paths and the cooperative Adam),
// once launching each update's kernels and once replaying the captured update graph (sac_config::cuda_graph):
// after `env_steps` the weights, the temperature and the last losses compared bit for bit; then `timed_updates`
// more updates of each, timed (updates/s, stream waited for at the end).
struct graph_result {
  bool actor_equal = false, critics_equal = false, weights_moved = false, stats_equal = false;
  bool launched_repeat_equal = false;  // a second launched run from the same seed: the same bits
  std::size_t updates = 0, updates_graph = 0;
  std::uint64_t graph_updates = 0, graph_updates_of_launched = 0;
  double updates_per_s_launched = 0, updates_per_s_graph = 0;
};
graph_result graph_against_launches(std::size_t env_steps, std::size_t timed_updates);

// n-step returns on the device (sac_config::n_step 3): two device trainers of one seed on Pendulum (2 envs, time
// limit 4 steps, 7 vector steps of uniform actions, no update), one-step and 3-step; the 3-step table against the
// fold of the one-step table (tests/sac/nstep_expect.hpp).
struct nstep_result {
  std::size_t inserted_one = 0, inserted_three = 0, env_steps_three = 0, compared = 0, cut = 0;
  double worst = 0;
};
nstep_result device_nstep_against_one_step();

}  // namespace sac_gpu

#pragma once
// Synchronous data-parallel PPO: the hook through which W ppo_trainers (one per GMI) stay replicas of one policy.
// The trainer decides what is summed and when; the group's communication (an allreduce on the GPU, a shared-memory
// one on the host, threads in a test) is plugged in as callables, so rl/ depends on no transport.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include <gmi/core/error.hpp>
#include <gmi/comm/row_exchange.hpp>

struct CUstream_st;  // cudaStream_t is CUstream_st*: host-only users need no CUDA header

namespace gmi::rl {

// Each callable sums `n` values element-wise across the group, in place. Every trainer calls it the same number
// of times, in the same order, with the same n, and every trainer must get the same sums bit for bit (any fixed
// summation order will do): otherwise the replicas drift apart.
struct ppo_sync {
  int rank = 0;   // this trainer's place in the group, 0 .. world - 1 (rank 0's weights start the group)
  int world = 1;  // trainers in the group; 1 runs the synced path with nothing to exchange
  // exec::cuda: the gradient row. `data` is always the trainer's gradient buffer (ppo_trainer::gradient_buffer(),
  // n its size), so an allreduce bound to one buffer when it is built (comm::hierarchical_allreduce) serves it.
  // Enqueue on `stream` (the sum may complete later on the stream) or finish before returning.
  std::function<void(float* data, std::size_t n, CUstream_st* stream)> sum_device;
  // exec::host: the gradient row, the same contract in host memory.
  std::function<void(float* data, std::size_t n)> sum_host;
  // Both backends, host memory, a few hundred values per iteration: rollout moments (advantages, observations,
  // returns; a trainer with an exchange gathers those in a kernel instead) and a configuration check. Each trainer
  // fills only its own slot, so the sum is an all-gather whose result does not depend on the order the transport
  // adds in.
  std::function<void(double* data, std::size_t n)> sum_stats;
  // Optional, exec::cuda: set when sum_device only enqueues device work (no host waits) that a CUDA graph may
  // capture and replay. The trainer then captures its update (every epoch's minibatches, sums included) once and
  // replays it each iteration, and after each launch on `stream` calls replayed(calls, stream) with the number of
  // sums the graph holds: the transport keeps its bookkeeping and checks the group there (and throws).
  std::function<void(std::size_t calls, CUstream_st* stream)> replayed;
  // Optional, exec::cuda, with replayed: the group's gradient rows readable from inside a kernel (every member's
  // gradient buffer; comm::hierarchical_allreduce::row_exchange(): MPS GMIs of one GPU, and with
  // comm::row_exchange_across_gpus the GPUs of one host). The trainer then sums the
  // group's rows in its own step kernel (its row, the exchange, the group's mean, Adam: one launch a minibatch)
  // instead of calling sum_device, wherever its network allows that step (ppo_trainer::steps_in_one_kernel), and
  // gathers the rollout statistics through it too when the row holds every member's records.
  std::optional<comm::row_exchange> exchange;

  // Throws config_error naming the first missing or bad field.
  void validate(bool on_device) const {
    gmi::require(world >= 1, "ppo_sync.world", world, ">= 1");
    gmi::require(rank >= 0 && rank < world, "ppo_sync.rank", rank, "0.." + std::to_string(world - 1) + " (world " +
                                                                      std::to_string(world) + ")");
    auto need = [](bool set, const char* what, const char* why) {
      if (!set) throw gmi::config_error(std::string(what) + ": got none, need a callable (" + why + ")");
    };
    if (on_device) need(static_cast<bool>(sum_device), "ppo_sync.sum_device", "the trainer runs on exec::cuda");
    else need(static_cast<bool>(sum_host), "ppo_sync.sum_host", "the trainer runs on exec::host");
    need(static_cast<bool>(sum_stats), "ppo_sync.sum_stats", "every synced trainer");
    if (exchange) {
      if (!on_device)
        throw gmi::config_error("ppo_sync.exchange: got one, need none on exec::host (the exchange runs in a kernel)");
      if (!exchange->valid())
        throw gmi::config_error("ppo_sync.exchange: got one with a row, flag or counter missing, need one built by "
                                "comm::hierarchical_allreduce::row_exchange()");
      // Members are numbered GPU by GPU: rank = gpu * (members of a GPU) + the member's place on its GPU.
      const int global_rank = exchange->gpu * exchange->size + exchange->rank;
      if (exchange->members() != world || global_rank != rank)
        throw gmi::config_error("ppo_sync.exchange: got " + std::to_string(exchange->members()) + " members (rank " +
                                std::to_string(global_rank) + "), need " + std::to_string(world) + " (rank " +
                                std::to_string(rank) + ") as the sync");
      need(static_cast<bool>(replayed), "ppo_sync.replayed", "an exchange is checked after each replay");
    }
  }
};

}  // namespace gmi::rl

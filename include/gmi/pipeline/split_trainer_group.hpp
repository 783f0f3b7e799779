#pragma once
// The split layout on several GPUs of one host: the trainer GMIs (slice 0 of every GPU) are one data-parallel
// group. Inside each update they sum their gradient rows and normalizer moments through NCCL (rl::appo_sync, one
// rank per GPU), so they stay replicas of one policy; every `check_every` updates they add up their finished
// episodes, served steps and stop votes through the run's shared-memory allreduce among the trainers, so they
// decide together and every trainer stops after the same update. Each GPU's serving GMIs feed and read only
// their own trainer. Every host wait behind a collective is bounded (the communicator aborts at its deadline).

#include <cuda_runtime_api.h>

#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <vector>

#include <gmi/comm/nccl.hpp>
#include <gmi/rl/appo_sync.hpp>
#include <gmi/runtime/context.hpp>

namespace gmi {

class split_trainer_group {
 public:
  static constexpr std::uint64_t check_every = 4;  // updates between the group's stop decisions

  // What one trainer brings to a stop decision.
  struct votes {
    bool diverged = false, signal = false, time_up = false, stop_requested = false;
    double episodes = 0, return_sum = 0;  // finished since its last decision
    double served = 0;                    // env steps its serving GMIs sent, from the start
  };
  // The group's sums: every trainer gets the same numbers.
  struct tally {
    int diverged = 0, signal = 0, time_up = 0, stop_requested = 0;
    double episodes = 0, return_sum = 0, served = 0;
  };

  // A trainer GMI (slice 0) of a run with `gpus` GPUs and `gmis_per_gpu` GMIs each; builds the group's
  // communicator (its id through shared memory; bounded by the run's timeout).
  split_trainer_group(runtime::context& ctx, int gpus, int gmis_per_gpu) : ctx_(ctx), gpu_(ctx.id().gpu_index()) {
    for (int g = 0; g < gpus; ++g) trainers_.push_back(g * gmis_per_gpu);
    nccl_ = comm::shm_bootstrapped_nccl::create(ctx.id().run_id + "-split-nccl", gpus, gpu_, ctx.timeout());
  }
  split_trainer_group(const split_trainer_group&) = delete;
  split_trainer_group& operator=(const split_trainer_group&) = delete;

  [[nodiscard]] int size() const noexcept { return static_cast<int>(trainers_.size()); }
  [[nodiscard]] int rank() const noexcept { return gpu_; }

  // The learner's hook: both sums are NCCL allreduces on the learner's stream (capturable in its update graph).
  [[nodiscard]] rl::appo_sync sync() {
    rl::appo_sync s;
    s.rank = gpu_;
    s.world = size();
    comm::nccl_communicator* c = nccl_.comm.get();
    s.sum_floats = [c](float* data, std::size_t n, CUstream_st* stream) { c->allreduce(data, data, n, stream); };
    s.sum_doubles = [c](double* data, std::size_t n, CUstream_st* stream) {
      c->allreduce(data, data, n, ncclFloat64, ncclSum, stream);
    };
    return s;
  }

  // Bounded waits for work queued behind the group's collectives (a peer that died or hangs: nccl_error at the
  // deadline, the communicator aborted).
  void settle(cudaStream_t stream) { nccl_.comm->synchronize(stream); }
  void wait(cudaEvent_t event) { nccl_.comm->synchronize_event(event); }
  // For a trainer leaving on an error: the peers' collectives then fail instead of waiting for this one.
  void abort() noexcept {
    if (nccl_.comm) nccl_.comm->abort();
  }

  // The stop decision: every trainer calls this after the same update (bounded by the run's timeout).
  [[nodiscard]] tally decide(const votes& mine) {
    std::vector<double> v{mine.diverged ? 1.0 : 0.0, mine.signal ? 1.0 : 0.0, mine.time_up ? 1.0 : 0.0,
                          mine.stop_requested ? 1.0 : 0.0, mine.episodes, mine.return_sum, mine.served};
    ctx_.allreduce(std::span<double>(v), trainers_);
    return {static_cast<int>(v[0]), static_cast<int>(v[1]), static_cast<int>(v[2]), static_cast<int>(v[3]),
            v[4], v[5], v[6]};
  }

 private:
  runtime::context& ctx_;
  int gpu_;
  std::vector<int> trainers_;
  comm::shm_bootstrapped_nccl nccl_;
};

// Declared right after the learner whose update graph holds the group's NCCL work: when the trainer leaves on an
// exception, the communicator is aborted before the learner (and its graph) go, so nothing waits on a peer.
struct split_group_abort_on_unwind {
  split_trainer_group* group;
  int exceptions = std::uncaught_exceptions();
  ~split_group_abort_on_unwind() {
    if (group && std::uncaught_exceptions() > exceptions) group->abort();
  }
};

}  // namespace gmi

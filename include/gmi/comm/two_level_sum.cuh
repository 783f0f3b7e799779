#pragma once
// A float sum over the GPUs of several hosts in two levels: first among the GPUs of each host (their own NCCL
// communicator: NVLink, peer memory), then between the hosts, GPU k of every host with GPU k of the others (one
// communicator per k, the "rail"). Each level is one allgather and a sum of the rows in rank order
// (comm/gathered_sum.cuh), so a minibatch's sum crosses the hosts in one dependent hop: an allgather over every GPU
// of every host makes (H x G - 1), NCCL's ring allreduce 2 (H x G - 1), most of them between the hosts when the
// ring goes through both. The bits: every GPU of a host gets the host's sum (the same tree on each), every GPU of
// every host adds the hosts' sums in host order, so every GMI gets the same bits; with G a power of two they are
// those of the one-level allgather sum over every GPU in rank order (the pairwise tree over H x G rows splits at
// the hosts' boundaries, host_sum's argument in docs/multihost.md).
//
// two_level_sum installs itself in the communicator of every GPU's leader (nccl_communicator::sum_in_steps), so
// comm::hierarchical_allreduce and a replayed update use it unchanged; that communicator's waits watch the two
// levels' errors, and its abort aborts them. The NCCL ids of the levels come from one sum over every GMI of every
// host (two_level_ids: each id as bytes in doubles, written by the GMI that made it, zeros elsewhere).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gmi/comm/gathered_sum.cuh>
#include <gmi/comm/nccl.hpp>
#include <gmi/comm/two_level_ids.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/buffer.hpp>

namespace gmi::comm {

// The NCCL ids of one GPU's two levels: its host's (hosts x gpus ids in all: one a host, one a rail).
struct two_level_nccl_ids {
  nccl_id host;  // this host's GPUs (unused with 1 GPU a host)
  nccl_id rail;  // GPU k of every host
};

// Every GMI of every host calls this once, at the same point (it is one sum over all of them): `sum` is the run's
// sum of doubles over every GMI (runtime::gpu_hosts::sum). GPU 0's leader of host h makes host h's id, host 0's
// leader of GPU k makes rail k's. Non-leaders pass leader = false and get ids they do not use.
inline two_level_nccl_ids exchange_two_level_ids(const two_level_shape& shape, int host, int gpu, bool leader,
                                                 const std::function<void(double*, std::size_t)>& sum) {
  const auto make = [](char* bytes) {
    const nccl_id id = nccl_id::generate();
    std::memcpy(bytes, id.id.internal, NCCL_UNIQUE_ID_BYTES);
  };
  const auto [host_id, rail_id] =
      exchange_two_level_id_bytes(shape, host, gpu, leader, NCCL_UNIQUE_ID_BYTES, make, sum);
  two_level_nccl_ids out;
  std::memcpy(out.host.id.internal, host_id.data(), NCCL_UNIQUE_ID_BYTES);
  std::memcpy(out.rail.id.internal, rail_id.data(), NCCL_UNIQUE_ID_BYTES);
  return out;
}

// One GPU leader's two levels, installed in `all` (the leaders' communicator over every GPU of every host) for
// float sums of at most `capacity` floats. Build it on the leader's device, after `all`, before any capture, on
// every leader in the same order (the levels' communicators are made here: the host's first, then the rail's).
class two_level_sum {
 public:
  two_level_sum(nccl_communicator& all, const two_level_shape& shape, int host, int gpu, const two_level_nccl_ids& ids,
                std::size_t capacity, nccl_options options)
      : all_(all) {
    require(shape.hosts >= 2 && shape.hosts <= max_gathered_ranks, "hosts of a two-level sum", shape.hosts,
            "2.." + std::to_string(max_gathered_ranks));
    require(shape.gpus >= 1 && shape.gpus <= max_gathered_ranks, "GPUs a host of a two-level sum", shape.gpus,
            "1.." + std::to_string(max_gathered_ranks));
    require(all.size() == shape.hosts * shape.gpus, "ranks of the leaders' communicator under a two-level sum",
            all.size(), std::to_string(shape.hosts * shape.gpus) + " (hosts x GPUs a host)");
    if (shape.gpus > 1) {
      host_ = std::make_unique<nccl_communicator>(shape.gpus, ids.host, gpu, options);
      host_rows_.emplace(*host_, capacity);
      partial_ = cuda::device_buffer<float>(capacity);
    }
    rail_ = std::make_unique<nccl_communicator>(shape.hosts, ids.rail, host, options);
    rail_rows_.emplace(*rail_, capacity);
    all_.sum_in_steps(summed_in_steps{this, capacity, &sum, &check, &abort});
  }
  two_level_sum(const two_level_sum&) = delete;
  two_level_sum& operator=(const two_level_sum&) = delete;
  ~two_level_sum() { all_.sum_in_steps(summed_in_steps{}); }

 private:
  static void sum(void* state, const float* send, float* recv, std::size_t count, cudaStream_t stream) {
    auto& me = *static_cast<two_level_sum*>(state);
    const float* host_sum = send;
    if (me.host_) {
      me.host_->allreduce(send, me.partial_.data(), count, stream);  // the host's GPUs: allgather, rows summed
      host_sum = me.partial_.data();
    }
    me.rail_->allreduce(host_sum, recv, count, stream);  // the hosts' sums, in host order
  }
  static void check(void* state) {
    auto& me = *static_cast<two_level_sum*>(state);
    if (me.host_) me.host_->check_async();
    me.rail_->check_async();
  }
  static void abort(void* state) noexcept {
    auto& me = *static_cast<two_level_sum*>(state);
    if (me.host_) me.host_->abort();
    me.rail_->abort();
  }

  nccl_communicator& all_;
  std::unique_ptr<nccl_communicator> host_;  // null with 1 GPU a host
  std::unique_ptr<nccl_communicator> rail_;
  std::optional<gathered_sum_rows> host_rows_, rail_rows_;  // after their communicators: destroyed first
  cuda::device_buffer<float> partial_;                       // the host's sum
};

}  // namespace gmi::comm

#pragma once
// The GMI roles of the channel GPU tests, shared by the test binary (threads) and gmi.test.channel_worker
// (processes): a producer that streams reference rollouts from device memory, a consumer that copies every batch
// back and checks it word by word, a weights reader. Each returns a process-style exit code (0 = right).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include <gmi/comm/channel.hpp>
#include <gmi/comm/weights_channel.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/stream.hpp>

#include "channel/channel_data.hpp"

namespace gmi_test {

inline gmi::comm::channel_options gpu_options(const std::string& tag, gmi::comm::payload_placement placement,
                                              int producers, int consumers, const geometry& g,
                                              std::uint32_t per_slot) {
  gmi::comm::channel_options o;
  o.tag = tag;
  o.producers = producers;
  o.consumers = consumers;
  o.record_bytes = g.record_bytes;
  o.shape_tag = 0xc0ffee00u + g.record_bytes;
  o.package_steps = g.package_steps;
  o.package_envs = g.package_envs;
  o.packages_per_slot = per_slot;
  o.slots = 4;
  o.placement = placement;
  o.timeout = std::chrono::seconds(30);
  return o;
}

// Streams `rollouts` reference rollouts (or until an error when rollouts < 0) from a device buffer rewritten on the
// producer's stream before each send. Returns 0, or 0 on the expected comm_error when rollouts < 0.
inline int run_producer(const gmi::comm::channel_options& o, int rank, const geometry& g, int rollouts) {
  gmi::cuda::stream s;
  gmi::comm::channel_producer p(o, rank, s);
  gmi::cuda::device_buffer<std::uint32_t> rollout(std::size_t{g.steps} * g.envs * g.record_bytes / 4);
  try {
    // Rollout r carries reference data for rollout r: the consumer checks package index i (the producer's running
    // count) against rollout i / packages_per_rollout, so an endless producer must number its rollouts too.
    for (std::uint64_t r = 0; rollouts < 0 || r < static_cast<std::uint64_t>(rollouts); ++r) {
      const auto host = make_rollout(static_cast<std::uint32_t>(rank), r, g.steps, g.envs, g.record_bytes);
      // Ordered after the previous send's copies out of `rollout`: same stream.
      GMI_CUDA_TRY(cudaMemcpyAsync(rollout.data(), host.data(), host.size() * 4, cudaMemcpyHostToDevice, s));
      s.synchronize();  // `host` goes out of scope: the pageable copy must have read it
      p.send(rollout.data(), g.steps, g.envs);
    }
    p.close();
  } catch (const gmi::comm_error& e) {
    if (rollouts < 0) {
      std::printf("[producer %d] expected: %s\n", rank, e.what());
      return 0;
    }
    throw;
  }
  return 0;
}

struct gpu_consumed {
  std::size_t packages = 0, wrong = 0, duplicates = 0, zero_copy = 0, batches = 0;
};

// Drains a consumer; every batch is copied to the host on the consumer's stream and checked. With max_batches,
// stops after that many (the channel is left as is).
inline gpu_consumed run_consumer(gmi::comm::channel_consumer& c, cudaStream_t s, const geometry& g,
                                 std::size_t max_batches = ~std::size_t{0}) {
  gpu_consumed r;
  std::set<std::pair<std::uint32_t, std::uint64_t>> seen;
  std::vector<std::uint32_t> host;
  while (r.batches < max_batches) {
    auto b = c.next_batch();
    if (!b) break;
    ++r.batches;
    r.zero_copy += b->zero_copy();
    if (!b->on_device()) {
      std::printf("batch not in device memory\n");
      ++r.wrong;
    }
    host.resize(b->bytes() / 4);
    GMI_CUDA_TRY(cudaMemcpyAsync(host.data(), b->data(), b->bytes(), cudaMemcpyDeviceToHost, s));
    GMI_CUDA_TRY(cudaStreamSynchronize(s));
    for (std::uint32_t k = 0; k < b->packages(); ++k) {
      const auto [producer, index] = b->origins()[k];
      r.wrong += check_package(g, host.data() + k * g.package_bytes() / 4, producer, index);
      r.duplicates += !seen.emplace(producer, index).second;
      ++r.packages;
    }
  }
  return r;
}

}  // namespace gmi_test

#include "sync_runs.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "rl/thread_group.hpp"

#include <gmi/agents/gaussian_mlp.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/envs/cartpole.hpp>
#include <gmi/rl/ppo.cuh>

namespace {
using net = gmi::agents::gaussian_mlp<>::network<4, 1>;
using trainer = gmi::rl::ppo_trainer<gmi::envs::cartpole, net, gmi::exec::cuda>;

gmi::rl::ppo_config config(bool normalize_advantage) {
  gmi::rl::ppo_config c;
  c.minibatch = 1024;
  c.epochs = 4;
  c.normalize_advantage = normalize_advantage;
  return c;
}

std::vector<float> to_host(const float* p, std::size_t n) {
  std::vector<float> out(n);
  GMI_CUDA_TRY(cudaMemcpy(out.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
  return out;
}

gpu_snapshot snap(trainer& t) {
  t.synchronize();
  const auto l = t.losses();
  return {to_host(t.params().data(), t.params().size()), t.obs_normalizer().stats_on_host(),
          t.value_normalizer().stats_on_host(), l.learning_rate, l.approx_kl, to_host(t.rollout_view().obs, 16)};
}

// The device side of the group: the gradient row goes to the host, is summed there in rank order, and comes back.
gmi::rl::ppo_sync device_sync(gmi::test::thread_group& g, int rank) {
  gmi::rl::ppo_sync s = g.host_sync(rank);
  s.sum_device = [&g, rank](float* d, std::size_t n, CUstream_st* stream) {
    std::vector<float> h(n);
    GMI_CUDA_TRY(cudaMemcpyAsync(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    GMI_CUDA_TRY(cudaStreamSynchronize(stream));
    g.sum(rank, h.data(), n);
    GMI_CUDA_TRY(cudaMemcpyAsync(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
    GMI_CUDA_TRY(cudaStreamSynchronize(stream));
  };
  return s;
}
}  // namespace

std::vector<std::vector<gpu_snapshot>> run_gpu_group(const gpu_group_options& o) {
  gmi::test::thread_group group(o.world);
  std::vector<std::vector<gpu_snapshot>> out(static_cast<std::size_t>(o.world));
  group.run_ranks([&](int rank) {
    gmi::cuda::stream stream;
    trainer t(o.envs, o.same_seed ? 7 : 100 + static_cast<std::uint64_t>(rank), config(o.normalize_advantage), {},
              gmi::exec::cuda{.stream = stream.get()});
    if (o.mode == gpu_sync_mode::replayed_alone) {
      gmi::rl::ppo_sync s = group.host_sync(rank);
      s.sum_device = [](float*, std::size_t, CUstream_st*) {};  // a world of one: nothing to add
      s.replayed = [&o, want = stream.get()](std::size_t calls, CUstream_st* st) {
        if (st != want) throw gmi::error("ppo_sync::replayed: got another stream than the trainer's");
        if (o.replays) o.replays->push_back(calls);
      };
      t.set_sync(s);
    } else if (o.mode != gpu_sync_mode::none) {
      gmi::rl::ppo_sync s = device_sync(group, rank);
      if (o.mode == gpu_sync_mode::no_gradient_sum) {
        s.sum_device = [real = s.sum_device, calls = 0](float* d, std::size_t n, CUstream_st* st) mutable {
          if (calls++ == 0) real(d, n, st);  // set_sync's weight broadcast
        };
      }
      t.set_sync(s);
    }
    for (int i = 0; i < o.iterations; ++i) {
      t.iterate();
      out[static_cast<std::size_t>(rank)].push_back(snap(t));
    }
  });
  return out;
}

double run_gpu_group_learning(int world, int envs, int group_minibatch, int iterations) {
  gmi::test::thread_group group(world);
  double best = 0;
  group.run_ranks([&](int rank) {
    gmi::cuda::stream stream;
    gmi::rl::ppo_config c;
    c.minibatch = (group_minibatch + world - 1) / world;
    trainer t(envs, 1 + 1000003ull * static_cast<std::uint64_t>(rank), c, {}, gmi::exec::cuda{.stream = stream.get()});
    if (world > 1) t.set_sync(device_sync(group, rank));
    double best_here = 0;
    for (int it = 0; it < iterations && best_here < 450; ++it) {
      t.iterate();
      if (it % 5 == 4) {
        const auto e = t.episodes();
        double pooled[2] = {e.return_sum, static_cast<double>(e.episodes)};
        if (world > 1) group.sum(rank, pooled, 2);
        if (pooled[1] >= 32) best_here = std::max(best_here, pooled[0] / pooled[1]);
      }
    }
    if (rank == 0) best = best_here;
  });
  return best;
}

std::vector<gpu_snapshot> run_gpu_plain(int envs, std::uint64_t seed, int iterations, bool normalize_advantage) {
  gmi::cuda::stream stream;
  trainer t(envs, seed, config(normalize_advantage), {}, gmi::exec::cuda{.stream = stream.get()});
  std::vector<gpu_snapshot> out;
  for (int i = 0; i < iterations; ++i) {
    t.iterate();
    out.push_back(snap(t));
  }
  return out;
}

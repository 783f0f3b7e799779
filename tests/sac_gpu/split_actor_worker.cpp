// gmi.test.split_actor_worker: the actor GMI of sac_gpu.split_transport_lost_actor, a process of its own (CUDA IPC
// into the learner's memory). Usage: gmi.test.split_actor_worker <tag> <rounds>: sends `rounds` rounds and reads
// each round's weights, then writes half of the next round into its buffer and SIGKILLs itself (lost mid-write).
// Exit: 2 wrong weights, 3 an error (killed by SIGKILL when all went right).
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sac_gpu/split_transport.hpp"
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/check.hpp>

int main(int argc, char** argv) {
  if (argc != 3) return 3;
  try {
    GMI_CUDA_TRY(cudaSetDevice(0));
    const auto s = sac_gpu::lost_actor_spec(argv[1]);
    const auto rounds = std::uint64_t(std::atoll(argv[2]));
    cudaStream_t stream = nullptr;
    GMI_CUDA_TRY(cudaStreamCreate(&stream));
    gmi::detail::split_channels_actor actor(s, 1, stream);
    const std::size_t n = std::size_t(s.envs) * s.steps * s.row_floats;
    gmi::cuda::device_buffer<float> rows(n), w(s.weight_floats);
    std::vector<float> host(n), wh(s.weight_floats);
    for (std::uint64_t r = 0; r <= rounds; ++r) {
      for (std::size_t i = 0; i < n; ++i) host[i] = sac_gpu::lost_actor_row(r, i);
      const std::size_t part = r < rounds ? n : n / 2;
      GMI_CUDA_TRY(cudaMemcpyAsync(rows.data(), host.data(), part * sizeof(float), cudaMemcpyHostToDevice, stream));
      GMI_CUDA_TRY(cudaStreamSynchronize(stream));
      if (r == rounds) ::raise(SIGKILL);  // lost mid-write: half of this round in its buffer, nothing sent
      actor.send(rows.data(), {}, r);
      actor.read_weights(w.data(), r + 1);
      GMI_CUDA_TRY(cudaMemcpy(wh.data(), w.data(), wh.size() * sizeof(float), cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < wh.size(); ++i)
        if (wh[i] != sac_gpu::lost_actor_weight(r + 1, i)) return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[split actor worker] %s\n", e.what());
    return 3;
  }
  return 3;
}

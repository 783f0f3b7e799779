// gmi.test.channel_worker: one GMI of a channel GPU test, started as its own process (MPS-style GMIs: CUDA IPC
// between the processes of one GPU, pinned shared memory otherwise).
// Usage: gmi.test.channel_worker role=producer|consumer|weights_reader tag=T placement=device|pinned
//        [producers=1] [consumers=1] [rank=0] [rollouts=4] [per_slot=2] [per_batch=3] [expect_packages=-1]
// rollouts=-1: a producer streams until the channel fails (exit 0 on that comm_error).
// Exit: 0 right; 2 wrong data; 3 unexpected error.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "channel_gpu/gpu_channel_roles.hpp"
#include <gmi/cuda/device.hpp>

static int worker_main(int argc, char** argv) {
  std::map<std::string, std::string> a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    const auto eq = s.find('=');
    if (eq != std::string::npos) a[s.substr(0, eq)] = s.substr(eq + 1);
  }
  auto num = [&](const char* k, long long d) { return a.count(k) ? std::stoll(a[k]) : d; };
  const auto placement = a["placement"] == "pinned" ? gmi::comm::payload_placement::pinned : gmi::comm::payload_placement::device;
  const gmi_test::geometry g{16, 64, 40, 4, 16};
  const int rank = static_cast<int>(num("rank", 0));
  try {
    GMI_CUDA_TRY(cudaSetDevice(0));
    const auto o = gmi_test::gpu_options(a["tag"], placement, static_cast<int>(num("producers", 1)),
                                         static_cast<int>(num("consumers", 1)), g, static_cast<std::uint32_t>(num("per_slot", 2)));
    if (a["role"] == "producer") return gmi_test::run_producer(o, rank, g, static_cast<int>(num("rollouts", 4)));
    if (a["role"] == "consumer") {
      gmi::cuda::stream s;
      gmi::comm::channel_consumer c(o, rank, static_cast<std::uint32_t>(num("per_batch", 3)), s);
      const auto r = gmi_test::run_consumer(c, s, g);
      std::printf("[consumer %d] %zu packages, %zu wrong, %zu duplicates, %zu zero-copy batches\n", rank, r.packages,
                  r.wrong, r.duplicates, r.zero_copy);
      const long long expect = num("expect_packages", -1);
      return r.wrong == 0 && r.duplicates == 0 && (expect < 0 || r.packages == static_cast<std::size_t>(expect)) ? 0 : 2;
    }
    if (a["role"] == "weights_reader") {
      gmi::comm::weights_options w;
      w.tag = a["tag"];
      w.bytes = std::size_t{1} << 20;
      w.readers = 1;
      w.placement = placement;
      w.timeout = std::chrono::seconds(30);
      gmi::comm::weights_reader reader(w);
      gmi::cuda::device_buffer<std::uint32_t> dst(w.bytes / 4);
      gmi::cuda::stream s;
      std::vector<std::uint32_t> host(w.bytes / 4);
      std::uint64_t have = 0;
      std::size_t bad = 0;
      const auto last = static_cast<std::uint64_t>(num("versions", 50));
      while (have < last) {
        have = reader.wait_newer(dst.data(), have, s);
        GMI_CUDA_TRY(cudaMemcpy(host.data(), dst.data(), w.bytes, cudaMemcpyDeviceToHost));
        for (std::size_t i = 0; i < host.size(); ++i) bad += host[i] != static_cast<std::uint32_t>(have * 7919 + i);
      }
      std::printf("[weights reader] reached version %llu, %zu wrong words\n", static_cast<unsigned long long>(have), bad);
      return bad == 0 ? 0 : 2;
    }
    std::fprintf(stderr, "gmi.test.channel_worker: role: got \"%s\", need producer, consumer or weights_reader\n", a["role"].c_str());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[worker %s %d] %s\n", a["role"].c_str(), rank, e.what());
    return 3;
  }
}

// Every return of the worker, then its CUDA contexts torn down: the driver's file for the interprocess events it
// exported (cuda.shm.*) is removed only that way (docs/runtime.md).
int main(int argc, char** argv) {
  const int rc = worker_main(argc, argv);
  gmi::cuda::release_primary_contexts();
  return rc;
}

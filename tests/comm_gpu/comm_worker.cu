// gmi.test.comm_worker: one GMI of a hierarchical-allreduce test, started as its own process by the GPU tests
// (MPS-style GMIs: one process each, CUDA IPC between those of a GPU, NCCL between the GPUs' leaders).
// Usage: gmi.test.comm_worker tag=T gpus=n per_gpu=m rank=r sizes=a,b,c [rounds=2] [timeout_ms=20000]
//        [mismatch_rank=-1] [die_rank=-1] [die_round=0] [handshake=automatic|host|device|kernel] [blocking=1]
//        [expect_handshake=host|device] (exit 4 when the group chose another)
//        [copy_back=1] (0: the sum is checked where result() points: the leader's buffer)
//        [copy_back_rank=-1] (this rank asks for the opposite copy_back: every GMI of its GPU must fail)
//        [reduce=automatic|leader|every_gmi|lanes] [expect_reduce=leader|every_gmi|lanes] (exit 4 when the group chose
//        another; lanes: with several GPUs every GMI builds its lane, the NCCL communicator of its local rank)
//        [reduce_rank=-1] (this rank asks for the other reducer: every GMI of its GPU must fail)
//        [expect_error=0] (1: the arguments themselves must be refused: exit 0 only on an error)
//        [graph=0] (1: blocking=0 only; after one eager round, the rounds are captured two to a CUDA graph and the
//        graph replayed, the round number in device memory; then one more eager round)
//        [exchange=0] (1: blocking=0, kernel handshake or one GMI per GPU: besides allreduce calls, rounds of the row
//        exchange inside a kernel (comm::row_exchange, with several GPUs its level across them,
//        comm::row_exchange_across_gpus): eagerly, then from replays of a two-round graph, then after one more
//        allreduce call one more eagerly; every GMI checks the group's sum in the kernel)
//        [exchange_skip_rank=-1] (this rank calls no exchange: the others' waits must give up and say so)
//        [inbox=automatic|peer_to_peer|host] (several GPUs: where the GPUs' sums meet; exit 4 when the group chose
//        other than expect_inbox=, or probed the peer inboxes (1) or not (0) other than expect_probed=)
//        [fail_probe_rank=-1] (this rank's probe of the peer inboxes reports a failure: the group falls back to host)
//        [device=rank / per_gpu] (the CUDA ordinal to bind: 0 where the test narrows CUDA_VISIBLE_DEVICES to the
//        worker's GPU, as MPS does)
//        [chunk_bytes=0] (hierarchical_options::chunk_bytes)
//        [impl=peer] (comm::peer_allreduce instead: one kernel a GMI over peer device memory; sizes, rounds,
//        copy_back, graph, mismatch_rank, die_rank/die_round and timeout_ms as above; blocks=, chunk_floats=,
//        producer_warps=, early_launch=0|1 set the peer_allreduce_options fields of those names)
// Exit: 0 all sums right (or, when a fault is injected, the expected error seen); 2 wrong sums; 3 unexpected error.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gmi/comm/hierarchical.cuh>
#include <gmi/comm/peer_allreduce.cuh>
#include <gmi/comm/row_exchange.cuh>
#include <gmi/cuda/device.hpp>

namespace {
// round_at: where the round is read (graph replays), else `round`.
__global__ void fill(float* x, std::size_t n, int rank, int round, const int* round_at = nullptr) {
  if (round_at) round = *round_at;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    x[i] = static_cast<float>(rank + 1) + 0.25f * static_cast<float>(i % 7) + static_cast<float>(round);
  }
}
// Every value is a multiple of 0.25 below 2^20, so the sums are exact in fp32 whatever the order.
__global__ void count_wrong(const float* x, std::size_t n, int ranks, int round, unsigned long long* wrong,
                            const int* round_at = nullptr) {
  if (round_at) round = *round_at;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    const float want = static_cast<float>(ranks * (ranks + 1) / 2) +
                       static_cast<float>(ranks) * (0.25f * static_cast<float>(i % 7) + static_cast<float>(round));
    if (x[i] != want) atomicAdd(wrong, 1ull);
  }
}
__global__ void next_round(int* round) { *round += 1; }

// One call of the row exchange in one block: this GMI's row (fill's values for global rank `me`), then every
// GMI's row summed in the kernel (the GPU's sum, then with a level across GPUs every GPU's) and checked.
// round_at: where the round is read (graph replays), else `round`. gpu_sums: `count` floats of scratch.
__global__ void exchange_round(gmi::comm::row_exchange x, float* mine, float* gpu_sums, int me, int round,
                               const int* round_at, unsigned long long* wrong) {
  __shared__ std::uint32_t scratch[2];
  if (round_at) round = *round_at;
  std::uint32_t g = 0;
  if (!gmi::comm::exchange_begin(x, g, scratch)) return;
  for (std::size_t i = threadIdx.x; i < x.count; i += blockDim.x)
    mine[i] = static_cast<float>(me + 1) + 0.25f * static_cast<float>(i % 7) + static_cast<float>(round);
  if (!gmi::comm::exchange_post(x, g, scratch)) return;
  for (std::size_t i = threadIdx.x; i < x.count; i += blockDim.x) gpu_sums[i] = gmi::comm::exchange_gpu_sum(x, g, i);
  if (!gmi::comm::exchange_across(x, g, x.count)) return;
  unsigned long long w = 0;
  const int ranks = x.members();
  for (std::size_t i = threadIdx.x; i < x.count; i += blockDim.x) {
    const float s = gmi::comm::exchange_total(x, g, i, gpu_sums[i]);
    const float want = static_cast<float>(ranks * (ranks + 1) / 2) +
                       static_cast<float>(ranks) * (0.25f * static_cast<float>(i % 7) + static_cast<float>(round));
    if (s != want) ++w;
  }
  gmi::comm::exchange_release(x, g);
  if (w) atomicAdd(wrong, w);
}
}  // namespace

// impl=peer: every size, `rounds` eager rounds (fill, allreduce, bounded wait, check where result() points), then
// with graph=1 two-round graphs replayed `rounds` times and one more eager round.
// settings: the peer allreduce's tuning fields (blocks, chunk_floats, producer_warps, early_launch).
static std::size_t peer_rounds(const std::string& tag, int gpus, int per_gpu, int rank, int rounds, bool copy_back,
                               bool graph, int mismatch_rank, int die_rank, int die_round,
                               gmi::comm::milliseconds timeout, const std::vector<std::size_t>& sizes,
                               const gmi::comm::peer_allreduce_options& settings) {
  const int world = gpus * per_gpu;
  gmi::cuda::stream stream;
  gmi::cuda::device_buffer<unsigned long long> wrong(1);
  std::size_t total_wrong = 0;
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const std::size_t count = sizes[s] + (rank == mismatch_rank ? 1 : 0);
    gmi::cuda::device_buffer<float> buf(count);
    gmi::comm::peer_allreduce_options o = settings;
    o.tag = tag + "-peer-s" + std::to_string(s);
    o.rank = rank;
    o.gpus = gpus;
    o.world = world;
    o.copy_back = copy_back;
    o.timeout = timeout;
    gmi::comm::peer_allreduce p(o, buf.data(), count);
    if (rank == 0) std::fprintf(stderr, "[worker 0] peer allreduce, %zu floats: %u blocks a GMI, %d chunks\n", count, p.blocks(), p.chunks());
    const auto tally = [&](const char* what, int round) {
      unsigned long long w = 0;
      GMI_CUDA_TRY(cudaMemcpyAsync(&w, wrong.data(), sizeof w, cudaMemcpyDeviceToHost, stream));
      stream.synchronize();
      if (w) std::fprintf(stderr, "[worker %d] %zu floats %s %d: %llu wrong\n", rank, count, what, round, w);
      total_wrong += w;
    };
    const auto eager_round = [&](int round) {
      if (rank == die_rank && round == die_round) ::raise(SIGKILL);
      fill<<<256, 256, 0, stream>>>(buf.data(), count, rank, round);
      p.allreduce(stream);
      p.wait(stream);
      wrong.fill_bytes(0, stream);
      count_wrong<<<256, 256, 0, stream>>>(p.result(), count, world, round, wrong.data());
      tally("round", round);
    };
    for (int round = 0; round < rounds; ++round) eager_round(round);
    if (graph) {
      gmi::cuda::device_buffer<int> round_at(1);
      const int first = rounds;
      GMI_CUDA_TRY(cudaMemcpyAsync(round_at.data(), &first, sizeof first, cudaMemcpyHostToDevice, stream));
      wrong.fill_bytes(0, stream);
      const gmi::cuda::graph_exec replay = gmi::cuda::instantiate(gmi::cuda::capture(stream, [&](cudaStream_t cs) {
        for (int k = 0; k < 2; ++k) {
          fill<<<256, 256, 0, cs>>>(buf.data(), count, rank, 0, round_at.data());
          p.allreduce(cs);
          count_wrong<<<256, 256, 0, cs>>>(p.result(), count, world, 0, wrong.data(), round_at.data());
          next_round<<<1, 1, 0, cs>>>(round_at.data());
        }
      }));
      for (int r = 0; r < rounds; ++r) {
        replay.launch(stream);
        p.wait(stream);
      }
      tally("graph replays", rounds);
      eager_round(3 * rounds);
    }
  }
  return total_wrong;
}

static int worker_main(int argc, char** argv) {
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  std::map<std::string, std::string> a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    const auto eq = s.find('=');
    if (eq != std::string::npos) a[s.substr(0, eq)] = s.substr(eq + 1);
  }
  auto num = [&](const char* k, long long d) { return a.count(k) ? std::stoll(a[k]) : d; };
  const std::string tag = a["tag"];
  const int gpus = static_cast<int>(num("gpus", 1)), per_gpu = static_cast<int>(num("per_gpu", 1));
  const int rank = static_cast<int>(num("rank", 0)), rounds = static_cast<int>(num("rounds", 2));
  const int mismatch_rank = static_cast<int>(num("mismatch_rank", -1));
  const int die_rank = static_cast<int>(num("die_rank", -1)), die_round = static_cast<int>(num("die_round", 0));
  const bool exchange = num("exchange", 0) != 0;
  const int exchange_skip_rank = static_cast<int>(num("exchange_skip_rank", -1));
  const auto timeout = gmi::comm::milliseconds(num("timeout_ms", 20000));
  const bool fault = num("expect_error", 0) != 0 || mismatch_rank >= 0 || die_rank >= 0 || a.count("copy_back_rank") > 0 ||
                     a.count("reduce_rank") > 0 ||
                     exchange_skip_rank >= 0;
  const std::string reduce = a.count("reduce") ? a["reduce"] : "automatic";
  const std::string expect_reduce = a["expect_reduce"];
  const int reduce_rank = static_cast<int>(num("reduce_rank", -1));
  const std::string handshake = a.count("handshake") ? a["handshake"] : "automatic";
  const bool blocking = num("blocking", 1) != 0;
  const bool graph = num("graph", 0) != 0;
  const std::string expect_handshake = a["expect_handshake"];
  const int copy_back_rank = static_cast<int>(num("copy_back_rank", -1));
  const bool copy_back = (num("copy_back", 1) != 0) != (rank == copy_back_rank);
  std::vector<std::size_t> sizes;
  {
    std::stringstream ss(a["sizes"]);
    for (std::string t; std::getline(ss, t, ',');) sizes.push_back(std::stoull(t));
  }
  const int gpu = rank / per_gpu, local = rank % per_gpu, world = gpus * per_gpu;
  try {
    GMI_CUDA_TRY(cudaSetDevice(static_cast<int>(num("device", gpu))));
    if (a["impl"] == "peer") {
      gmi::comm::peer_allreduce_options settings;
      settings.blocks = static_cast<unsigned>(num("blocks", 0));
      settings.chunk_floats = static_cast<std::size_t>(num("chunk_floats", 0));
      settings.producer_warps = static_cast<unsigned>(num("producer_warps", 0));
      settings.early_launch = num("early_launch", 1) != 0;
      const std::size_t w = peer_rounds(tag, gpus, per_gpu, rank, rounds, copy_back, graph, mismatch_rank, die_rank,
                                        die_round, timeout, sizes, settings);
      if (fault) {
        std::fprintf(stderr, "[worker %d] no error although a fault was injected\n", rank);
        return 3;
      }
      return w ? 2 : 0;
    }
    std::unique_ptr<gmi::comm::nccl_communicator> leaders;
    std::optional<gmi::comm::nccl_id_exchange> ids;
    const bool lanes = reduce == "lanes";
    if (gpus > 1 && (local == 0 || lanes)) {  // the leaders' communicator, or with lanes this GMI's lane
      const std::string id_tag = tag + "-ncclid" + (lanes ? "-lane" + std::to_string(local) : "");
      gmi::comm::nccl_id id;
      if (gpu == 0) {
        ids = gmi::comm::nccl_id_exchange::create(id_tag);
        id = gmi::comm::nccl_id::generate();
        ids->publish(id, 1);
      } else {
        ids = gmi::comm::nccl_id_exchange::open(id_tag, timeout);
        id = ids->receive(1, timeout);
      }
      gmi::comm::nccl_options no{timeout};
      if (lanes) no.max_ctas = gmi::comm::lane_max_ctas(per_gpu);
      leaders = std::make_unique<gmi::comm::nccl_communicator>(gpus, id, gpu, no);
    }
    gmi::cuda::stream stream;
    gmi::cuda::device_buffer<unsigned long long> wrong(1);
    std::size_t total_wrong = 0;
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      const std::size_t count = sizes[s] + (rank == mismatch_rank ? 1 : 0);
      gmi::cuda::device_buffer<float> buf(count);
      gmi::comm::hierarchical_options o;
      o.tag = tag + "-g" + std::to_string(gpu) + "-s" + std::to_string(s);
      o.local_rank = local;
      o.local_size = per_gpu;
      o.mode = gmi::comm::sharing::ipc;
      o.timeout = timeout;
      o.blocking = blocking;
      o.copy_back = copy_back;
      o.chunk_bytes = static_cast<std::size_t>(num("chunk_bytes", 0));
      o.reduce = reduce == "leader"      ? gmi::comm::reducer::leader
                 : reduce == "every_gmi" ? gmi::comm::reducer::every_gmi
                 : lanes                 ? gmi::comm::reducer::lanes
                                         : gmi::comm::reducer::automatic;
      if (rank == reduce_rank) {
        o.reduce = reduce == "leader" ? gmi::comm::reducer::every_gmi : gmi::comm::reducer::leader;
      }
      o.sync = handshake == "host"     ? gmi::comm::handshake::host
               : handshake == "device" ? gmi::comm::handshake::device
               : handshake == "kernel" ? gmi::comm::handshake::kernel
                                       : gmi::comm::handshake::automatic;
      gmi::comm::hierarchical_allreduce h(o, buf.data(), count, leaders.get());
      const char* chosen = h.sync() == gmi::comm::handshake::device   ? "device"
                           : h.sync() == gmi::comm::handshake::kernel ? "kernel"
                                                                      : "host";
      if (s == 0 && rank == 0) std::fprintf(stderr, "[worker 0] handshake %s\n", chosen);
      if (!expect_handshake.empty() && per_gpu > 1 && expect_handshake != chosen) {
        std::fprintf(stderr, "[worker %d] handshake %s, expected %s\n", rank, chosen, expect_handshake.c_str());
        return 4;
      }
      const char* by = h.reduced_by() == gmi::comm::reducer::every_gmi ? "every_gmi"
                       : h.reduced_by() == gmi::comm::reducer::lanes   ? "lanes"
                                                                       : "leader";
      if (s == 0 && rank == 0) std::fprintf(stderr, "[worker 0] reduced by %s\n", by);
      if (!expect_reduce.empty() && per_gpu > 1 && expect_reduce != by) {
        std::fprintf(stderr, "[worker %d] reduced by %s, expected %s\n", rank, by, expect_reduce.c_str());
        return 4;
      }
      const auto eager_round = [&](int round) {
        if (rank == die_rank && round == die_round) ::raise(SIGKILL);
        fill<<<256, 256, 0, stream>>>(buf.data(), count, rank, round);
        h.allreduce(stream);
        wrong.fill_bytes(0, stream);
        count_wrong<<<256, 256, 0, stream>>>(h.result(), count, world, round, wrong.data());
        unsigned long long w = 0;
        GMI_CUDA_TRY(cudaMemcpyAsync(&w, wrong.data(), sizeof w, cudaMemcpyDeviceToHost, stream));
        stream.synchronize();
        if (w) std::fprintf(stderr, "[worker %d] %zu floats round %d: %llu wrong\n", rank, count, round, w);
        total_wrong += w;
      };
      if (exchange) {  // allreduce, exchanges, replayed exchanges, allreduce, exchange: all must agree
        eager_round(0);
        std::optional<gmi::comm::row_exchange_across_gpus> across;
        if (gpus > 1) {
          gmi::comm::row_exchange_across_gpus_options ao;
          ao.tag = tag + "-across-s" + std::to_string(s);
          ao.rank = rank;
          ao.gpu = gpu;
          ao.gpus = gpus;
          ao.world = world;
          ao.count = count;
          ao.timeout = timeout;
          ao.memory = a["inbox"] == "host"           ? gmi::comm::inbox_memory::host
                      : a["inbox"] == "peer_to_peer" ? gmi::comm::inbox_memory::peer_to_peer
                                                     : gmi::comm::inbox_memory::automatic;
          ao.fail_probe_rank = static_cast<int>(num("fail_probe_rank", -1));
          across.emplace(ao);
          const char* where = across->memory() == gmi::comm::inbox_memory::host ? "host" : "peer_to_peer";
          if (s == 0 && rank == 0) {
            std::fprintf(stderr, "[worker 0] inboxes in %s memory%s\n", where, across->probed() ? " (probed)" : "");
          }
          if (!a["expect_inbox"].empty() && a["expect_inbox"] != where) {
            std::fprintf(stderr, "[worker %d] inboxes in %s memory, expected %s\n", rank, where, a["expect_inbox"].c_str());
            return 4;
          }
          if (!a["expect_probed"].empty() && (a["expect_probed"] == "1") != across->probed()) {
            std::fprintf(stderr, "[worker %d] probed %d, expected %s\n", rank, across->probed() ? 1 : 0,
                         a["expect_probed"].c_str());
            return 4;
          }
        }
        const auto check_across = [&] {
          if (across) across->check();
        };
        const std::optional<gmi::comm::row_exchange> x = h.row_exchange(across ? &*across : nullptr);
        if (!x || !x->valid()) {
          std::fprintf(stderr, "[worker %d] exchange=1: no row exchange on this group\n", rank);
          return 3;
        }
        gmi::cuda::device_buffer<float> gpu_sums(count);
        if (rank != exchange_skip_rank) {
          wrong.fill_bytes(0, stream);
          for (int round = 1; round <= rounds; ++round) {
            exchange_round<<<1, 256, 0, stream>>>(*x, buf.data(), gpu_sums.data(), rank, round, nullptr, wrong.data());
          }
          gmi::cuda::device_buffer<int> round_at(1);
          const int first = rounds + 1;
          GMI_CUDA_TRY(cudaMemcpyAsync(round_at.data(), &first, sizeof first, cudaMemcpyHostToDevice, stream));
          const gmi::cuda::graph_exec replay = gmi::cuda::instantiate(gmi::cuda::capture(stream, [&](cudaStream_t s) {
            for (int k = 0; k < 2; ++k) {
              exchange_round<<<1, 256, 0, s>>>(*x, buf.data(), gpu_sums.data(), rank, 0, round_at.data(), wrong.data());
              next_round<<<1, 1, 0, s>>>(round_at.data());
            }
          }));
          for (int r = 0; r < rounds; ++r) {
            replay.launch(stream);
            h.replayed(0, stream);
            check_across();
          }
          h.wait(stream);
          check_across();
          unsigned long long w = 0;
          GMI_CUDA_TRY(cudaMemcpyAsync(&w, wrong.data(), sizeof w, cudaMemcpyDeviceToHost, stream));
          stream.synchronize();
          if (w) std::fprintf(stderr, "[worker %d] %zu floats, exchanges: %llu wrong\n", rank, count, w);
          total_wrong += w;
          eager_round(3 * rounds + 1);
          wrong.fill_bytes(0, stream);
          exchange_round<<<1, 256, 0, stream>>>(*x, buf.data(), gpu_sums.data(), rank, 3 * rounds + 2, nullptr,
                                                wrong.data());
          h.wait(stream);
          check_across();
          GMI_CUDA_TRY(cudaMemcpyAsync(&w, wrong.data(), sizeof w, cudaMemcpyDeviceToHost, stream));
          stream.synchronize();
          if (w) std::fprintf(stderr, "[worker %d] %zu floats, last exchange: %llu wrong\n", rank, count, w);
          total_wrong += w;
        }
      } else if (!graph) {
        for (int round = 0; round < rounds; ++round) eager_round(round);
      } else {  // round 0 eagerly; rounds 1 .. 2 * rounds from replays of a two-round graph; one more eagerly
        eager_round(0);
        if (!h.replayable()) std::fprintf(stderr, "[worker %d] graph=1: not replayable, capture must fail\n", rank);
        gmi::cuda::device_buffer<int> round_at(1);
        const int one = 1;
        GMI_CUDA_TRY(cudaMemcpyAsync(round_at.data(), &one, sizeof one, cudaMemcpyHostToDevice, stream));
        wrong.fill_bytes(0, stream);
        const gmi::cuda::graph_exec replay = gmi::cuda::instantiate(gmi::cuda::capture(stream, [&](cudaStream_t s) {
          for (int k = 0; k < 2; ++k) {
            fill<<<256, 256, 0, s>>>(buf.data(), count, rank, 0, round_at.data());
            h.allreduce(s);
            count_wrong<<<256, 256, 0, s>>>(h.result(), count, world, 0, wrong.data(), round_at.data());
            next_round<<<1, 1, 0, s>>>(round_at.data());
          }
        }));
        for (int r = 0; r < rounds; ++r) {
          replay.launch(stream);
          h.replayed(2, stream);
        }
        unsigned long long w = 0;
        GMI_CUDA_TRY(cudaMemcpyAsync(&w, wrong.data(), sizeof w, cudaMemcpyDeviceToHost, stream));
        h.wait(stream);
        if (w) std::fprintf(stderr, "[worker %d] %zu floats, %d graph replays: %llu wrong\n", rank, count, rounds, w);
        total_wrong += w;
        eager_round(2 * rounds + 1);
      }
      if (!blocking) h.wait(stream);
      // Nobody frees a buffer another GMI of the GPU still maps: a world-wide step before the next size.
      std::vector<float> one(1, 1.f);
      static std::optional<gmi::comm::ip_allreduce> world_group;
      if (!world_group) {
        world_group = rank == 0 ? gmi::comm::ip_allreduce::create(tag + "-world", world, 64)
                                : gmi::comm::ip_allreduce::open(tag + "-world", rank, timeout);
      }
      world_group->allreduce<float>(one, timeout);
    }
    if (fault) {
      std::fprintf(stderr, "[worker %d] no error although a fault was injected\n", rank);
      return 3;
    }
    return total_wrong ? 2 : 0;
  } catch (const gmi::error& e) {
    std::fprintf(stderr, "[worker %d] %s\n", rank, e.what());
    return fault ? 0 : 3;
  }
}

// Every return of the worker, then its CUDA contexts torn down: the driver's file for the interprocess events it
// exported (cuda.shm.*) is removed only that way (docs/runtime.md).
int main(int argc, char** argv) {
  const int rc = worker_main(argc, argv);
  gmi::cuda::release_primary_contexts();
  return rc;
}

#pragma once
// comm::row_exchange_across_gpus: the second level of a row exchange (comm::row_exchange), where the GPUs of one
// host meet inside their step kernels with no NCCL call between the steps. Each GPU has an inbox: per GPU, two
// slots of `count` tagged entries (a float and its call's generation in one 64-bit word; calls alternate between
// the slots). The inboxes live
//   peer_to_peer: in each GPU's device memory (its first GMI allocates it; every GMI maps every inbox through CUDA
//                 IPC with peer access, also where its process sees only its own GPU), so a GPU's sum travels over
//                 NVLink and each GMI polls its own GPU's memory;
//   host:         in one block of pinned shared memory every GMI maps into its device's address space
//                 (cudaHostRegister), where every GPU writes (asked for, or the peer inboxes failed the probe). Only each
//                 GPU's first GMI polls it: it copies the entries it sees into its GPU's relay (device memory it
//                 allocates, mapped by the GPU's other GMIs through CUDA IPC), where those GMIs poll.
// A stall word in mapped host memory, which any GMI's kernel sets when a wait gave up and the host sets when the
// group broke, stops every kernel at its next wait.
//
// Every GMI builds one with the same tag, GPU count, GMI count and row size; GMI 0 creates the segment, the
// others open it; every wait is bounded. With `automatic` the GMIs vote: peer_to_peer when every GMI's device
// reaches every other visible device; else (a GMI sees only its own GPU, as MPS clients do) a probe: each GPU's
// first GMI allocates its inbox, every GMI maps every inbox through CUDA IPC (legal for a peer GPU this process
// does not see) and each GPU's first GMI writes a probe word into every other GPU's inbox, which every GMI reads
// back in its own GPU's inbox; peer_to_peer when every GMI mapped and read everything, else host (`peer_to_peer`
// asked for then fails with one line). attach() adds the level to a GPU's row exchange
// (comm::hierarchical_allreduce::row_exchange(&across)); check() after each replay throws if any GMI's kernel
// stalled or any GMI's process is gone.

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <gmi/comm/device_share.hpp>
#include <gmi/comm/ip_allreduce.hpp>
#include <gmi/comm/shm_segment.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/core/choice.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/comm/row_exchange.hpp>

namespace gmi::comm {

// Where the GPUs' inboxes live.
enum class inbox_memory { automatic, peer_to_peer, host };
inline constexpr choice_table<inbox_memory, 3> inbox_memory_names{
    {{"automatic", inbox_memory::automatic}, {"peer_to_peer", inbox_memory::peer_to_peer}, {"host", inbox_memory::host}}};

struct row_exchange_across_gpus_options {
  std::string tag;        // the same on every GMI of the run's host, unique per run
  int rank = 0;           // this GMI among every GMI of the host (0 creates the segment)
  int gpu = 0;            // this GMI's GPU among the host's GPUs
  int gpus = 2;           // GPUs taking part (2 .. comm::row_exchange::max_gpus)
  int world = 2;          // GMIs over every GPU (equal on each GPU)
  std::size_t count = 0;  // floats in a row
  inbox_memory memory = inbox_memory::automatic;  // every GMI must ask for the same
  milliseconds timeout = default_timeout();
  int fail_probe_rank = -1;  // fault injection (tests): this GMI reports that its probe of the peer inboxes failed
};

namespace detail {
inline constexpr std::size_t across_page = 4096;
struct across_control {
  group_control group;  // pids, broken flag and reason
  std::uint32_t gpus = 0, world = 0, memory = 0;
  std::uint64_t count = 0, stride = 0;
  std::atomic<std::uint32_t> voted;       // GMIs that said whether they reach every other device
  std::atomic<std::uint32_t> cannot;      // of those, the ones that do not
  std::atomic<std::uint32_t> decided;     // 0 until GMI 0 decides; then 1 + inbox_memory, or across_probing
  std::atomic<std::uint32_t> inbox_ready[comm::row_exchange::max_gpus];
  ipc_buffer_handle inbox[comm::row_exchange::max_gpus];
  std::atomic<std::uint32_t> let_go;      // GMIs that no longer map any other GMI's inbox
  std::atomic<std::uint32_t> probe_written;  // GMIs done mapping the inboxes (and, first GMIs, writing probes)
  std::atomic<std::uint32_t> probe_checked;  // GMIs that read the probe words in their GPU's inbox
  std::atomic<std::uint32_t> probe_failed;   // of those, the ones that could not map, write or read them
  std::atomic<std::uint32_t> settled;        // after a probe: 0 until GMI 0 decides; then 1 + inbox_memory
};
// `decided` when the GMIs do not all see each other's devices: probe the peer inboxes through CUDA IPC.
inline constexpr std::uint32_t across_probing = 16;
// An inbox: 2 x gpus slots of tagged entries (8 bytes each).
inline std::size_t across_stride(std::size_t count) { return (count + 31) / 32 * 32; }  // slots 256-byte aligned
inline std::size_t across_inbox_bytes(int gpus, std::size_t count) {
  return 2 * static_cast<std::size_t>(gpus) * across_stride(count) * sizeof(std::uint64_t);
}
// After an inbox's slots: one probe word a GPU (written by that GPU's first GMI during a probe), then the
// allocation rounded to 2 MiB (CUDA IPC shares whole allocations).
inline std::size_t across_probe_offset(int gpus, std::size_t count) { return (across_inbox_bytes(gpus, count) + 255) / 256 * 256; }
inline std::size_t across_allocation_bytes(int gpus, std::size_t count) {
  const std::size_t bytes = across_probe_offset(gpus, count) + static_cast<std::size_t>(gpus) * sizeof(std::uint64_t);
  return (bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20);
}
// GPU j's probe word: never 0 (a fresh inbox is zeroed) and different for every GPU.
inline constexpr std::uint64_t across_probe_word(int gpu) { return 0x676d6970726f6265ull ^ static_cast<std::uint64_t>(gpu + 1); }
// The mapped part of the segment, on a page boundary: one page for the stall word, then the host inbox.
inline std::size_t across_mapped_bytes(int gpus, std::size_t count) {
  return across_page + (across_inbox_bytes(gpus, count) + across_page - 1) / across_page * across_page;
}
inline std::size_t across_segment_bytes(int gpus, std::size_t count) {
  return sizeof(across_control) + across_page + across_mapped_bytes(gpus, count);
}
inline void* across_mapped_in(void* data) {
  const auto at = (reinterpret_cast<std::uintptr_t>(data) + sizeof(across_control) + across_page - 1) / across_page *
                  across_page;
  return reinterpret_cast<void*>(at);
}
// Whether the current device reaches every other visible device's memory.
inline bool reaches_every_device() {
  int me = 0, n = 0;
  if (cudaGetDevice(&me) != cudaSuccess || cudaGetDeviceCount(&n) != cudaSuccess || n < 2) return false;
  for (int d = 0; d < n; ++d) {
    int ok = 0;
    if (d != me && (cudaDeviceCanAccessPeer(&ok, me, d) != cudaSuccess || !ok)) return false;
  }
  return true;
}
}  // namespace detail

class row_exchange_across_gpus {
 public:
  explicit row_exchange_across_gpus(row_exchange_across_gpus_options o) : o_(std::move(o)) {
    require(o_.gpus >= 2 && o_.gpus <= comm::row_exchange::max_gpus, "row exchange across GPUs: gpus", o_.gpus,
            "2.." + std::to_string(comm::row_exchange::max_gpus));
    require(o_.world >= o_.gpus && o_.world <= max_group_ranks && o_.world % o_.gpus == 0,
            "row exchange across GPUs: GMIs", o_.world,
            "a multiple of " + std::to_string(o_.gpus) + " GPUs, at most " + std::to_string(max_group_ranks));
    require(o_.rank >= 0 && o_.rank < o_.world, "row exchange across GPUs: rank", o_.rank,
            "0.." + std::to_string(o_.world - 1));
    require(o_.gpu == o_.rank / per_gpu(), "row exchange across GPUs: GPU of rank " + std::to_string(o_.rank), o_.gpu,
            std::to_string(o_.rank / per_gpu()) + " (GMIs numbered GPU by GPU)");
    require(o_.count >= 1, "row exchange across GPUs: floats in a row", o_.count, ">= 1");
    const std::size_t bytes = detail::across_segment_bytes(o_.gpus, o_.count);
    if (o_.rank == 0) {
      segment_ = shm_segment::create(o_.tag, bytes, [&](void* p, std::size_t) {
        auto* c = new (p) detail::across_control{};
        c->group.ranks = static_cast<std::uint32_t>(o_.world);
        c->gpus = static_cast<std::uint32_t>(o_.gpus);
        c->world = static_cast<std::uint32_t>(o_.world);
        c->memory = static_cast<std::uint32_t>(o_.memory);
        c->count = o_.count;
        c->stride = detail::across_stride(o_.count);
      });
    } else {
      segment_ = shm_segment::open(o_.tag, o_.timeout);
    }
    barrier_ = detail::group_barrier(&c()->group, segment_.name());
    try {
      setup();
    } catch (const gmi::error& e) {
      barrier_.mark_broken(e.what());  // the other GMIs fail now, not at their timeout
      teardown(false);
      throw;
    }
  }
  row_exchange_across_gpus(const row_exchange_across_gpus&) = delete;
  row_exchange_across_gpus& operator=(const row_exchange_across_gpus&) = delete;
  ~row_exchange_across_gpus() { teardown(true); }

  [[nodiscard]] int gpus() const noexcept { return o_.gpus; }
  [[nodiscard]] int world() const noexcept { return o_.world; }
  [[nodiscard]] std::size_t count() const noexcept { return o_.count; }
  [[nodiscard]] const std::string& name() const noexcept { return segment_.name(); }
  // Where the group's inboxes are (the vote's outcome with automatic).
  [[nodiscard]] inbox_memory memory() const noexcept { return memory_; }
  // Whether the group probed the peer inboxes to decide (some GMI does not see every GPU, as with MPS).
  [[nodiscard]] bool probed() const noexcept { return probed_; }

  // Adds this level to x, a row exchange among the members of this GMI's GPU over rows of count() floats. The
  // stall word becomes this level's (one word for every GMI of the host); with one GMI per GPU it is also the
  // abort word the waits watch.
  void attach(comm::row_exchange& x) const {
    require(x.count == o_.count, "row exchange across GPUs: floats in the GPU's rows", x.count,
            std::to_string(o_.count) + " as in " + segment_.name());
    require(x.size == per_gpu(), "row exchange across GPUs: members on GPU " + std::to_string(o_.gpu), x.size,
            std::to_string(per_gpu()) + " (" + std::to_string(o_.world) + " GMIs over " + std::to_string(o_.gpus) +
                " GPUs)");
    x.gpu = o_.gpu;
    x.gpus = o_.gpus;
    x.world = o_.world;
    for (int t = 0; t < o_.gpus; ++t) x.inbox_entries[t] = static_cast<std::uint64_t*>(inbox_[t]);
    x.inbox_shared = memory_ == inbox_memory::host;
    if (relay_ && owns_inbox()) x.relay = static_cast<std::uint64_t*>(relay_);
    if (relay_ && !owns_inbox()) x.inbox_entries[o_.gpu] = static_cast<std::uint64_t*>(relay_);
    x.gpu_stride = detail::across_stride(o_.count);
    x.stalled = static_cast<std::uint32_t*>(device_mapped_);
    if (x.size == 1) x.abort = x.stalled;
  }

  // Throws comm_error when a GMI's kernel gave up waiting, the group was marked broken or a GMI's process is gone
  // (the processes are looked at every 64th call).
  void check() {
    barrier_.throw_if_broken();
    if (stall_word().load(std::memory_order_acquire) != 0) {
      const std::string why = segment_.name() + ": a step kernel gave up waiting for another GPU's sums (a GMI died, "
                              "stopped or fell more than the timeout behind)";
      barrier_.mark_broken(why);
      throw comm_error(why);
    }
    if (++checks_ % 64 == 0) {
      try {
        barrier_.check_peers();
      } catch (const gmi::error& e) {
        mark_broken(e.what());
        throw;
      }
    }
  }

  // Stops every GMI's kernel at its next wait (the stall word) and records why for the hosts.
  void mark_broken(const std::string& why) noexcept {
    if (mapped_) stall_word().store(1, std::memory_order_seq_cst);
    barrier_.mark_broken(why);
  }

 private:
  [[nodiscard]] int per_gpu() const noexcept { return o_.world / o_.gpus; }
  [[nodiscard]] bool owns_inbox() const noexcept { return o_.rank % per_gpu() == 0; }
  detail::across_control* c() const { return static_cast<detail::across_control*>(segment_.data()); }
  std::atomic<std::uint32_t>& stall_word() const { return *static_cast<std::atomic<std::uint32_t>*>(mapped_); }
  void wait_for(const std::function<bool()>& ready, const std::string& what) {
    bounded_wait([&] { return ready() || barrier_.broken(); }, [&] { barrier_.check_peers(); }, o_.timeout,
                 segment_.name() + ": " + what, long_wait());
    barrier_.throw_if_broken();
  }

  void setup() {
    auto* ctl = c();
    if (ctl->gpus != static_cast<std::uint32_t>(o_.gpus) || ctl->world != static_cast<std::uint32_t>(o_.world) ||
        ctl->count != o_.count || ctl->memory != static_cast<std::uint32_t>(o_.memory)) {
      throw config_error(got_need("row exchange across GPUs " + segment_.name() + " on GMI " + std::to_string(o_.rank),
                                  shape(o_.gpus, o_.world, o_.count, static_cast<std::uint32_t>(o_.memory)),
                                  shape(static_cast<int>(ctl->gpus), static_cast<int>(ctl->world), ctl->count,
                                        ctl->memory) + " as on GMI 0"));
    }
    ctl->group.pids[o_.rank].store(::getpid(), std::memory_order_release);
    mapped_ = detail::across_mapped_in(segment_.data());
    GMI_CUDA_TRY(cudaHostRegister(mapped_, detail::across_mapped_bytes(o_.gpus, o_.count),
                                  cudaHostRegisterMapped | cudaHostRegisterPortable));
    registered_ = true;
    GMI_CUDA_TRY(cudaHostGetDevicePointer(&device_mapped_, mapped_, 0));
    // The vote, then GMI 0's decision: every device reaches every other (peer_to_peer), host asked for or
    // impossible (host), or a probe of the peer inboxes through CUDA IPC.
    const bool reach = o_.memory != inbox_memory::host && detail::reaches_every_device();
    if (!reach) ctl->cannot.fetch_add(1, std::memory_order_acq_rel);
    ctl->voted.fetch_add(1, std::memory_order_acq_rel);
    if (o_.rank == 0) {
      wait_for([&] { return ctl->voted.load(std::memory_order_acquire) == ctl->world; }, "waiting for every GMI's vote");
      const bool all = ctl->cannot.load(std::memory_order_acquire) == 0;
      ctl->decided.store(o_.memory == inbox_memory::host ? 1 + static_cast<std::uint32_t>(inbox_memory::host)
                         : all                          ? 1 + static_cast<std::uint32_t>(inbox_memory::peer_to_peer)
                                                        : detail::across_probing,
                         std::memory_order_release);
    }
    wait_for([&] { return ctl->decided.load(std::memory_order_acquire) != 0; }, "waiting for GMI 0's decision");
    const std::uint32_t decided = ctl->decided.load(std::memory_order_acquire);
    if (decided == detail::across_probing) {
      probe();
      return;
    }
    memory_ = static_cast<inbox_memory>(decided - 1);
    if (memory_ == inbox_memory::host) {
      use_host_inbox();
      return;
    }
    map_inboxes(true);
  }

  // Host inboxes: one block of pinned host memory for every GPU, plus the GPU's relay with several GMIs a GPU.
  void use_host_inbox() {
    void* host_inbox = static_cast<char*>(device_mapped_) + detail::across_page;
    for (int t = 0; t < o_.gpus; ++t) inbox_[t] = host_inbox;
    if (per_gpu() > 1) share_relay();
  }

  // Peer inboxes: each GPU's first GMI allocates its inbox, then every GMI maps every other. With `strict`,
  // a mapping that fails throws; else it returns false (the probe's vote).
  bool map_inboxes(bool strict) {
    auto* ctl = c();
    if (owns_inbox()) allocate_own();
    wait_for(
        [&] {
          for (int t = 0; t < o_.gpus; ++t)
            if (ctl->inbox_ready[t].load(std::memory_order_acquire) == 0) return false;
          return true;
        },
        "waiting for every GPU's inbox");
    mappings_.reserve(static_cast<std::size_t>(o_.gpus));
    for (int t = 0; t < o_.gpus; ++t) {
      if (t == o_.gpu && owns_inbox()) {
        inbox_[t] = own_;
        continue;
      }
      try {
        mappings_.emplace_back(ctl->inbox[t], true);
      } catch (const gmi::error&) {
        cudaGetLastError();  // a refused mapping is not sticky; clear it for the calls that follow
        if (strict) throw;
        return false;
      }
      inbox_[t] = mappings_.back().get();
    }
    return true;
  }

  // A GMI that does not see every GPU (MPS) tries the peer inboxes anyway: it maps them, each GPU's first GMI
  // writes its probe word into every other GPU's inbox (a copy over the peer mapping), and every GMI reads the
  // other GPUs' words in its own GPU's inbox. Every GMI votes; GMI 0 settles on peer_to_peer when all succeeded,
  // else host (or, with peer_to_peer asked for, every GMI throws one line). The probe words sit after the slots,
  // so the inboxes' entries stay zero for a host fallback's relay.
  void probe() {
    auto* ctl = c();
    probed_ = true;
    bool ok = map_inboxes(false) && o_.rank != o_.fail_probe_rank;
    const std::size_t at = detail::across_probe_offset(o_.gpus, o_.count);
    if (ok && owns_inbox()) {
      try {
        const std::uint64_t word = detail::across_probe_word(o_.gpu);
        char* mine = static_cast<char*>(own_) + at + static_cast<std::size_t>(o_.gpu) * sizeof word;
        GMI_CUDA_TRY(cudaMemcpy(mine, &word, sizeof word, cudaMemcpyHostToDevice));
        for (int t = 0; t < o_.gpus; ++t) {
          if (t == o_.gpu) continue;
          char* theirs = static_cast<char*>(inbox_[t]) + at + static_cast<std::size_t>(o_.gpu) * sizeof word;
          GMI_CUDA_TRY(cudaMemcpy(theirs, mine, sizeof word, cudaMemcpyDeviceToDevice));  // over the peer mapping
        }
        GMI_CUDA_TRY(cudaDeviceSynchronize());
      } catch (const gmi::error&) {
        cudaGetLastError();
        ok = false;
      }
    }
    ctl->probe_written.fetch_add(1, std::memory_order_acq_rel);
    wait_for([&] { return ctl->probe_written.load(std::memory_order_acquire) == ctl->world; },
             "waiting for every GMI's probe words");
    if (ok) {
      std::vector<std::uint64_t> words(static_cast<std::size_t>(o_.gpus));
      try {
        GMI_CUDA_TRY(cudaMemcpy(words.data(), static_cast<char*>(inbox_[o_.gpu]) + at, words.size() * sizeof(std::uint64_t),
                                cudaMemcpyDeviceToHost));
        for (int t = 0; t < o_.gpus; ++t)
          if (t != o_.gpu && words[static_cast<std::size_t>(t)] != detail::across_probe_word(t)) ok = false;
      } catch (const gmi::error&) {
        cudaGetLastError();
        ok = false;
      }
    }
    if (!ok) ctl->probe_failed.fetch_add(1, std::memory_order_acq_rel);
    ctl->probe_checked.fetch_add(1, std::memory_order_acq_rel);
    if (o_.rank == 0) {
      wait_for([&] { return ctl->probe_checked.load(std::memory_order_acquire) == ctl->world; },
               "waiting for every GMI's probe");
      const bool all = ctl->probe_failed.load(std::memory_order_acquire) == 0;
      ctl->settled.store(1 + static_cast<std::uint32_t>(all ? inbox_memory::peer_to_peer : inbox_memory::host),
                         std::memory_order_release);
    }
    wait_for([&] { return ctl->settled.load(std::memory_order_acquire) != 0; }, "waiting for GMI 0's probe decision");
    memory_ = static_cast<inbox_memory>(ctl->settled.load(std::memory_order_acquire) - 1);
    if (memory_ == inbox_memory::peer_to_peer) return;
    if (o_.memory == inbox_memory::peer_to_peer) {
      int me = -1;
      cudaGetDevice(&me);
      throw config_error(got_need("row exchange across GPUs: inboxes in peer device memory on GMI " +
                                      std::to_string(o_.rank) + " (device " + std::to_string(me) + ")",
                                  std::to_string(ctl->probe_failed.load()) + " of " + std::to_string(o_.world) +
                                      " GMIs unable to map, write or read the other GPUs' inboxes",
                                  "peer access between every pair (or inbox_memory host or automatic)"));
    }
    // Host after all: the other GPUs' inboxes go; this GPU's allocation stays, as its relay with several GMIs.
    std::vector<ipc_mapping> keep;
    if (!owns_inbox() && per_gpu() > 1) keep.emplace_back(ctl->inbox[o_.gpu]);  // shares the process's one open
    mappings_.clear();
    mappings_ = std::move(keep);
    void* host_inbox = static_cast<char*>(device_mapped_) + detail::across_page;
    for (int t = 0; t < o_.gpus; ++t) inbox_[t] = host_inbox;
    if (per_gpu() > 1) relay_ = owns_inbox() ? own_ : mappings_.back().get();
  }

  // This GPU's inbox (peer_to_peer) or relay (host), zeroed, on the GPU's first GMI, exported in the segment (IPC
  // shares whole allocations: 2 MiB multiples).
  void allocate_own() {
    const std::size_t bytes = detail::across_allocation_bytes(o_.gpus, o_.count);
    GMI_CUDA_TRY(cudaMalloc(&own_, bytes));
    GMI_CUDA_TRY(cudaMemset(own_, 0, bytes));
    GMI_CUDA_TRY(cudaDeviceSynchronize());
    c()->inbox[o_.gpu] = export_buffer(own_, bytes);
    c()->inbox_ready[o_.gpu].store(1, std::memory_order_release);
  }

  // Host inboxes with several GMIs a GPU: the GPU's relay, allocated by its first GMI, mapped by the others.
  void share_relay() {
    if (owns_inbox()) {
      allocate_own();
      relay_ = own_;
      return;
    }
    auto* ctl = c();
    wait_for([&] { return ctl->inbox_ready[o_.gpu].load(std::memory_order_acquire) != 0; },
             "waiting for GPU " + std::to_string(o_.gpu) + "'s relay");
    mappings_.emplace_back(ctl->inbox[o_.gpu]);
    relay_ = mappings_.back().get();
  }

  // Lets go of the other GMIs' inboxes; an inbox's owner frees it once every GMI has let go (bounded; a broken
  // group or a late GMI leaves it to the process's end).
  void teardown(bool wait) noexcept {
    if (!segment_.data()) return;
    if (!mappings_.empty() || own_) cudaDeviceSynchronize();  // this GMI's kernels no longer push or read
    mappings_.clear();
    if (memory_ == inbox_memory::peer_to_peer || relay_ || probed_) c()->let_go.fetch_add(1, std::memory_order_acq_rel);
    if (own_) {
      bool all = false;
      if (wait && !barrier_.broken()) {
        try {
          wait_for([&] { return c()->let_go.load(std::memory_order_acquire) == c()->world; },
                   "inbox owner waiting for every GMI to let go");
          all = true;
        } catch (...) {
        }
      }
      if (all) cudaFree(own_);  // else still mapped elsewhere: freed when this process ends
      own_ = nullptr;
    }
    if (registered_) cudaHostUnregister(mapped_);
    registered_ = false;
  }
  static std::string shape(int gpus, int world, std::uint64_t count, std::uint32_t memory) {
    return std::to_string(gpus) + " GPUs, " + std::to_string(world) + " GMIs, " + std::to_string(count) +
           " floats, inboxes " + (memory < 3 ? choice_name(static_cast<inbox_memory>(memory), inbox_memory_names) : "?");
  }

  row_exchange_across_gpus_options o_;
  shm_segment segment_;
  detail::group_barrier barrier_;
  void* mapped_ = nullptr;         // the stall word's page, then the host inbox (this process's view)
  void* device_mapped_ = nullptr;  // the same, in the device's address space
  bool registered_ = false;
  inbox_memory memory_ = inbox_memory::host;
  void* own_ = nullptr;                // on each GPU's first GMI: that GPU's inbox or relay (cudaMalloc)
  void* relay_ = nullptr;              // host, several GMIs a GPU: this GPU's relay (own_ or mapped)
  bool probed_ = false;                // the peer inboxes were probed (every GMI of the group, or none)
  std::vector<ipc_mapping> mappings_;  // peer_to_peer: the other inboxes; host: this GPU's relay
  void* inbox_[comm::row_exchange::max_gpus] = {};
  std::uint64_t checks_ = 0;
};

}  // namespace gmi::comm

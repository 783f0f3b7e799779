#pragma once
// NCCL for gmi: the GMI_CUDA_TRY overload for ncclResult_t, unique-id bootstrap (a shared-memory slot on one
// host; a given id, or mpirun/Slurm/torchrun variables plus a rendezvous file, across hosts), and an RAII
// nonblocking communicator whose every wait has a deadline and which aborts itself on error or timeout.

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <optional>
#include <source_location>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

#include <gmi/comm/gathered_ranks.hpp>
#include <gmi/comm/none.hpp>
#include <gmi/comm/shm_segment.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/core/cuda_try.hpp>
#include <gmi/core/env_var.hpp>
#include <gmi/core/error.hpp>
#include <gmi/cuda/check.hpp>

namespace gmi::detail {
// ncclInProgress is not a failure: nonblocking communicators return it while an operation is under way.
inline void check_call(ncclResult_t r, const char* expr, std::source_location where) {
  if (r != ncclSuccess && r != ncclInProgress) {
    throw nccl_error(static_cast<int>(r), std::string(expr) + ": " + ncclGetErrorString(r), where);
  }
}
}  // namespace gmi::detail

namespace gmi::comm {

// The communicator policy for inter-GPU steps (gmi::comm::hierarchical<gmi::comm::nccl>).
struct nccl {
  using communicator_concept = communicator_tag;
  static constexpr const char* name = "nccl";
  static constexpr bool reduces = true;
};
static_assert(communicator_policy<nccl>);

// Every gmi process keeps NVLink multicast off (cuda-notes 4: the 2.27/2.28 fallback can hang). Called before
// any NCCL call in this header; call it yourself before NCCL calls of your own.
inline void disable_nvls() { ::setenv("NCCL_NVLS_ENABLE", "0", 1); }

// NCCL's host (its host hash decides which transports two ranks may use) from gmi's host id, unless NCCL_HOSTID
// is set already. For simulated hosts (several launchers on one machine) NCCL then carries what crosses hosts
// over its network transport, as between real hosts, while each host's own GPUs keep NVLink and shared memory.
// Call before the process's first NCCL call (NCCL reads it once). Returns the value NCCL will use.
inline std::string nccl_host_id_default(const std::string& id) {
  ::setenv("NCCL_HOSTID", id.c_str(), 0);
  const char* v = std::getenv("NCCL_HOSTID");
  return v ? v : "";
}

// NCCL's 128-byte unique id as a value that travels through shared memory, files and environment variables.
struct nccl_id {
  ncclUniqueId id{};

  [[nodiscard]] std::string hex() const {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (char c : id.internal) {
      const auto b = static_cast<unsigned char>(c);
      out += digits[b >> 4];
      out += digits[b & 15];
    }
    return out;
  }
  static nccl_id from_hex(std::string_view text) {
    require(text.size() == 2 * NCCL_UNIQUE_ID_BYTES, "NCCL unique id (hex characters)", text.size(),
            std::to_string(2 * NCCL_UNIQUE_ID_BYTES));
    auto nibble = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      throw config_error(got_need("NCCL unique id character", std::string(1, c), "a hex digit"));
    };
    nccl_id out;
    for (std::size_t i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) {
      out.id.internal[i] = static_cast<char>(nibble(text[2 * i]) * 16 + nibble(text[2 * i + 1]));
    }
    return out;
  }
  // A fresh id; the calling process hosts NCCL's bootstrap root until the communicator is built.
  static nccl_id generate() {
    disable_nvls();
    nccl_id out;
    GMI_CUDA_TRY(ncclGetUniqueId(&out.id));
    return out;
  }
  friend bool operator==(const nccl_id& a, const nccl_id& b) {
    return std::memcmp(a.id.internal, b.id.internal, NCCL_UNIQUE_ID_BYTES) == 0;
  }
};

namespace detail {
struct id_slot {
  std::atomic<std::uint64_t> generation;  // 0: nothing published yet
  char id[NCCL_UNIQUE_ID_BYTES];
};
}  // namespace detail

// One-host bootstrap: rank 0 publishes ids into a shm slot (one per communicator generation, so a rebuilt
// communicator after an abort gets a new id); the other ranks wait for the generation they need.
class nccl_id_exchange {
 public:
  static nccl_id_exchange create(std::string_view tag) {
    nccl_id_exchange x;
    x.segment_ = shm_segment::create(tag, sizeof(detail::id_slot));
    new (x.segment_.data()) detail::id_slot{};
    return x;
  }
  static nccl_id_exchange open(std::string_view tag, milliseconds timeout = default_timeout()) {
    nccl_id_exchange x;
    x.segment_ = shm_segment::open(tag, timeout);
    return x;
  }
  void publish(const nccl_id& id, std::uint64_t generation) {
    require(generation >= 1, "nccl id generation", generation, ">= 1");
    std::memcpy(slot()->id, id.id.internal, NCCL_UNIQUE_ID_BYTES);
    slot()->generation.store(generation, std::memory_order_release);
  }
  nccl_id receive(std::uint64_t generation, milliseconds timeout = default_timeout()) {
    const int owner = segment_.owner_pid();
    bounded_wait([&] { return slot()->generation.load(std::memory_order_acquire) >= generation; },
                 [&] {
                   if (!detail::process_alive(owner)) {
                     throw comm_error(segment_.name() + ": the rank publishing NCCL ids (pid " + std::to_string(owner) +
                                      ") died");
                   }
                 },
                 timeout, segment_.name() + ": waiting for NCCL id generation " + std::to_string(generation));
    nccl_id out;
    std::memcpy(out.id.internal, slot()->id, NCCL_UNIQUE_ID_BYTES);
    return out;
  }

 private:
  detail::id_slot* slot() const { return static_cast<detail::id_slot*>(segment_.data()); }
  shm_segment segment_;
};

// Rank and world size given by an existing launcher (mpirun, Slurm, torchrun), or nothing.
struct launch_env {
  int rank = 0, world = 1;
  int local_rank = 0, local_world = 1;
  std::string source;  // "openmpi", "slurm", "torchrun"
  std::string job;     // a key for rendezvous file names: job id, run id or master address and port
};

namespace detail {
// Both variables of a pair, or neither: one alone is a broken launch environment, not "no launcher".
inline std::optional<std::pair<int, int>> env_pair(const std::string& source, const char* first, const char* second) {
  const auto a = env_var::integer(first), b = env_var::integer(second);
  if (a.has_value() != b.has_value()) {
    throw config_error(got_need(source + " launch variables", std::string(a ? first : second) + " set, " +
                                                                  (a ? second : first) + " unset",
                                "both " + std::string(first) + " and " + second + ", or neither"));
  }
  if (!a) return std::nullopt;
  return std::pair{*a, *b};
}
// The task count of one node in Slurm's list format: "4(x2),3" is 4, 4, 3 for nodes 0, 1, 2.
inline int slurm_tasks_on_node(const std::string& list, int node) {
  auto bad = [&] {
    return config_error(got_need("SLURM_TASKS_PER_NODE", list, "counts like 4(x2),3 covering SLURM_NODEID " +
                                                                   std::to_string(node)));
  };
  std::size_t at = 0;
  int first_node = 0;
  while (at < list.size()) {
    std::size_t used = 0;
    int count = 0, repeat = 1;
    try {
      count = std::stoi(list.substr(at), &used);
    } catch (...) {
      throw bad();
    }
    at += used;
    if (list.compare(at, 2, "(x") == 0) {
      const std::size_t close = list.find(')', at);
      if (close == std::string::npos) throw bad();
      try {
        repeat = std::stoi(list.substr(at + 2, close - at - 2));
      } catch (...) {
        throw bad();
      }
      at = close + 1;
    }
    if (count < 1 || repeat < 1) throw bad();
    if (node >= first_node && node < first_node + repeat) return count;
    first_node += repeat;
    if (at < list.size() && list[at++] != ',') throw bad();
  }
  throw bad();
}
}  // namespace detail

// The launcher this process was started by. The innermost launcher wins: torchrun and mpirun are often started
// under Slurm (srun torchrun ..., mpirun inside sbatch), and their processes inherit Slurm's variables, which
// then describe the launcher's task, not this process. Recognised (rank and world size are needed, the rest
// optional):
//   torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR + MASTER_PORT (needed), TORCHELASTIC_RUN_ID
//   OpenMPI:  OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE, OMPI_MCA_ess_base_jobid or PMIX_NAMESPACE
//   Slurm:    SLURM_PROCID, SLURM_NTASKS (or SLURM_NPROCS), SLURM_LOCALID, SLURM_NTASKS_PER_NODE or SLURM_TASKS_PER_NODE with
//             SLURM_NODEID, SLURM_JOB_ID, SLURM_STEP_ID
// A variable without its partner, a non-integer or a rank outside its world throws one config_error naming it.
inline std::optional<launch_env> detect_launcher() {
  using detail::env_pair;
  launch_env e;
  if (const auto rw = env_pair("torchrun", "RANK", "WORLD_SIZE")) {
    e.source = "torchrun";
    std::tie(e.rank, e.world) = *rw;
    if (const auto local = env_pair("torchrun", "LOCAL_RANK", "LOCAL_WORLD_SIZE")) {
      std::tie(e.local_rank, e.local_world) = *local;
    }
    const std::string addr = env_var::text("MASTER_ADDR"), port = env_var::text("MASTER_PORT");
    if (addr.empty() || port.empty()) {
      throw config_error(got_need("torchrun launch variables", "RANK and WORLD_SIZE set, MASTER_ADDR/MASTER_PORT '" +
                                                                   addr + "'/'" + port + "'",
                                  "MASTER_ADDR and MASTER_PORT set as well (torchrun sets all four)"));
    }
    const std::string run = env_var::text("TORCHELASTIC_RUN_ID");
    e.job = (run.empty() || run == "none" ? std::string() : run + "-") + addr + "-" + port;
  } else if (const auto rw2 = env_pair("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")) {
    e.source = "openmpi";
    std::tie(e.rank, e.world) = *rw2;
    if (const auto local = env_pair("openmpi", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE")) {
      std::tie(e.local_rank, e.local_world) = *local;
    }
    e.job = env_var::text("OMPI_MCA_ess_base_jobid");
    if (e.job.empty()) e.job = env_var::text("PMIX_NAMESPACE");
  } else if (const auto rw3 = env_pair("slurm", "SLURM_PROCID",
                                             std::getenv("SLURM_NPROCS") && !std::getenv("SLURM_NTASKS") ? "SLURM_NPROCS"
                                                                                                   : "SLURM_NTASKS")) {
    e.source = "slurm";
    std::tie(e.rank, e.world) = *rw3;
    if (const auto local = env_var::integer("SLURM_LOCALID")) {
      e.local_rank = *local;
      if (const auto per_node = env_var::text("SLURM_NTASKS_PER_NODE");
          !per_node.empty() && per_node.find_first_not_of("0123456789") == std::string::npos) {
        e.local_world = *env_var::integer("SLURM_NTASKS_PER_NODE");
      } else if (const auto node = env_var::integer("SLURM_NODEID"); node && !env_var::text("SLURM_TASKS_PER_NODE").empty()) {
        e.local_world = detail::slurm_tasks_on_node(env_var::text("SLURM_TASKS_PER_NODE"), *node);
      } else {
        throw config_error(got_need("slurm launch variables", "SLURM_LOCALID=" + std::to_string(*local) +
                                                                  " without the tasks of this node",
                                    "SLURM_NTASKS_PER_NODE, or SLURM_TASKS_PER_NODE and SLURM_NODEID"));
      }
    }
    const std::string job = env_var::text("SLURM_JOB_ID");
    if (!job.empty()) e.job = job + "." + (env_var::text("SLURM_STEP_ID").empty() ? "0" : env_var::text("SLURM_STEP_ID"));
  } else {
    return std::nullopt;
  }
  auto fail = [&](const std::string& what, const std::string& got, const std::string& need) {
    throw config_error(got_need(e.source + " " + what, got, need));
  };
  const auto pair = [](int a, int b) { return std::to_string(a) + "/" + std::to_string(b); };
  if (e.world < 1 || e.rank < 0 || e.rank >= e.world) fail("rank/world", pair(e.rank, e.world), "0 <= rank < world");
  if (e.local_world < 1 || e.local_rank < 0 || e.local_rank >= e.local_world) {
    fail("local rank/local world", pair(e.local_rank, e.local_world), "0 <= local rank < local world");
  }
  if (e.local_world > e.world) {
    fail("local world/world", pair(e.local_world, e.world), "local world <= world");
  }
  return e;
}

// Where a multi-host run's NCCL id comes from: the program's own settings (flags, a config file), never the
// environment, so the launcher variables above are the only ones read.
struct bootstrap_source {
  std::string id_hex;      // the id as 256 hex digits (every rank given the same); empty: use the rendezvous
  std::string rendezvous;  // a directory every host sees, where rank 0 writes the id for the others
};

// Multi-host bootstrap: source.id_hex if given; otherwise rank 0 generates the id and writes it, atomically
// (write then rename), to source.rendezvous, in a file named by the launcher's job key; the other ranks wait for
// that file.
inline nccl_id bootstrap_id(const launch_env& env, const bootstrap_source& source,
                            milliseconds timeout = default_timeout()) {
  if (!source.id_hex.empty()) return nccl_id::from_hex(source.id_hex);
  const std::string& dir = source.rendezvous;
  if (dir.empty()) {
    throw config_error(got_need("NCCL id / rendezvous directory", "neither given",
                                "bootstrap_source::id_hex (256 hex digits) or bootstrap_source::rendezvous (a shared "
                                "directory)"));
  }
  const std::string file = dir + "/gmi-nccl-id-" + env.source + "-" + (env.job.empty() ? "nojob" : env.job);
  if (env.rank == 0) {
    const nccl_id id = nccl_id::generate();
    const std::string tmp = file + ".tmp." + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << id.hex() << '\n';
      if (!out) throw comm_error(got_need("NCCL rendezvous file " + tmp, "unwritable", "a writable shared directory"));
    }
    if (std::rename(tmp.c_str(), file.c_str()) != 0) {
      throw comm_error(got_need("NCCL rendezvous rename to " + file, "failed", "a writable shared directory"));
    }
    return id;
  }
  std::string hex;
  bounded_wait(
      [&] {
        std::ifstream in(file);
        return static_cast<bool>(in >> hex) && hex.size() == 2 * NCCL_UNIQUE_ID_BYTES;
      },
      [] {}, timeout, "NCCL rendezvous file " + file + " (written by rank 0)", long_wait());
  return nccl_id::from_hex(hex);
}

struct nccl_options {
  milliseconds timeout = default_timeout();  // init, every wait, finalize
  int max_ctas = 0;                          // 0: NCCL's default; caps NCCL's SM use beside the GMIs' kernels
  int cga_cluster_size = -1;                 // -1: NCCL's default; 0 or 1 in small green-context slices
};

// The default max_ctas for a lane of the hierarchical allreduce's reducer::lanes (the communicator of the GMIs with
// one local rank on every GPU) with m GMIs a GPU: max(2, 32 / m) blocks a lane, so the m lanes' kernels on a GPU,
// each waiting for its peers on the other GPUs, fit on the SMs together. A caller that wants another sets
// nccl_options.max_ctas itself (0: NCCL's default).
inline int lane_max_ctas(int gmis_per_gpu) { return std::max(2, 32 / std::max(1, gmis_per_gpu)); }

// A communicator's float sums through one allgather into `rows` (ranks x capacity floats on the device) and a
// local sum of the rows in rank order (`sum_rows`, comm/gathered_sum.cuh's kernel; the same bits on every rank).
// `direct`: the rows come straight from their ranks (grouped sends and receives, self included) instead of
// ncclAllGather's ring, so every row is one dependent hop from its rank (the same rows, the same bits).
struct gathered_sum {
  float* rows = nullptr;
  std::size_t capacity = 0;  // floats a rank: larger sums go through ncclAllReduce
  void (*sum_rows)(const float* rows, int ranks, std::size_t count, float* out, cudaStream_t stream) = nullptr;
  bool direct = false;
};
// A communicator's float sums through steps on communicators of their own (comm/two_level_sum.cuh: the host's
// GPUs, then the same GPU of every host), whose errors this one's waits watch and whose aborts follow its own.
struct summed_in_steps {
  void* state = nullptr;
  std::size_t capacity = 0;  // floats: larger sums go through this communicator
  void (*sum)(void* state, const float* send, float* recv, std::size_t count, cudaStream_t stream) = nullptr;
  void (*check)(void* state) = nullptr;  // throws on the steps' communicators' async errors
  void (*abort)(void* state) noexcept = nullptr;
};

// A nonblocking NCCL communicator. Errors and timeouts abort it (ncclCommAbort) and throw nccl_error; after
// that it is unusable (rebuild it with a new id). Use from one thread at a time.
class nccl_communicator {
 public:
  nccl_communicator(int nranks, const nccl_id& id, int rank, nccl_options options = {})
      : options_(options), rank_(rank), size_(nranks) {
    require(nranks >= 1, "nccl communicator ranks", nranks, ">= 1");
    require(rank >= 0 && rank < nranks, "nccl communicator rank", rank, "0.." + std::to_string(nranks - 1));
    require(options.max_ctas >= 0, "nccl options.max_ctas", options.max_ctas, ">= 0 blocks (0: NCCL's default)");
    disable_nvls();
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // so a dead peer becomes an error we can see, not a call that never returns
    if (options.max_ctas > 0) config.maxCTAs = options.max_ctas;
    if (options.cga_cluster_size >= 0) config.cgaClusterSize = options.cga_cluster_size;
    ncclUniqueId raw = id.id;
    const ncclResult_t r = ncclCommInitRankConfig(&comm_, nranks, raw, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      if (comm_) ncclCommAbort(comm_);
      comm_ = nullptr;
      throw nccl_error(static_cast<int>(r), "ncclCommInitRankConfig(rank " + std::to_string(rank) + " of " +
                                                std::to_string(nranks) + "): " + ncclGetErrorString(r));
    }
    wait_ready("ncclCommInitRankConfig");
  }
  nccl_communicator(const nccl_communicator&) = delete;
  nccl_communicator& operator=(const nccl_communicator&) = delete;
  nccl_communicator(nccl_communicator&& o) noexcept
      : comm_(std::exchange(o.comm_, nullptr)), options_(o.options_), rank_(o.rank_), size_(o.size_),
        failed_(o.failed_), gathered_(o.gathered_), steps_(o.steps_) {}
  ~nccl_communicator() { close(); }

  [[nodiscard]] ncclComm_t get() const noexcept { return comm_; }
  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  [[nodiscard]] bool failed() const noexcept { return failed_; }
  [[nodiscard]] const nccl_options& options() const noexcept { return options_; }

  // Enqueues an allreduce on the stream; returns once NCCL has accepted it (not when it completes).
  void allreduce(const void* send, void* recv, std::size_t count, ncclDataType_t type, ncclRedOp_t op,
                 cudaStream_t stream) {
    check_usable();
    call(ncclAllReduce(send, recv, count, type, op, comm_, stream), "ncclAllReduce");
  }
  // The float sum: ncclAllReduce, or with sum_through_allgather (up to its capacity) one allgather and the rows'
  // sum in rank order. Calls on one stream at a time in that mode (the rows are reused call after call).
  void allreduce(const float* send, float* recv, std::size_t count, cudaStream_t stream) {
    if (steps_.sum != nullptr && count <= steps_.capacity) {
      check_usable();
      steps_.sum(steps_.state, send, recv, count, stream);
      return;
    }
    if (gathered_.sum_rows == nullptr || count > gathered_.capacity || size_ == 1) {
      allreduce(send, recv, count, ncclFloat32, ncclSum, stream);
      return;
    }
    check_usable();
    if (gathered_.direct) {  // one group: a send to and a receive from every rank
      call(ncclGroupStart(), "ncclGroupStart");
      for (int r = 0; r < size_; ++r) {
        call(ncclSend(send, count, ncclFloat32, r, comm_, stream), "ncclSend");
        call(ncclRecv(gathered_.rows + static_cast<std::size_t>(r) * count, count, ncclFloat32, r, comm_, stream),
             "ncclRecv");
      }
      call(ncclGroupEnd(), "ncclGroupEnd (the rows from every rank)");
    } else {
      call(ncclAllGather(send, gathered_.rows, count, ncclFloat32, comm_, stream), "ncclAllGather");
    }
    gathered_.sum_rows(gathered_.rows, size_, count, recv, stream);
  }
  // Float sums of at most g.capacity floats go through an allgather from now on (gathered_sum_rows sets this).
  void sum_through_allgather(const gathered_sum& g) {
    require(g.rows != nullptr && g.sum_rows != nullptr && size_ <= max_gathered_ranks, "allgather sum of an NCCL "
            "communicator", std::to_string(size_) + " ranks", "rows, a sum kernel and <= " +
            std::to_string(max_gathered_ranks) + " ranks");
    gathered_ = g;
  }
  [[nodiscard]] bool sums_through_allgather() const noexcept { return gathered_.sum_rows != nullptr; }
  // Float sums of at most s.capacity floats go through s's steps from now on (two_level_sum sets this and, when it
  // goes, clears it with an empty one).
  void sum_in_steps(const summed_in_steps& s) { steps_ = s; }

  // Waits until the stream's work is done, watching NCCL's async error; aborts and throws on error or timeout.
  void synchronize(cudaStream_t stream) { synchronize(stream, options_.timeout); }
  void synchronize(cudaStream_t stream, milliseconds timeout) {
    wait_done([&] { return cudaStreamQuery(stream); }, timeout, "waiting for a collective (a peer died or disagrees)");
  }
  // Waits until `event` has fired (work recorded on a stream that runs this communicator's collectives), the same
  // way: bounded, watching NCCL's async error.
  void synchronize_event(cudaEvent_t event) {
    wait_done([&] { return cudaEventQuery(event); }, options_.timeout,
              "waiting for an event behind a collective (a peer died or disagrees)");
  }

  // Throws (after aborting) if NCCL reported an asynchronous error: for waits of the caller's own.
  void check_async() {
    check_usable();
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm_, &async);
    if (async != ncclSuccess && async != ncclInProgress) fail(async, "NCCL async error");
    check_steps();
  }

  // Aborts the communicator (safe at any time no other thread is inside NCCL); it is unusable afterwards.
  void abort() noexcept {
    if (steps_.abort != nullptr) steps_.abort(steps_.state);
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    failed_ = true;
  }

  // Completes outstanding work and frees the communicator; aborts instead after an error or at the deadline.
  void close() noexcept {
    if (!comm_) return;
    if (failed_) {
      abort();
      return;
    }
    ncclResult_t r = ncclCommFinalize(comm_);
    if (r == ncclSuccess || r == ncclInProgress) {
      try {
        wait_ready("ncclCommFinalize");
      } catch (...) {
        return;  // wait_ready aborted it
      }
      ncclCommDestroy(comm_);
    } else {
      ncclCommAbort(comm_);
    }
    comm_ = nullptr;
  }

 private:
  void check_usable() const {
    if (!comm_) throw nccl_error(static_cast<int>(ncclInvalidUsage), "NCCL communicator was aborted or closed; rebuild it with a new id");
  }
  [[noreturn]] void fail(ncclResult_t r, const std::string& what) {
    const std::string last = comm_ ? ncclGetLastError(comm_) : "";
    abort();
    throw nccl_error(static_cast<int>(r), "NCCL rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": " +
                                              what + ": " + ncclGetErrorString(r) + (last.empty() ? "" : " (" + last + ")") +
                                              "; communicator aborted");
  }
  void call(ncclResult_t r, const char* what) {
    if (r != ncclSuccess && r != ncclInProgress) fail(r, what);
    if (r == ncclInProgress) wait_ready(what);
  }
  // The steps' communicators' errors as this one's: it aborts (and them with it) and throws theirs.
  void check_steps() {
    if (steps_.check == nullptr) return;
    try {
      steps_.check(steps_.state);
    } catch (...) {
      abort();
      throw;
    }
  }
  // Polls the communicator's state until ncclSuccess; aborts on error or after the timeout.
  void wait_ready(const char* what) {
    wait_for([&] {
      ncclResult_t state = ncclInProgress;
      const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
      if (r != ncclSuccess) fail(r, std::string(what) + " (ncclCommGetAsyncError)");
      if (state != ncclSuccess && state != ncclInProgress) fail(state, what);
      return state == ncclSuccess;
    }, [] {}, options_.timeout, std::string(what) + " (a peer is missing or died)");
  }
  // Spins first (short_wait): a collective is usually tens of microseconds from done, and a sleep costs more.
  // `query` is cudaStreamQuery or cudaEventQuery on the work to wait for.
  template <class Query>
  void wait_done(Query&& query, milliseconds timeout, const char* what) {
    check_usable();
    wait_for([&] {
      const cudaError_t e = query();
      if (e == cudaSuccess) return true;
      if (e != cudaErrorNotReady) {
        abort();
        GMI_CUDA_TRY(e);
      }
      return false;
    }, [&] {
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) fail(async, "NCCL async error while waiting for the stream");
      check_steps();
    }, timeout, what);
  }
  // bounded_wait whose timeout aborts the communicator and throws nccl_error.
  template <class Ready, class Check>
  void wait_for(Ready&& ready, Check&& check, milliseconds timeout, const std::string& what) {
    try {
      bounded_wait(ready, check, timeout, what);
    } catch (const comm_error&) {
      abort();
      throw nccl_error(static_cast<int>(ncclSystemError), "NCCL rank " + std::to_string(rank_) + " of " +
                                                              std::to_string(size_) + ": " + what + ": timed out after " +
                                                              std::to_string(timeout.count()) + " ms; communicator aborted");
    }
  }

  ncclComm_t comm_ = nullptr;
  nccl_options options_;
  int rank_ = 0, size_ = 1;
  bool failed_ = false;
  gathered_sum gathered_;  // sum_rows null: float sums through ncclAllReduce
  summed_in_steps steps_;  // sum null: none
};

// A communicator of `nranks` ranks of one host whose unique id goes through shared memory: rank 0 creates the id
// slot `tag` and publishes a fresh id, the others wait for it (bounded by `timeout`). The slot lives as long as
// the communicator, so a late rank still finds it.
struct shm_bootstrapped_nccl {
  std::optional<nccl_id_exchange> ids;
  std::unique_ptr<nccl_communicator> comm;

  static shm_bootstrapped_nccl create(const std::string& tag, int nranks, int rank, milliseconds timeout) {
    shm_bootstrapped_nccl out;
    nccl_id id;
    if (rank == 0) {
      out.ids = nccl_id_exchange::create(tag);
      id = nccl_id::generate();
      out.ids->publish(id, 1);
    } else {
      out.ids = nccl_id_exchange::open(tag, timeout);
      id = out.ids->receive(1, timeout);
    }
    out.comm = std::make_unique<nccl_communicator>(nranks, id, rank, nccl_options{timeout});
    return out;
  }
};

}  // namespace gmi::comm

#pragma once
// NCCL for gmi: the GMI_CUDA_TRY overload for ncclResult_t, unique-id bootstrap (a shared-memory slot on one
// host; GMI_NCCL_ID, or mpirun/Slurm/torchrun variables plus a rendezvous file, across hosts), and an RAII
// nonblocking communicator whose every wait has a deadline and which aborts itself on error or timeout.

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <source_location>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include <gmi/comm/none.hpp>
#include <gmi/comm/shm_segment.hpp>
#include <gmi/comm/wait.hpp>
#include <gmi/core/cuda_try.hpp>
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
  std::string job;     // a key for rendezvous file names: job id, run id or master port
};

namespace detail {
inline std::optional<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0') throw config_error(got_need(name, v, "an integer"));
  return static_cast<int>(x);
}
inline std::string env_str(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}
}  // namespace detail

inline std::optional<launch_env> detect_launcher() {
  using detail::env_int;
  using detail::env_str;
  launch_env e;
  if (auto r = env_int("OMPI_COMM_WORLD_RANK"), w = env_int("OMPI_COMM_WORLD_SIZE"); r && w) {
    e = {*r, *w, env_int("OMPI_COMM_WORLD_LOCAL_RANK").value_or(0), env_int("OMPI_COMM_WORLD_LOCAL_SIZE").value_or(1),
         "openmpi", env_str("OMPI_MCA_ess_base_jobid")};
  } else if (auto r2 = env_int("SLURM_PROCID"), w2 = env_int("SLURM_NTASKS"); r2 && w2) {
    e = {*r2, *w2, env_int("SLURM_LOCALID").value_or(0), env_int("SLURM_NTASKS_PER_NODE").value_or(1), "slurm",
         env_str("SLURM_JOB_ID") + "." + env_str("SLURM_STEP_ID")};
  } else if (auto r3 = env_int("RANK"), w3 = env_int("WORLD_SIZE"); r3 && w3) {
    e = {*r3, *w3, env_int("LOCAL_RANK").value_or(0), env_int("LOCAL_WORLD_SIZE").value_or(1), "torchrun",
         env_str("TORCHELASTIC_RUN_ID").empty() ? env_str("MASTER_PORT") : env_str("TORCHELASTIC_RUN_ID")};
  } else {
    return std::nullopt;
  }
  if (e.world < 1 || e.rank < 0 || e.rank >= e.world) {
    throw config_error(got_need(e.source + " rank/world", std::to_string(e.rank) + "/" + std::to_string(e.world),
                                "0 <= rank < world"));
  }
  return e;
}

// Multi-host bootstrap: GMI_NCCL_ID (hex) if set; otherwise rank 0 generates the id and writes it, atomically
// (write then rename), to GMI_NCCL_RENDEZVOUS (a directory on a path every host sees), in a file named by
// the launcher's job key; the other ranks wait for that file.
inline nccl_id bootstrap_id_from_env(const launch_env& env, milliseconds timeout = default_timeout()) {
  if (const char* hex = std::getenv("GMI_NCCL_ID"); hex && *hex) return nccl_id::from_hex(hex);
  const std::string dir = detail::env_str("GMI_NCCL_RENDEZVOUS");
  if (dir.empty()) {
    throw config_error(got_need("GMI_NCCL_ID / GMI_NCCL_RENDEZVOUS", "both unset",
                                "GMI_NCCL_ID=<256 hex digits> or GMI_NCCL_RENDEZVOUS=<shared directory>"));
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
      [] {}, timeout, "NCCL rendezvous file " + file);
  return nccl_id::from_hex(hex);
}

struct nccl_options {
  milliseconds timeout = default_timeout();  // init, every wait, finalize
  int max_ctas = 0;                          // 0: NCCL's default; caps NCCL's SM use beside the GMIs' kernels
  int cga_cluster_size = -1;                 // -1: NCCL's default; 0 or 1 in small green-context slices
};

// A nonblocking NCCL communicator. Errors and timeouts abort it (ncclCommAbort) and throw nccl_error; after
// that it is unusable (rebuild it with a new id). Use from one thread at a time.
class nccl_communicator {
 public:
  nccl_communicator(int nranks, const nccl_id& id, int rank, nccl_options options = {})
      : options_(options), rank_(rank), size_(nranks) {
    require(nranks >= 1, "nccl communicator ranks", nranks, ">= 1");
    require(rank >= 0 && rank < nranks, "nccl communicator rank", rank, "0.." + std::to_string(nranks - 1));
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
        failed_(o.failed_) {}
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
  void allreduce(const float* send, float* recv, std::size_t count, cudaStream_t stream) {
    allreduce(send, recv, count, ncclFloat32, ncclSum, stream);
  }

  // Waits until the stream's work is done, watching NCCL's async error; aborts and throws on error or timeout.
  void synchronize(cudaStream_t stream) { synchronize(stream, options_.timeout); }
  void synchronize(cudaStream_t stream, milliseconds timeout) {
    check_usable();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::microseconds(1);
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) {
        abort();
        GMI_CUDA_TRY(e);
      }
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) fail(async, "NCCL async error while waiting for the stream");
      if (std::chrono::steady_clock::now() > deadline) {
        abort();
        throw nccl_error(static_cast<int>(ncclSystemError),
                         "NCCL rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": timed out after " +
                             std::to_string(timeout.count()) + " ms waiting for a collective (a peer died or " +
                             "disagrees); communicator aborted");
      }
      std::this_thread::sleep_for(pause);
      if (pause < std::chrono::microseconds(200)) pause *= 2;
    }
  }

  // Aborts the communicator (safe at any time no other thread is inside NCCL); it is unusable afterwards.
  void abort() noexcept {
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
  // Polls the communicator's state until ncclSuccess; aborts on error or after the timeout.
  void wait_ready(const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
    auto pause = std::chrono::microseconds(1);
    for (;;) {
      ncclResult_t state = ncclInProgress;
      const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
      if (r != ncclSuccess) fail(r, std::string(what) + " (ncclCommGetAsyncError)");
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) fail(state, what);
      if (std::chrono::steady_clock::now() > deadline) {
        abort();
        throw nccl_error(static_cast<int>(ncclSystemError),
                         std::string(what) + " on rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                             ": timed out after " + std::to_string(options_.timeout.count()) +
                             " ms (a peer is missing or died); communicator aborted");
      }
      std::this_thread::sleep_for(pause);
      if (pause < std::chrono::microseconds(500)) pause *= 2;
    }
  }

  ncclComm_t comm_ = nullptr;
  nccl_options options_;
  int rank_ = 0, size_ = 1;
  bool failed_ = false;
};

}  // namespace gmi::comm

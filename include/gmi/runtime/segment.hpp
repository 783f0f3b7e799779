#pragma once
// The run's shared-memory segment (shm_open + mmap): per-GMI heartbeat slots the supervisor watches, and one
// SPSC byte ring per ordered pair of GMIs for send/recv. Lock-free atomics only, so a GMI that dies mid-write
// can not leave a lock held (Boost 1.83's interprocess mutexes are not recoverable; cuda-notes section 6).

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>

#include <gmi/core/error.hpp>

namespace gmi::runtime {

static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "heartbeats and rings need lock-free 64-bit atomics");
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(std::atomic<std::int32_t>::is_always_lock_free);

// Where a GMI is in its life, as written into its slot (by the GMI, or by the supervisor once it is gone).
enum class gmi_state : std::uint32_t { starting = 0, running = 1, finished = 2, failed = 3, dead = 4 };

namespace detail {

inline constexpr std::uint64_t segment_magic = 0x31696d672d696d67ULL;  // "gmi-gmi1"
inline constexpr std::uint32_t segment_version = 3;
inline constexpr std::size_t message_bytes = 224;
inline constexpr std::size_t result_bytes = 8192;  // a training report carries its learning curve

struct segment_header {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t world;
  std::int32_t owner_pid;  // the launcher; stale segments of dead owners are removed at start
  std::uint32_t ring_capacity;
  std::uint64_t total_bytes;
  std::atomic<std::uint32_t> stop;  // the supervisor asks every GMI to stop
  char run_id[64];
};

struct alignas(64) gmi_slot {
  std::atomic<std::uint64_t> heartbeat;
  std::atomic<std::uint32_t> state;
  std::atomic<std::int32_t> pid;
  char message[message_bytes];  // why the GMI failed, written by the GMI itself before it exits
  char result[result_bytes];    // what the GMI reports to its launcher (context::report), read after the run
};

// Producer writes head, consumer writes tail; both only grow (bytes ever written / read).
struct ring_header {
  alignas(64) std::atomic<std::uint64_t> head;
  alignas(64) std::atomic<std::uint64_t> tail;
};

inline constexpr std::size_t header_bytes = 4096;

inline std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }

inline std::size_t segment_size(int world, std::uint32_t ring_capacity) {
  const std::size_t w = static_cast<std::size_t>(world);
  return header_bytes + round_up(w * sizeof(gmi_slot), 4096) + w * w * (sizeof(ring_header) + ring_capacity);
}

inline bool pid_alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

inline std::string errno_text(int e) { return std::string(std::strerror(e)); }

}  // namespace detail

// "/gmi-<uid>-": the prefix of every segment of this user.
[[nodiscard]] inline std::string segment_prefix() { return "/gmi-" + std::to_string(getuid()) + "-"; }

// A run id unique on this host: launcher pid plus 32 random bits.
[[nodiscard]] inline std::string make_run_id() {
  std::random_device rd;
  char hex[16];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(rd()));
  return std::to_string(getpid()) + "-" + hex;
}

// Removes this user's gmi segments whose launcher is dead (left behind by a SIGKILLed launcher).
// Returns how many were removed.
inline int remove_stale_segments() {
  const std::string prefix = segment_prefix().substr(1);
  DIR* dir = opendir("/dev/shm");
  if (!dir) return 0;
  int removed = 0;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string shm = "/" + name;
    const int fd = shm_open(shm.c_str(), O_RDONLY, 0);
    if (fd < 0) continue;
    detail::segment_header h{};
    const bool read_ok = pread(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h);
    close(fd);
    if (read_ok && h.magic == detail::segment_magic && !detail::pid_alive(h.owner_pid)) {
      if (shm_unlink(shm.c_str()) == 0) ++removed;
    }
  }
  closedir(dir);
  return removed;
}

// One mapping of a run's segment. The launcher creates (and on destruction unlinks) it; workers attach.
class segment {
 public:
  // Creates "/gmi-<uid>-<run_id>" for `world` GMIs with rings of `ring_capacity` bytes (a power of two).
  static segment create(const std::string& run_id, int world, std::uint32_t ring_capacity = 1u << 16) {
    gmi::require(world >= 1, "world", world, ">= 1");
    gmi::require(ring_capacity >= 64 && (ring_capacity & (ring_capacity - 1)) == 0, "ring_capacity", ring_capacity,
                 "a power of two >= 64");
    segment s;
    s.name_ = segment_prefix() + run_id;
    s.owner_ = true;
    const int fd = shm_open(s.name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) throw gmi::comm_error("shm_open(" + s.name_ + ", O_CREAT): " + detail::errno_text(errno));
    s.bytes_ = detail::segment_size(world, ring_capacity);
    if (ftruncate(fd, static_cast<off_t>(s.bytes_)) != 0) {
      const int e = errno;
      close(fd);
      shm_unlink(s.name_.c_str());
      throw gmi::comm_error("ftruncate(" + s.name_ + ", " + std::to_string(s.bytes_) + "): " + detail::errno_text(e) +
                            " (is /dev/shm large enough?)");
    }
    s.map(fd);
    // A fresh shm object reads as zeros: every atomic starts at 0 (starting state, empty rings).
    auto* h = s.header();
    h->version = detail::segment_version;
    h->world = static_cast<std::uint32_t>(world);
    h->owner_pid = getpid();
    h->ring_capacity = ring_capacity;
    h->total_bytes = s.bytes_;
    std::snprintf(h->run_id, sizeof h->run_id, "%s", run_id.c_str());
    std::atomic_thread_fence(std::memory_order_release);
    h->magic = detail::segment_magic;
    return s;
  }

  // Attaches to an existing segment by its full name ("/gmi-...").
  static segment attach(const std::string& name) {
    segment s;
    s.name_ = name;
    const int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) throw gmi::comm_error("shm_open(" + name + "): " + detail::errno_text(errno) + " (launcher gone?)");
    struct stat st{};
    if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(detail::header_bytes)) {
      close(fd);
      throw gmi::comm_error("segment " + name + ": too small to be a gmi segment");
    }
    s.bytes_ = static_cast<std::size_t>(st.st_size);
    s.map(fd);
    const auto* h = s.header();
    if (h->magic != detail::segment_magic || h->version != detail::segment_version || h->total_bytes != s.bytes_) {
      throw gmi::comm_error("segment " + name + ": not a gmi v" + std::to_string(detail::segment_version) +
                            " segment of " + std::to_string(s.bytes_) + " bytes");
    }
    return s;
  }

  segment(const segment&) = delete;
  segment& operator=(const segment&) = delete;
  segment(segment&& o) noexcept
      : name_(std::move(o.name_)), base_(std::exchange(o.base_, nullptr)), bytes_(o.bytes_),
        owner_(std::exchange(o.owner_, false)) {}
  segment& operator=(segment&& o) noexcept {
    if (this != &o) {
      release();
      name_ = std::move(o.name_);
      base_ = std::exchange(o.base_, nullptr);
      bytes_ = o.bytes_;
      owner_ = std::exchange(o.owner_, false);
    }
    return *this;
  }
  ~segment() { release(); }

  // Removes the name now (the mapping stays valid); the owner's destructor does it otherwise.
  void unlink() noexcept {
    if (owner_ && !name_.empty()) shm_unlink(name_.c_str());
    owner_ = false;
  }

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] int world() const noexcept { return static_cast<int>(header()->world); }
  [[nodiscard]] std::uint32_t ring_capacity() const noexcept { return header()->ring_capacity; }
  [[nodiscard]] detail::segment_header* header() const noexcept {
    return static_cast<detail::segment_header*>(base_);
  }
  [[nodiscard]] detail::gmi_slot& slot(int rank) const noexcept {
    return reinterpret_cast<detail::gmi_slot*>(static_cast<char*>(base_) + detail::header_bytes)[rank];
  }
  // The ring that carries bytes from `src` to `dst`, and its data.
  [[nodiscard]] detail::ring_header& ring(int src, int dst) const noexcept { return *ring_at(src, dst); }
  [[nodiscard]] unsigned char* ring_data(int src, int dst) const noexcept {
    return reinterpret_cast<unsigned char*>(ring_at(src, dst) + 1);
  }

  [[nodiscard]] bool stop_requested() const noexcept { return header()->stop.load(std::memory_order_acquire) != 0; }
  void request_stop() const noexcept { header()->stop.store(1, std::memory_order_release); }

  [[nodiscard]] gmi_state state(int rank) const noexcept {
    return static_cast<gmi_state>(slot(rank).state.load(std::memory_order_acquire));
  }
  void set_state(int rank, gmi_state s) const noexcept {
    slot(rank).state.store(static_cast<std::uint32_t>(s), std::memory_order_release);
  }
  void set_message(int rank, std::string_view text) const noexcept {
    auto& m = slot(rank).message;
    const std::size_t n = std::min(text.size(), sizeof m - 1);
    std::memcpy(m, text.data(), n);
    m[n] = '\0';
  }
  [[nodiscard]] std::string message(int rank) const {
    const auto& m = slot(rank).message;
    return std::string(m, strnlen(m, sizeof m));
  }
  void set_result(int rank, std::string_view text) const noexcept {
    auto& m = slot(rank).result;
    const std::size_t n = std::min(text.size(), sizeof m - 1);
    std::memcpy(m, text.data(), n);
    m[n] = '\0';
  }
  [[nodiscard]] std::string result(int rank) const {
    const auto& m = slot(rank).result;
    return std::string(m, strnlen(m, sizeof m));
  }

 private:
  segment() = default;

  void map(int fd) {
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int e = errno;
    close(fd);
    if (base_ == MAP_FAILED) {
      base_ = nullptr;
      if (owner_) shm_unlink(name_.c_str());
      throw gmi::comm_error("mmap(" + name_ + "): " + detail::errno_text(e));
    }
  }

  [[nodiscard]] detail::ring_header* ring_at(int src, int dst) const noexcept {
    const auto* h = header();
    const std::size_t w = h->world;
    const std::size_t stride = sizeof(detail::ring_header) + h->ring_capacity;
    char* rings = static_cast<char*>(base_) + detail::header_bytes + detail::round_up(w * sizeof(detail::gmi_slot), 4096);
    return reinterpret_cast<detail::ring_header*>(rings + (static_cast<std::size_t>(src) * w + dst) * stride);
  }

  void release() noexcept {
    unlink();
    if (base_) munmap(base_, bytes_);
    base_ = nullptr;
  }

  std::string name_;
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  bool owner_ = false;
};

}  // namespace gmi::runtime

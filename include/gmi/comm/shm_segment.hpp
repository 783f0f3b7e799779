#pragma once
// Named shared-memory segments for the GMIs of one host: private to the user (0600, names gmi-<uid>-<tag>),
// the owner's pid in a header so segments left behind by dead runs can be found and removed at start.

#include <dirent.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/permissions.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <functional>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include <gmi/core/error.hpp>

namespace gmi::comm {

namespace detail {
inline constexpr std::uint64_t segment_magic = 0x676d692d73686d31ull;  // "gmi-shm1"
inline constexpr std::size_t segment_header_bytes = 128;                // keeps the payload cache-line aligned

struct segment_header {
  std::uint64_t magic;
  std::int32_t owner_pid;
  std::uint32_t header_bytes;
  std::uint64_t payload_bytes;
  std::atomic<std::uint32_t> ready;  // set last by the creator, so openers never see a half-built segment
};
static_assert(sizeof(segment_header) <= segment_header_bytes);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "shared-memory flags need address-free atomics");

// true unless the process certainly no longer exists (EPERM means it exists but belongs to someone else).
inline bool process_alive(int pid) noexcept {
  if (pid <= 0) return false;
  return ::kill(pid, 0) == 0 || errno != ESRCH;
}

inline std::string user_prefix() { return "gmi-" + std::to_string(::getuid()) + "-"; }

inline void check_tag(std::string_view tag) {
  bool ok = !tag.empty() && tag.size() <= 200;
  for (char c : tag) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.');
  if (!ok) throw config_error(got_need("shared-memory tag", tag, "1-200 characters from [A-Za-z0-9._-]"));
}
}  // namespace detail

// The segment name for a tag: gmi-<uid>-<tag> (the file /dev/shm/gmi-<uid>-<tag> on Linux).
inline std::string segment_name(std::string_view tag) {
  detail::check_tag(tag);
  return detail::user_prefix() + std::string(tag);
}

// A tag no other live run uses: <prefix>-<pid>-<counter>-<random>.
inline std::string unique_tag(std::string_view prefix = "run") {
  static std::atomic<unsigned> counter{0};
  std::random_device rd;
  return std::string(prefix) + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
         std::to_string(rd() & 0xffffu);
}

// Removes this user's gmi segments whose owner process is gone; returns how many were removed.
// Run once at start by a launcher: a crashed run leaves its segments in /dev/shm otherwise.
inline int cleanup_stale_segments() {
  namespace bip = boost::interprocess;
  const std::string prefix = detail::user_prefix();
  int removed = 0;
  DIR* dir = ::opendir("/dev/shm");
  if (!dir) return 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    bool stale = false;
    try {
      bip::shared_memory_object object(bip::open_only, name.c_str(), bip::read_only);
      bip::offset_t size = 0;
      if (object.get_size(size) && size >= static_cast<bip::offset_t>(detail::segment_header_bytes)) {
        bip::mapped_region region(object, bip::read_only, 0, detail::segment_header_bytes);
        const auto* h = static_cast<const detail::segment_header*>(region.get_address());
        stale = h->magic == detail::segment_magic && !detail::process_alive(h->owner_pid);
      }
    } catch (const bip::interprocess_exception&) {
      continue;  // removed meanwhile, or not ours to read
    }
    if (stale && bip::shared_memory_object::remove(name.c_str())) ++removed;
  }
  ::closedir(dir);
  return removed;
}

// A mapped segment: created (and unlinked on destruction) by one process, opened by the others.
// data() is the payload after the header, zero-filled at creation, 128-byte aligned.
class shm_segment {
 public:
  shm_segment() = default;

  // Creates gmi-<uid>-<tag> with payload_bytes of zeroed payload; fails if the name exists and its owner is alive.
  static shm_segment create(std::string_view tag, std::size_t payload_bytes) {
    return create(tag, payload_bytes, [](void*, std::size_t) {});
  }

  // As above, and init(payload, payload_bytes) builds the payload's control structures before the segment is
  // marked ready: open() waits for ready, so no opener sees (or writes into) a payload still being built.
  // If init throws, the segment is removed and the exception propagates.
  template <class Init>
  static shm_segment create(std::string_view tag, std::size_t payload_bytes, Init&& init) {
    namespace bip = boost::interprocess;
    shm_segment s;
    s.name_ = segment_name(tag);
    s.payload_bytes_ = payload_bytes;
    const std::size_t total = detail::segment_header_bytes + payload_bytes;
    try {
      bip::shared_memory_object object(bip::create_only, s.name_.c_str(), bip::read_write, bip::permissions(0600));
      s.owner_ = true;
      object.truncate(static_cast<bip::offset_t>(total));
      s.region_ = bip::mapped_region(object, bip::read_write);
    } catch (const bip::interprocess_exception& e) {
      if (s.owner_) bip::shared_memory_object::remove(s.name_.c_str());
      s.owner_ = false;
      throw comm_error("shared-memory segment " + s.name_ + ": create failed (" + e.what() +
                       "); a live run may use this tag, or call gmi::comm::cleanup_stale_segments()");
    }
    auto* h = new (s.region_.get_address()) detail::segment_header{};
    h->magic = detail::segment_magic;
    h->owner_pid = static_cast<std::int32_t>(::getpid());
    h->header_bytes = detail::segment_header_bytes;
    h->payload_bytes = payload_bytes;
    init(s.data(), payload_bytes);  // on a throw, s's destructor removes the name
    h->ready.store(1, std::memory_order_release);
    return s;
  }

  // Opens a segment another process creates, waiting up to `timeout` for it to appear and be ready.
  // while_waiting: called between polls (a caller's heartbeat, or its check that the owner is still alive).
  static shm_segment open(std::string_view tag, std::chrono::milliseconds timeout = std::chrono::seconds(30),
                          const std::function<void()>& while_waiting = {}) {
    namespace bip = boost::interprocess;
    shm_segment s;
    s.name_ = segment_name(tag);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      try {
        bip::shared_memory_object object(bip::open_only, s.name_.c_str(), bip::read_write);
        bip::offset_t size = 0;
        if (object.get_size(size) && size >= static_cast<bip::offset_t>(detail::segment_header_bytes)) {
          bip::mapped_region region(object, bip::read_write);
          const auto* h = static_cast<const detail::segment_header*>(region.get_address());
          if (h->ready.load(std::memory_order_acquire) == 1 && h->magic == detail::segment_magic) {
            s.payload_bytes_ = h->payload_bytes;
            s.region_ = std::move(region);
            return s;
          }
        }
      } catch (const bip::interprocess_exception&) {
        // not created yet
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw comm_error(got_need("shared-memory segment " + s.name_, "absent or not ready after " +
                                                                          std::to_string(timeout.count()) + " ms",
                                  "created by its owner within the timeout"));
      }
      if (while_waiting) while_waiting();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  shm_segment(const shm_segment&) = delete;
  shm_segment& operator=(const shm_segment&) = delete;
  shm_segment(shm_segment&& o) noexcept
      : name_(std::move(o.name_)), region_(std::move(o.region_)), payload_bytes_(o.payload_bytes_),
        owner_(std::exchange(o.owner_, false)) {}
  shm_segment& operator=(shm_segment&& o) noexcept {
    if (this != &o) {
      release();
      name_ = std::move(o.name_);
      region_ = std::move(o.region_);
      payload_bytes_ = o.payload_bytes_;
      owner_ = std::exchange(o.owner_, false);
    }
    return *this;
  }
  ~shm_segment() { release(); }

  [[nodiscard]] void* data() const noexcept {
    return region_.get_address() ? static_cast<char*>(region_.get_address()) + detail::segment_header_bytes : nullptr;
  }
  [[nodiscard]] std::size_t size() const noexcept { return payload_bytes_; }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] bool owner() const noexcept { return owner_; }
  [[nodiscard]] int owner_pid() const noexcept {
    return region_.get_address() ? static_cast<const detail::segment_header*>(region_.get_address())->owner_pid : 0;
  }
  // Removes the name now (the mapping stays valid); others can no longer open it.
  void unlink() noexcept {
    if (owner_) boost::interprocess::shared_memory_object::remove(name_.c_str());
    owner_ = false;
  }

 private:
  // The owner removes the name; an opener removes it when the owner died without doing so (a GMI killed
  // mid-run), so the last survivors leave nothing behind rather than waiting for the next run's stale sweep.
  void release() noexcept {
    if (!owner_ && region_.get_address() && !name_.empty() && !detail::process_alive(owner_pid())) {
      boost::interprocess::shared_memory_object::remove(name_.c_str());
    }
    unlink();
    region_ = boost::interprocess::mapped_region();
  }
  std::string name_;
  boost::interprocess::mapped_region region_;
  std::size_t payload_bytes_ = 0;
  bool owner_ = false;
};

}  // namespace gmi::comm

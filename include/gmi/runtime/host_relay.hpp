#pragma once
// The relay between a host's launcher (the MPI process, which holds the link to the other hosts) and the attempt
// it runs as a child process (--restart-on-failure across hosts: a GPU attempt that fails is killed whole, so
// a stuck collective or a sticky CUDA error never outlives it). The attempt's exchanges with the other hosts
// (sums of statistics and stop votes, gathers, the closing barrier) go to the launcher over a socket pair; the
// launcher runs each through the link and sends back every host's bytes or the one line of why it failed.
// One request at a time; every wait is bounded and watches a stop condition.

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>

namespace gmi::runtime {

namespace detail {
struct relay_header {
  std::uint32_t kind = 0;   // request: 1 allgather, 2 barrier; reply: 0 done, 1 failed (payload: the line)
  std::uint32_t bytes = 0;  // payload bytes that follow
};
inline constexpr std::uint32_t relay_allgather = 1, relay_barrier = 2, relay_done = 0, relay_failed = 1;
inline constexpr std::uint32_t relay_max_bytes = 64u << 20;

// Writes all of `n` bytes (a peer gone: false, no SIGPIPE).
inline bool relay_write(int fd, const void* p, std::size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}
// Reads `n` bytes within `until`, polling in 10 ms slices and giving up when `stop` says so; throws comm_error.
inline void relay_read(int fd, void* p, std::size_t n, std::chrono::steady_clock::time_point until,
                       const std::function<bool()>& stop, const std::string& what) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    if (stop && stop()) throw comm_error(what + ": stopped");
    if (std::chrono::steady_clock::now() > until) throw comm_error(what + ": no reply in time");
    pollfd pf{fd, POLLIN, 0};
    const int r = ::poll(&pf, 1, 10);
    if (r < 0 && errno != EINTR) throw comm_error(what + ": poll: " + std::strerror(errno));
    if (r <= 0) continue;
    const ssize_t got = ::recv(fd, c, n, 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) throw comm_error(what + ": the other end closed");
    c += got;
    n -= static_cast<std::size_t>(got);
  }
}
}  // namespace detail

// The two ends, made before the attempt starts: the launcher keeps `launcher`, the attempt inherits `attempt`
// (not close-on-exec) and the launcher closes its copy once the attempt runs.
struct relay_pair {
  int launcher = -1, attempt = -1;
  static relay_pair make() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) throw gmi::error(std::string("socketpair: ") + std::strerror(errno));
    return {fds[0], fds[1]};
  }
};

// The attempt's end: its gpu_hosts sends every exchange with the other hosts through here.
class relay_client {
 public:
  explicit relay_client(int fd) : fd_(fd) {
    require(fd > 2, "relay descriptor from the launcher", fd, "an inherited socket (> 2)");
  }
  relay_client(const relay_client&) = delete;
  relay_client& operator=(const relay_client&) = delete;
  ~relay_client() { ::close(fd_); }

  // Every host's `bytes` bytes into `all` (hosts x bytes, host order), through the launcher's link.
  void allgather(const void* mine, void* all, std::size_t bytes, std::size_t hosts, std::chrono::milliseconds timeout,
                 const std::function<bool()>& stop = {}) {
    ask(detail::relay_allgather, mine, bytes, all, bytes * hosts, timeout, stop, "gather between the hosts");
  }
  // Every host's attempt reached this point (the closing barrier).
  void barrier(std::chrono::milliseconds timeout) {
    ask(detail::relay_barrier, nullptr, 0, nullptr, 0, timeout, {}, "closing barrier between the hosts");
  }

 private:
  void ask(std::uint32_t kind, const void* mine, std::size_t bytes, void* out, std::size_t out_bytes,
           std::chrono::milliseconds timeout, const std::function<bool()>& stop, const std::string& what) {
    require(bytes <= detail::relay_max_bytes, "bytes of one relayed exchange", bytes, "<= 64 MiB");
    std::lock_guard lock(mutex_);
    const auto until = std::chrono::steady_clock::now() + timeout;
    const detail::relay_header h{kind, static_cast<std::uint32_t>(bytes)};
    if (!detail::relay_write(fd_, &h, sizeof h) || !detail::relay_write(fd_, mine, bytes)) {
      throw comm_error(what + ": the launcher is gone");
    }
    detail::relay_header r;
    detail::relay_read(fd_, &r, sizeof r, until, stop, what);
    if (r.kind == detail::relay_failed) {
      std::string line(std::min(r.bytes, detail::relay_max_bytes), '\0');
      detail::relay_read(fd_, line.data(), line.size(), until, {}, what);
      throw comm_error(line);
    }
    if (r.bytes != out_bytes) throw comm_error(what + ": the launcher sent " + std::to_string(r.bytes) + " bytes, need " +
                                               std::to_string(out_bytes));
    detail::relay_read(fd_, out, out_bytes, until, {}, what);
  }
  int fd_;
  std::mutex mutex_;
};

// The launcher's end: serve() answers one request when one is waiting (within `wait`), running it through
// `gather` (an allgather over the hosts, given a stop condition: the attempt's end closed, so a gather for an
// attempt that died is given up) or `barrier`; a failure goes back as its line. Returns false once the attempt
// closed its end.
class relay_server {
 public:
  using gather_fn = std::function<void(const void* mine, void* all, std::size_t bytes, const std::function<bool()>& stop)>;
  relay_server(int fd, std::size_t hosts, gather_fn gather, std::function<void()> barrier)
      : fd_(fd), hosts_(hosts), gather_(std::move(gather)), barrier_(std::move(barrier)) {}
  relay_server(const relay_server&) = delete;
  relay_server& operator=(const relay_server&) = delete;
  ~relay_server() { ::close(fd_); }

  bool serve(std::chrono::milliseconds wait, std::chrono::milliseconds timeout) {
    if (closed_) return false;
    pollfd pf{fd_, POLLIN, 0};
    const int r = ::poll(&pf, 1, static_cast<int>(wait.count()));
    if (r <= 0) return true;
    detail::relay_header h;
    std::vector<char> mine;
    try {
      const auto until = std::chrono::steady_clock::now() + timeout;
      detail::relay_read(fd_, &h, sizeof h, until, {}, "relay request");
      if (h.bytes > detail::relay_max_bytes) throw comm_error("relay request of " + std::to_string(h.bytes) + " bytes");
      mine.resize(h.bytes);
      detail::relay_read(fd_, mine.data(), mine.size(), until, {}, "relay request");
    } catch (const comm_error&) {
      closed_ = true;  // the attempt ended (or wrote garbage): nothing more to serve
      return false;
    }
    ++served_;
    try {
      std::vector<char> all(h.bytes * hosts_);
      if (h.kind == detail::relay_allgather) gather_(mine.data(), all.data(), mine.size(), [this] { return attempt_gone(); });
      else if (h.kind == detail::relay_barrier) barrier_();
      else throw comm_error("relay request of kind " + std::to_string(h.kind));
      const detail::relay_header ok{detail::relay_done, static_cast<std::uint32_t>(all.size())};
      if (!detail::relay_write(fd_, &ok, sizeof ok) || !detail::relay_write(fd_, all.data(), all.size())) closed_ = true;
    } catch (const std::exception& e) {
      const std::string line = e.what();
      const detail::relay_header bad{detail::relay_failed, static_cast<std::uint32_t>(line.size())};
      if (!detail::relay_write(fd_, &bad, sizeof bad) || !detail::relay_write(fd_, line.data(), line.size())) closed_ = true;
      throw;
    }
    return !closed_;
  }
  [[nodiscard]] std::uint64_t served() const noexcept { return served_; }

 private:
  // The attempt closed its end (it ended): a hang-up, or a read that would return end of file.
  bool attempt_gone() const {
    pollfd pf{fd_, POLLIN, 0};
    if (::poll(&pf, 1, 0) <= 0) return false;
    if ((pf.revents & (POLLHUP | POLLERR)) != 0) return true;
    char c;
    return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }
  int fd_;
  std::size_t hosts_;
  gather_fn gather_;
  std::function<void()> barrier_;
  bool closed_ = false;
  std::uint64_t served_ = 0;
};

}  // namespace gmi::runtime

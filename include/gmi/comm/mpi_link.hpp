#pragma once
// comm::mpi_link: the hosts of a multi-host run (one launcher process a host, started by mpirun or srun) joined
// through MPI. One thread of the link makes every MPI call after MPI_Init: heartbeats to every other host, the
// watch for theirs, a failure notice any host may send, and the host-level gathers and the closing barrier the
// launcher asks for. No call blocks: each is nonblocking and polled against a deadline, so a host that died or
// hangs becomes one error (host_loss) within heartbeat_timeout instead of an MPI call that never returns.
// Restarts (--restart-on-failure): a host may ask every host to restart (a restart notice, not a loss). Each attempt
// of the run is an epoch whose gathers and barriers use their own communicator, so a gather one host gave up in
// the failed attempt never meets a gather of the next one.
// Built when CMake finds MPI (target gmi::mpi defines GMI_WITH_MPI); elsewhere mpi_link's constructor throws one
// config_error that says so, and mpi_built is false.

#if defined(GMI_WITH_MPI)
#include <mpi.h>
#endif

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gmi/comm/wait.hpp>
#include <gmi/core/error.hpp>

namespace gmi::comm {

#if defined(GMI_WITH_MPI)
inline constexpr bool mpi_built = true;
#else
inline constexpr bool mpi_built = false;
#endif

struct mpi_link_options {
  milliseconds heartbeat_interval{100};   // how often this host tells every other host it is alive
  milliseconds heartbeat_timeout{5000};   // no heartbeat from a host for this long: that host is lost
  milliseconds startup_timeout{60000};    // MPI_Init to the hosts' names gathered
  milliseconds poll{1};                   // the link thread's sleep between polls (it shares the cores)
  // ... while a gather or barrier is in flight: a sum a training iteration waits on (gmi::run's statistics across
  // hosts) costs a poll or two, so these polls are short; a posted job wakes the thread at once. 0: no sleep,
  // MPI_Test again after a yield (it takes a core while a sum is in flight; docs/multihost.md compares the two).
  microseconds busy_poll{20};
  int epochs = 1;  // attempts of the run (1 + restarts): one communicator each, duplicated at start
};

// Why another host is gone: its index, its name (when known) and one line of cause.
struct host_loss {
  int host = -1;
  std::string name;
  std::string cause;  // "no heartbeat for 3.1 s", "reported: GMI 3 (...) threw: ...", "MPI error: ..."
  [[nodiscard]] std::string describe() const {
    return "host " + std::to_string(host) + (name.empty() ? "" : " (" + name + ")") + " " + cause;
  }
};

#if defined(GMI_WITH_MPI)

class mpi_link {
 public:
  // Initializes MPI (unless the program did) and gathers every host's name (this_name: this host's) within
  // startup_timeout; then starts the link thread.
  mpi_link(const std::string& this_name, mpi_link_options options = {}) : options_(options) {
    require(options.heartbeat_interval.count() > 0 && options.heartbeat_timeout > 2 * options.heartbeat_interval,
            "mpi_link heartbeat interval/timeout",
            std::to_string(options.heartbeat_interval.count()) + "/" + std::to_string(options.heartbeat_timeout.count()) +
                " ms",
            "an interval > 0 and a timeout over twice the interval");
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready) {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        throw comm_error(
            "MPI_Init_thread failed: is this process started by mpirun or srun with an MPI it was built for?");
      }
      owns_mpi_ = true;
      if (provided < MPI_THREAD_SERIALIZED) {
        throw config_error(
            got_need("MPI thread support", provided, "MPI_THREAD_SERIALIZED (the link calls MPI from its own thread)"));
      }
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);  // a dead peer is an error code we handle, not an abort
    MPI_Comm_rank(comm_, &host_);
    MPI_Comm_size(comm_, &hosts_);
    gather_names(this_name);
    require(options.epochs >= 1 && options.epochs <= 64, "mpi_link epochs", options.epochs, "1..64 (1 + restarts)");
    for (int e = 0; e < options.epochs; ++e) {  // every host is here (the names are gathered): bounded anyway
      MPI_Comm c = MPI_COMM_NULL;
      MPI_Request r = MPI_REQUEST_NULL;
      MPI_Comm_idup(comm_, &c, &r);
      bounded_wait([&] {
            int flag = 0;
            if (MPI_Test(&r, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) throw comm_error("MPI error duplicating a communicator");
            return flag != 0;
          },
          [] {}, options_.startup_timeout, "duplicating the hosts' communicator for attempt " + std::to_string(e + 1),
          long_wait());
      MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
      epoch_comms_.push_back(c);
    }
    const auto now = std::chrono::steady_clock::now();
    peers_.resize(static_cast<std::size_t>(hosts_));
    for (int h = 0; h < hosts_; ++h) {
      peers_[static_cast<std::size_t>(h)].seen = now;
      if (h != host_) post_beat_receive(h);
    }
    MPI_Irecv(notice_in_, sizeof notice_in_, MPI_CHAR, MPI_ANY_SOURCE, tag_notice, comm_, &notice_request_);
    MPI_Irecv(&restart_in_, sizeof restart_in_, MPI_BYTE, MPI_ANY_SOURCE, tag_restart, comm_, &restart_request_);
    thread_ = std::thread([this] { loop(); });
  }
  mpi_link(const mpi_link&) = delete;
  mpi_link& operator=(const mpi_link&) = delete;
  // Stops the link thread; after a clean finish() (every host reached it) MPI is finalized, otherwise left as
  // it is (a lost peer can make MPI_Finalize wait forever): the process is about to exit with an error anyway.
  ~mpi_link() {
    {
      std::lock_guard lock(mutex_);
      quit_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    if (finished_ && !loss_) {
      cancel(notice_request_);
      cancel(restart_request_);
      for (auto& p : peers_) cancel(p.request);
      for (auto& c : epoch_comms_) MPI_Comm_free(&c);
      MPI_Comm_free(&comm_);
      if (owns_mpi_) MPI_Finalize();
    }
  }

  [[nodiscard]] int host() const noexcept { return host_; }
  [[nodiscard]] int hosts() const noexcept { return hosts_; }
  [[nodiscard]] const std::vector<std::string>& names() const noexcept { return names_; }

  // The first other host lost (or that reported a failure), if any.
  [[nodiscard]] std::optional<host_loss> lost() const {
    std::lock_guard lock(mutex_);
    return loss_;
  }

  // A restart another host asked for in this epoch (host: who asked, cause: "asked for a restart: <its line>").
  [[nodiscard]] std::optional<host_loss> restart_requested() const {
    std::lock_guard lock(mutex_);
    return restart_;
  }
  [[nodiscard]] int epoch() const {
    std::lock_guard lock(mutex_);
    return epoch_;
  }

  // Asks every other host to restart the run (`line`: why, one line); waits at most `limit` for the notices to
  // leave. The gathers of this epoch fail on every host that gets it.
  void request_restart(const std::string& line, milliseconds limit = milliseconds(1000)) {
    {
      std::lock_guard lock(mutex_);
      restart_out_.epoch = epoch_;
      std::snprintf(restart_out_.line, sizeof restart_out_.line, "%s", line.c_str());
    }
    try {
      run_job(job_kind::restart, nullptr, nullptr, 0, limit, "restart notice");
    } catch (const comm_error&) {  // best effort, as a failure notice: a host that misses it is lost or ending
    }
  }

  // The next attempt: its gathers use the next communicator; restart requests of the last epoch are forgotten
  // (a stale one that arrives later is dropped by its epoch). Every host calls it once a restart.
  void next_epoch() {
    std::lock_guard lock(mutex_);
    require(epoch_ + 1 < static_cast<int>(epoch_comms_.size()), "mpi_link attempts", epoch_ + 2,
            "<= " + std::to_string(epoch_comms_.size()) + " (mpi_link_options::epochs)");
    ++epoch_;
    restart_.reset();
  }

  // Every host's `bytes` bytes into `all` (hosts x bytes, in host order). Throws comm_error naming the lost host
  // when one is lost before the gather completes, after `timeout`, or when stop() turns true.
  void allgather(const void* mine, void* all, std::size_t bytes, milliseconds timeout = default_timeout(),
                 const std::function<bool()>& stop = {}) {
    run_job(job_kind::gather, mine, all, bytes, timeout, "allgather of " + std::to_string(bytes) + " bytes", stop);
  }

  // The closing barrier: returns when every host has called it (heartbeats go on meanwhile, so a host that
  // finishes first is not taken for lost). After it the heartbeats stop.
  void finish(milliseconds timeout = default_timeout()) {
    run_job(job_kind::barrier, nullptr, nullptr, 0, timeout, "closing barrier");
    std::lock_guard lock(mutex_);
    finished_ = true;
  }

  // Tells every other host that this host's run failed (`line`: the failure, one line); waits at most `limit`
  // for the notices to leave.
  void notify_failure(const std::string& line, milliseconds limit = milliseconds(1000)) {
    std::snprintf(notice_out_, sizeof notice_out_, "%s", line.c_str());
    try {
      run_job(job_kind::notice, nullptr, nullptr, 0, limit, "failure notice");
    } catch (const comm_error&) {  // the notice is best effort: the caller is ending the run already
    }
  }

 private:
  enum class job_kind { gather, barrier, notice, restart };
  static constexpr int tag_beat = 7101, tag_notice = 7102, tag_restart = 7103;
  struct restart_message {
    int epoch = 0;
    char line[508] = {};
  };

  struct peer {
    MPI_Request request = MPI_REQUEST_NULL;
    int beat = 0;
    std::chrono::steady_clock::time_point seen;
  };

  struct job {
    job_kind kind = job_kind::gather;
    std::vector<char> send, recv;
    std::size_t bytes = 0;
    std::vector<MPI_Request> requests;
    bool started = false, done = false;
    std::string error;
  };

  static void cancel(MPI_Request& r) {
    if (r == MPI_REQUEST_NULL) return;
    MPI_Cancel(&r);
    MPI_Request_free(&r);
  }

  void gather_names(const std::string& this_name) {
    char mine[64] = {};
    std::snprintf(mine, sizeof mine, "%s", this_name.c_str());
    std::vector<char> all(static_cast<std::size_t>(hosts_) * sizeof mine);
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Iallgather(mine, sizeof mine, MPI_CHAR, all.data(), sizeof mine, MPI_CHAR, comm_, &r);
    bounded_wait(
        [&] {
          int flag = 0;
          if (MPI_Test(&r, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) throw comm_error("MPI error gathering host names");
          return flag != 0;
        },
        [] {}, options_.startup_timeout,
        "gathering the names of " + std::to_string(hosts_) + " hosts (a host did not start)", long_wait());
    for (int h = 0; h < hosts_; ++h) names_.emplace_back(all.data() + static_cast<std::size_t>(h) * sizeof mine);
  }

  void post_beat_receive(int h) {
    peer& p = peers_[static_cast<std::size_t>(h)];
    if (MPI_Irecv(&p.beat, 1, MPI_INT, h, tag_beat, comm_, &p.request) != MPI_SUCCESS) {
      lose(h, "MPI error posting a heartbeat receive");
    }
  }

  // Called with mutex_ held.
  void lose(int h, const std::string& cause) {
    if (loss_) return;
    const bool named = h >= 0 && h < static_cast<int>(names_.size());
    loss_ = host_loss{h, named ? names_[static_cast<std::size_t>(h)] : "", cause};
    if (job_ && !job_->done) {
      job_->error = loss_->describe();
      job_->done = true;
    }
    done_.notify_all();
  }

  // Another host asked for a restart in this epoch (mutex_ held): the epoch's gather or barrier in flight fails.
  void asked_restart(int h, const std::string& line) {
    const bool named = h >= 0 && h < static_cast<int>(names_.size());
    restart_ = host_loss{h, named ? names_[static_cast<std::size_t>(h)] : "", "asked for a restart: " + line};
    if (job_ && !job_->done && (job_->kind == job_kind::gather || job_->kind == job_kind::barrier)) {
      job_->error = restart_->describe();
      job_->done = true;
    }
    done_.notify_all();
  }

  // Posts a job to the link thread and waits for it: bounded by `timeout`, given up when stop() turns true. The
  // job owns its buffers; one given up stays with the link (MPI may still write them) until the link ends.
  void run_job(job_kind kind, const void* mine, void* all, std::size_t bytes, milliseconds timeout,
               const std::string& what, const std::function<bool()>& stop = {}) {
    std::unique_lock lock(mutex_);
    if (loss_) throw comm_error(what + ": " + loss_->describe());
    const bool collective = kind == job_kind::gather || kind == job_kind::barrier;
    if (collective && restart_) throw comm_error(what + ": " + restart_->describe());
    auto j = std::make_unique<job>();
    j->kind = kind;
    if (mine) j->send.assign(static_cast<const char*>(mine), static_cast<const char*>(mine) + bytes);
    j->recv.resize(static_cast<std::size_t>(hosts_) * bytes);
    j->bytes = bytes;
    job_ = j.get();
    wake_.notify_all();  // the link thread starts it now, not at its next poll
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string gave_up;
    while (!j->done) {
      done_.wait_for(lock, milliseconds(20));
      if (j->done) break;
      if (stop && stop()) gave_up = what + ": the run is being torn down";
      else if (std::chrono::steady_clock::now() > deadline) {
        gave_up = what + " across " + std::to_string(hosts_) + " hosts: timed out after " +
                  std::to_string(timeout.count()) + " ms with every host's heartbeat present";
      }
      if (!gave_up.empty()) break;
    }
    job_ = nullptr;
    if (!gave_up.empty()) {
      abandoned_.push_back(std::move(j));  // a collective can not be cancelled: its buffers live on
      throw comm_error(gave_up);
    }
    if (!j->error.empty()) {
      // A started collective that a loss or a restart notice failed may still complete: MPI writes its buffers.
      const std::string error = j->error;
      if (j->started && !j->requests.empty()) abandoned_.push_back(std::move(j));
      throw comm_error(what + ": " + error);
    }
    if (all) std::memcpy(all, j->recv.data(), j->recv.size());
  }

  void start(job& j) {
    j.started = true;
    int rc = MPI_SUCCESS;
    if (j.kind == job_kind::gather) {
      j.requests.resize(1);
      rc = MPI_Iallgather(j.send.data(), static_cast<int>(j.bytes), MPI_BYTE, j.recv.data(), static_cast<int>(j.bytes),
                          MPI_BYTE, epoch_comms_[static_cast<std::size_t>(epoch_)], j.requests.data());
    } else if (j.kind == job_kind::barrier) {
      j.requests.resize(1);
      rc = MPI_Ibarrier(epoch_comms_[static_cast<std::size_t>(epoch_)], j.requests.data());
    } else if (j.kind == job_kind::restart) {
      for (int h = 0; h < hosts_ && rc == MPI_SUCCESS; ++h) {
        if (h == host_) continue;
        j.requests.emplace_back();
        rc = MPI_Isend(&restart_out_, sizeof restart_out_, MPI_BYTE, h, tag_restart, comm_, &j.requests.back());
      }
    } else {
      for (int h = 0; h < hosts_ && rc == MPI_SUCCESS; ++h) {
        if (h == host_) continue;
        j.requests.emplace_back();
        rc = MPI_Isend(notice_out_, static_cast<int>(std::strlen(notice_out_) + 1), MPI_CHAR, h, tag_notice, comm_,
                       &j.requests.back());
      }
    }
    if (rc != MPI_SUCCESS) {
      j.error = "MPI error starting the operation";
      j.done = true;
    }
  }

  void poll_job(job& j) {
    int flag = 0;
    const int count = static_cast<int>(j.requests.size());
    if (count > 0 && MPI_Testall(count, j.requests.data(), &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS) {
      j.error = "MPI error in the operation";
      j.done = true;
    } else if (count == 0 || flag) {
      j.done = true;
    }
    if (j.done) done_.notify_all();
  }

  // The link thread: beats, watches, and runs the job the launcher posted, until quit_.
  void loop() {
    auto last_beat = std::chrono::steady_clock::time_point{};
    int beat = 0;
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (quit_) return;
        const auto now = std::chrono::steady_clock::now();
        if (!loss_ && !finished_) {
          if (now - last_beat >= options_.heartbeat_interval) {
            ++beat;
            for (int h = 0; h < hosts_; ++h) {
              if (h == host_) continue;
              MPI_Request r = MPI_REQUEST_NULL;  // a one-int message goes eagerly: freed here, delivered anyway
              if (MPI_Isend(&beat, 1, MPI_INT, h, tag_beat, comm_, &r) != MPI_SUCCESS) {
                lose(h, "MPI error sending a heartbeat");
                break;
              }
              MPI_Request_free(&r);
            }
            last_beat = now;
          }
          watch(now);
        }
        if (job_ && !job_->done && !loss_ && !(restart_ && job_->kind != job_kind::notice && job_->kind != job_kind::restart)) {
          if (!job_->started) start(*job_);
          if (!job_->done) poll_job(*job_);
          else done_.notify_all();
        }
      }
      std::unique_lock lock(mutex_);
      const bool busy = job_ != nullptr && !job_->done;
      if (busy && options_.busy_poll.count() == 0) {  // spin: MPI_Test again at once, bounded by the job's deadline
        lock.unlock();
        std::this_thread::yield();
        continue;
      }
      wake_.wait_for(lock, busy ? microseconds(options_.busy_poll) : microseconds(options_.poll),
                     [&] { return quit_ || (job_ != nullptr && !job_->started); });
    }
  }

  // Heartbeats and failure notices from the other hosts (mutex_ held).
  void watch(std::chrono::steady_clock::time_point now) {
    int flag = 0;
    MPI_Status status;
    if (notice_request_ != MPI_REQUEST_NULL) {
      if (MPI_Test(&notice_request_, &flag, &status) != MPI_SUCCESS) {
        lose(-1, "MPI error waiting for failure notices");
        return;
      }
      if (flag) {
        notice_in_[sizeof notice_in_ - 1] = '\0';
        lose(status.MPI_SOURCE, std::string("reported: ") + notice_in_);
        return;
      }
    }
    if (restart_request_ != MPI_REQUEST_NULL) {
      flag = 0;
      if (MPI_Test(&restart_request_, &flag, &status) != MPI_SUCCESS) {
        lose(-1, "MPI error waiting for restart notices");
        return;
      }
      if (flag) {
        restart_in_.line[sizeof restart_in_.line - 1] = '\0';
        if (restart_in_.epoch == epoch_ && !restart_) asked_restart(status.MPI_SOURCE, restart_in_.line);
        MPI_Irecv(&restart_in_, sizeof restart_in_, MPI_BYTE, MPI_ANY_SOURCE, tag_restart, comm_, &restart_request_);
      }
    }
    for (int h = 0; h < hosts_; ++h) {
      if (h == host_) continue;
      peer& p = peers_[static_cast<std::size_t>(h)];
      for (int drained = 0; drained < 64; ++drained) {  // every beat that arrived since the last poll
        flag = 0;
        if (MPI_Test(&p.request, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
          lose(h, "MPI error receiving its heartbeat (its process or link is gone)");
          return;
        }
        if (!flag) break;
        p.seen = now;
        post_beat_receive(h);
        if (loss_) return;
      }
      const auto quiet = now - p.seen;
      if (quiet > options_.heartbeat_timeout) {
        char text[64];
        std::snprintf(text, sizeof text, "lost: no heartbeat for %.1f s",
                      std::chrono::duration<double>(quiet).count());
        lose(h, text);
        return;
      }
    }
  }

  mpi_link_options options_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int host_ = 0, hosts_ = 1;
  bool owns_mpi_ = false;
  std::vector<std::string> names_;
  std::vector<peer> peers_;
  MPI_Request notice_request_ = MPI_REQUEST_NULL;
  char notice_in_[512] = {};
  char notice_out_[512] = {};
  std::vector<MPI_Comm> epoch_comms_;  // gathers and barriers of attempt e use epoch_comms_[e]
  int epoch_ = 0;
  MPI_Request restart_request_ = MPI_REQUEST_NULL;
  restart_message restart_in_, restart_out_;
  std::optional<host_loss> restart_;

  mutable std::mutex mutex_;
  std::condition_variable done_;
  std::condition_variable wake_;  // the link thread's sleep: a posted job or quit ends it early
  job* job_ = nullptr;
  std::optional<host_loss> loss_;
  bool quit_ = false, finished_ = false;
  std::vector<std::unique_ptr<job>> abandoned_;
  std::thread thread_;
};

#else

// Built without MPI: constructing a link says how to get one.
class mpi_link {
 public:
  explicit mpi_link(const std::string&, mpi_link_options = {}) {
    throw config_error(got_need("multi-host run (more than one launcher process)", "gmi built without MPI",
                                "OpenMPI (libopenmpi-dev) found by CMake and the target linked to gmi::mpi"));
  }
  [[nodiscard]] int host() const noexcept { return 0; }
  [[nodiscard]] int hosts() const noexcept { return 1; }
  [[nodiscard]] const std::vector<std::string>& names() const noexcept { return names_; }
  [[nodiscard]] std::optional<host_loss> lost() const { return std::nullopt; }
  [[nodiscard]] std::optional<host_loss> restart_requested() const { return std::nullopt; }
  [[nodiscard]] int epoch() const { return 0; }
  void request_restart(const std::string&, milliseconds = milliseconds(1000)) {}
  void next_epoch() {}
  void allgather(const void*, void*, std::size_t, milliseconds = default_timeout(), const std::function<bool()>& = {}) {}
  void finish(milliseconds = default_timeout()) {}
  void notify_failure(const std::string&, milliseconds = milliseconds(1000)) {}

 private:
  std::vector<std::string> names_;
};

#endif

}  // namespace gmi::comm

#pragma once
// gpu_hosts: the launcher's side of a GPU run over several hosts (gmi::run's colocated layout started by mpirun
// or srun, one launcher a host, its GMIs threads). It joins the launchers through comm::mpi_link (heartbeats,
// failure notices), checks that every host runs the same GPUs x GMIs, numbers this host's GMIs globally (GMI k
// of host h is rank h * gmis + k, its GPU h * gpus + k / gmis_per_gpu), hands host 0's NCCL id to every host for
// the communicator of the GPUs' leaders, and sums the GMIs' host-side values (rollout statistics, stop votes)
// over every host: in memory within the host, then an allgather between the hosts (host_sum), timing each GMI's
// share (phases: in the sums, in MPI, waiting; gmi::run's end line across hosts). Targets that use
// it link gmi::mpi; without it the link refuses in one line. An attempt of a restart loop across hosts (a child
// process of the launcher, host_attempts.hpp) builds it relayed: no MPI of its own, every exchange with the other
// hosts through its launcher (host_relay.hpp), which checked the shapes and hands over host 0's NCCL id.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <gmi/comm/mpi_link.hpp>
#include <gmi/comm/nccl.hpp>
#include <gmi/core/error.hpp>
#include <gmi/runtime/host_relay.hpp>
#include <gmi/runtime/host_sum.hpp>
#include <gmi/runtime/hosts.hpp>
#include <gmi/runtime/launcher.hpp>

namespace gmi::runtime {

// Where one GMI's cross-host sums spent their time (gpu_hosts::phases), cumulative since the hosts joined:
// sum_seconds from each sum's call to its return, of which mpi_seconds inside the MPI allgather between the hosts
// (on the GMI of this host that ran it) and wait_seconds the rest (waiting for this host's other GMIs and for the
// GMI that ran the allgather; the in-memory tree sums too).
struct sum_phases {
  std::uint64_t sums = 0;
  double sum_seconds = 0, mpi_seconds = 0, wait_seconds = 0;
  [[nodiscard]] sum_phases since(const sum_phases& before) const noexcept {
    return {sums - before.sums, sum_seconds - before.sum_seconds, mpi_seconds - before.mpi_seconds,
            wait_seconds - before.wait_seconds};
  }
};

struct gpu_hosts_options {
  int gpus = 1;          // GPUs of this host the run uses (every host the same)
  int gmis_per_gpu = 1;  // GMIs on each of them (every host the same)
  std::chrono::milliseconds timeout{60000};  // a sum or gather between the hosts, start to end
  comm::mpi_link_options link;               // heartbeats between the hosts
  // Host 0's NCCL id for the leaders' communicator (a test passes its own; the default asks NCCL).
  std::function<comm::nccl_id()> make_id = [] { return comm::nccl_id::generate(); };
};

// What an attempt's relayed gpu_hosts gets from its launcher: the relay's descriptor and this attempt's NCCL id.
struct relayed_hosts {
  int fd = -1;
  comm::nccl_id leaders_id;
};

class gpu_hosts {
 public:
  // Joins the other hosts' launchers (bounded by the link's startup timeout and o.timeout); throws config_error
  // when the MPI world or the hosts' shapes disagree.
  gpu_hosts(const host_info& h, gpu_hosts_options o) : host_(h), o_(std::move(o)) {
    require(h.hosts >= 2, "hosts of a multi-host GPU run", h.hosts, ">= 2 (one host runs without gpu_hosts)");
    require(o_.gpus >= 1 && o_.gmis_per_gpu >= 1, "GPUs x GMIs a host",
            std::to_string(o_.gpus) + " x " + std::to_string(o_.gmis_per_gpu), ">= 1 each");
    link_ = std::make_unique<comm::mpi_link>(h.id, o_.link);
    require(link_->hosts() == h.hosts, "MPI processes", link_->hosts(),
            std::to_string(h.hosts) + " (the " + h.source + " launcher's world)");
    require(link_->host() == h.host, "MPI rank of host " + std::to_string(h.host), link_->host(),
            std::to_string(h.host) + " (the " + h.source + " launcher's rank)");
    struct shape {
      int gpus, gmis_per_gpu;
      char id[NCCL_UNIQUE_ID_BYTES];
    };
    shape mine{o_.gpus, o_.gmis_per_gpu, {}};
    // Simulated hosts: NCCL gets the same hosts as gmi (before host 0's first NCCL call, the id below).
    if (h.local_count > 1) nccl_host_ = comm::nccl_host_id_default(h.id);
    if (h.host == 0) {
      const comm::nccl_id id = o_.make_id();
      std::memcpy(mine.id, id.id.internal, NCCL_UNIQUE_ID_BYTES);
    }
    std::vector<shape> all(static_cast<std::size_t>(h.hosts));
    link_->allgather(&mine, all.data(), sizeof mine, o_.timeout);
    for (int k = 0; k < h.hosts; ++k) {
      const shape& s = all[static_cast<std::size_t>(k)];
      require(s.gpus == o_.gpus && s.gmis_per_gpu == o_.gmis_per_gpu,
              "GPUs x GMIs of host " + std::to_string(k) + " (" + link_->names()[static_cast<std::size_t>(k)] + ")",
              std::to_string(s.gpus) + " x " + std::to_string(s.gmis_per_gpu),
              std::to_string(o_.gpus) + " x " + std::to_string(o_.gmis_per_gpu) + " like host " + std::to_string(h.host));
    }
    std::memcpy(leaders_id_.id.internal, all[0].id, NCCL_UNIQUE_ID_BYTES);
    make_sums();
  }
  // An attempt's side (a child process of its host's launcher): the exchanges go through the relay.
  gpu_hosts(const host_info& h, gpu_hosts_options o, const relayed_hosts& r) : host_(h), o_(std::move(o)) {
    require(h.hosts >= 2, "hosts of a multi-host GPU run", h.hosts, ">= 2 (one host runs without gpu_hosts)");
    require(o_.gpus >= 1 && o_.gmis_per_gpu >= 1, "GPUs x GMIs a host",
            std::to_string(o_.gpus) + " x " + std::to_string(o_.gmis_per_gpu), ">= 1 each");
    relay_ = std::make_unique<relay_client>(r.fd);
    leaders_id_ = r.leaders_id;
    if (h.local_count > 1) nccl_host_ = comm::nccl_host_id_default(h.id);
    make_sums();
  }
  gpu_hosts(const gpu_hosts&) = delete;
  gpu_hosts& operator=(const gpu_hosts&) = delete;

  [[nodiscard]] const host_info& host() const noexcept { return host_; }
  [[nodiscard]] int hosts() const noexcept { return host_.hosts; }
  [[nodiscard]] int gmis() const noexcept { return o_.gpus * o_.gmis_per_gpu; }  // this host's
  [[nodiscard]] int first_rank() const noexcept { return host_.host * gmis(); }
  [[nodiscard]] int global_world() const noexcept { return host_.hosts * gmis(); }
  [[nodiscard]] int global_gpus() const noexcept { return host_.hosts * o_.gpus; }
  // The global index of this host's GPU `k` (0 .. gpus - 1): its rank among the leaders.
  [[nodiscard]] int global_gpu(int k) const noexcept { return host_.host * o_.gpus + k; }
  [[nodiscard]] const comm::nccl_id& leaders_id() const noexcept { return leaders_id_; }
  // NCCL_HOSTID as NCCL sees it when this launcher set its default (simulated hosts); empty otherwise.
  [[nodiscard]] const std::string& nccl_host() const noexcept { return nccl_host_; }
  [[nodiscard]] std::chrono::milliseconds timeout() const noexcept { return o_.timeout; }
  // "host 1 'node7'": this host in messages.
  [[nodiscard]] std::string describe() const { return "host " + std::to_string(host_.host) + " '" + host_.id + "'"; }

  // Places this host's GMIs in the job: global numbering, the host's id in its shared-memory names, and the
  // watch that turns a lost host into the run's failure (one line naming that host and its GMIs).
  void place(launch_spec& s) const {
    s.host = host_.host;
    s.host_name = host_.id;
    s.first_rank = first_rank();
    s.global_world = global_world();
    s.run_tag = "h" + shm_safe(host_.id) + "-";
    s.watch = [this] { return lost_host(); };
  }

  // The first other host lost or that reported a failure, as the run's failure: "host 1 'node7' (GMIs 8-15) lost:
  // no heartbeat for 5.0 s". Relayed: none (the launcher watches the other hosts and ends the attempt).
  [[nodiscard]] std::optional<failure> lost_host() const {
    if (!link_) return std::nullopt;
    const auto lost = link_->lost();
    if (!lost) return std::nullopt;
    const std::string whose = lost->host >= 0 ? " (" + gmi_range(lost->host * gmis(), gmis()) + ")" : "";
    return failure{-1, lost->cause, "host " + std::to_string(lost->host) + " '" + lost->name + "'" + whose + " " + lost->cause};
  }
  // After a GMI of this host failed in a collective: a peer host that died makes NCCL fail before the link misses
  // its heartbeats; this waits up to the heartbeat timeout (and a second) for the link to name such a host.
  [[nodiscard]] std::optional<failure> wait_for_lost_host() const {
    if (!link_) return std::nullopt;
    const auto until = std::chrono::steady_clock::now() + o_.link.heartbeat_timeout + std::chrono::seconds(1);
    for (;;) {
      if (auto f = lost_host()) return f;
      if (std::chrono::steady_clock::now() > until) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // In place: the sum of `data` over every GMI of every host; GMI `local` (its rank on this host) calls it, every
  // GMI of every host at the same points with the same n. The order of the additions is fixed (host_sum's tree),
  // so every GMI gets the same bits.
  void sum(int local, double* data, std::size_t n, const std::function<bool()>& stop) {
    require(local >= 0 && local < gmis(), "gpu_hosts::sum GMI", local, "0.." + std::to_string(gmis() - 1));
    sum_phases& p = phases_[static_cast<std::size_t>(local)];
    const auto t0 = std::chrono::steady_clock::now();
    summing() = &p;
    try {
      sums_->sum(local, data, n, stop);
    } catch (...) {
      summing() = nullptr;
      throw;
    }
    summing() = nullptr;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++p.sums;
    p.sum_seconds += s;
    p.wait_seconds = std::max(0.0, p.sum_seconds - p.mpi_seconds);
  }
  // GMI `local`'s time in sum() so far (read by that GMI's thread, or after it ended).
  [[nodiscard]] sum_phases phases(int local) const {
    require(local >= 0 && local < gmis(), "gpu_hosts::phases GMI", local, "0.." + std::to_string(gmis() - 1));
    return phases_[static_cast<std::size_t>(local)];
  }
  // Makes every waiting and later sum throw (a GMI of this host failed).
  void break_sums(const std::string& why) { sums_->break_group(why); }

  // Every host's `value`, in host order (the launcher, after its GMIs ended), bounded by `timeout` (default: the
  // sums' timeout). A longer bound is for a gather that a host reaches late on purpose (gmi::run's final totals,
  // while host 0 evaluates the final policy); the heartbeats still name a host that is lost meanwhile.
  template <class T>
  [[nodiscard]] std::vector<T> gather(const T& value, std::optional<std::chrono::milliseconds> timeout = {}) {
    static_assert(std::is_trivially_copyable_v<T>, "gpu_hosts::gather sends the bytes of T");
    std::vector<T> all(static_cast<std::size_t>(host_.hosts));
    cross(&value, all.data(), sizeof(T), {}, timeout.value_or(o_.timeout));
    return all;
  }
  // Every host's `bytes` bytes into `all` (hosts x bytes, host order): the launchers' own exchanges (bounded).
  void gather_bytes(const void* mine, void* all, std::size_t bytes, const std::function<bool()>& stop = {}) {
    cross(mine, all, bytes, stop, o_.timeout);
  }
  // The closing barrier after a clean run (the heartbeats go on until every host reaches it).
  void finish() {
    if (link_) link_->finish(o_.timeout);
    else relay_->barrier(o_.timeout);
  }
  // Tells the other hosts this host's run failed (`line`: the one line), best effort, bounded. Relayed: the
  // launcher tells them, once the attempt has ended.
  void notify_failure(const std::string& line) {
    if (link_) link_->notify_failure(line);
  }
  // A fresh NCCL id from host 0 for the leaders (the launcher's, before each attempt of a restart loop).
  void renew_leaders_id() {
    require(link_ != nullptr, "renew_leaders_id", "a relayed gpu_hosts", "the launcher's (it holds the link)");
    std::array<char, NCCL_UNIQUE_ID_BYTES> mine{};
    if (host_.host == 0) std::memcpy(mine.data(), o_.make_id().id.internal, NCCL_UNIQUE_ID_BYTES);
    std::vector<std::array<char, NCCL_UNIQUE_ID_BYTES>> all(static_cast<std::size_t>(host_.hosts));
    link_->allgather(mine.data(), all.data(), NCCL_UNIQUE_ID_BYTES, o_.timeout);
    std::memcpy(leaders_id_.id.internal, all[0].data(), NCCL_UNIQUE_ID_BYTES);
  }
  // The link to the other hosts (the launcher's; null when relayed).
  [[nodiscard]] comm::mpi_link* link() const noexcept { return link_.get(); }
  [[nodiscard]] bool relayed() const noexcept { return relay_ != nullptr; }

 private:
  host_info host_;
  gpu_hosts_options o_;
  std::unique_ptr<comm::mpi_link> link_;
  std::unique_ptr<relay_client> relay_;  // an attempt's: the launcher holds the link
  comm::nccl_id leaders_id_;
  std::string nccl_host_;
  std::unique_ptr<host_sum> sums_;
  std::vector<sum_phases> phases_;  // one a GMI of this host, each written by its own GMI's thread
  // An allgather between the hosts: through the link, or relayed through the launcher.
  void cross(const void* mine, void* all, std::size_t bytes, const std::function<bool()>& stop,
             std::chrono::milliseconds timeout) {
    if (link_) link_->allgather(mine, all, bytes, timeout, stop);
    else relay_->allgather(mine, all, bytes, static_cast<std::size_t>(host_.hosts), timeout, stop);
  }
  void make_sums() {
    phases_.resize(static_cast<std::size_t>(gmis()));
    sums_ = std::make_unique<host_sum>(
        gmis(), host_.hosts,
        [this](const void* mine_sum, void* every, std::size_t bytes, const std::function<bool()>& stop) {
          const auto t0 = std::chrono::steady_clock::now();
          cross(mine_sum, every, bytes, stop, o_.timeout);
          // host_sum runs the cross step on the thread of the GMI that arrived last: that GMI's phases
          if (sum_phases* p = summing()) p->mpi_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        },
        o_.timeout);
  }
  // The phases of the GMI whose thread is inside sum() now (the cross step adds its MPI time there).
  static sum_phases*& summing() {
    thread_local sum_phases* current = nullptr;
    return current;
  }
};

}  // namespace gmi::runtime

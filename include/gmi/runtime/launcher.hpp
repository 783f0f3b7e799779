#pragma once
// What to launch (launch_spec: one placement per GMI) and how a GMI process is started: re-exec of this binary
// (/proc/self/exe, same argv) with GMI_* variables, in its own process group, killed by the kernel if the
// launcher dies (PR_SET_PDEATHSIG). run_worker is the worker side. Supervision is in supervisor.hpp.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/runtime/context.hpp>
#include <gmi/runtime/identity.hpp>
#include <gmi/runtime/segment.hpp>

extern char** environ;

namespace gmi::runtime {

using env_list = std::vector<std::pair<std::string, std::string>>;

// Where one GMI runs and what it carries.
struct placement {
  int gpu = -1;            // -1: host GMI
  int slice = 0;
  int local_device = 0;    // CUDA ordinal inside the GMI
  std::vector<std::string> roles;
  env_list env;            // extra variables for this GMI's process (MPS pipe dir, CUDA_VISIBLE_DEVICES, ...)
  int device_sms = 0;      // MPS: SMs of the whole GPU, which the client checks its share against (0: no check)
};

// A GMI that was running when the run failed, handed to before_kill (pid 0 for thread GMIs).
struct live_gmi {
  int rank = 0;
  pid_t pid = 0;
  int gpu = -1;
};

// Why a run stopped early: the GMI (rank -1: the launcher itself, e.g. a signal) and one line naming it.
struct failure {
  int rank = -1;
  std::string cause;    // "exited with signal 9 (SIGKILL)", "hung: no heartbeat for 5.0 s", ...
  std::string message;  // "GMI 3 (GPU 0, slice 1) exited with signal 9 (SIGKILL)"
};

struct launch_spec {
  std::vector<placement> gmis;               // rank i runs at gmis[i]
  std::vector<std::vector<int>> groups;      // the run's groups (get_group)
  int gpus = 1;                              // the run's shape, for every GMI's identity (uniform() sets it)
  int gmis_per_gpu = 1;
  std::string program = "/proc/self/exe";    // process GMIs: the binary to start (default: this one)
  std::optional<std::vector<std::string>> args;  // its argv (default: this process's argv)
  env_list env;                              // variables for every GMI process
  std::chrono::milliseconds heartbeat_timeout{5000};  // no heartbeat this long: hung (0: no hang detection)
  std::chrono::milliseconds startup_timeout{60000};   // spawn to first contact (with hang detection on)
  std::chrono::milliseconds stop_grace{2000};         // teardown: SIGTERM (or stop flag) to SIGKILL (or detach)
  std::chrono::milliseconds poll_interval{10};
  std::uint32_t ring_capacity = 1u << 16;    // bytes per ordered pair of GMIs
  bool handle_signals = true;                // SIGINT/SIGTERM in the launcher tear the run down
  // Multi-host runs (runtime/hosts.hpp): this launcher's host and the global numbering of its GMIs. The run's
  // segment name starts with run_tag (the host id), so simulated hosts on one machine share no /dev/shm names.
  int host = -1;                             // -1: a one-host run
  std::string host_name;
  int first_rank = 0;                        // the global rank of this host's GMI 0
  int global_world = 0;                      // GMIs of every host (0: this host's only)
  std::string run_tag;
  // Polled with every supervision round: a failure from outside this host (a lost host) ends the run.
  std::function<std::optional<failure>()> watch;
  // Called once on a failure before any GMI is signalled (MPS: terminate_client for the siblings).
  std::function<void(const failure&, const std::vector<live_gmi>&)> before_kill;

  // `gpus` x `per_gpu` GMIs, rank = gpu * per_gpu + slice, one group per GPU plus (when more than one GPU) one
  // group of all; gpus == 0 makes `per_gpu` host GMIs.
  static launch_spec uniform(int gpus, int per_gpu) {
    gmi::require(gpus >= 0, "gpus", gpus, ">= 0");
    gmi::require(per_gpu >= 1, "gmis_per_gpu", per_gpu, ">= 1");
    launch_spec s;
    const int n_gpu = gpus == 0 ? 1 : gpus;
    s.gpus = n_gpu;
    s.gmis_per_gpu = per_gpu;
    std::vector<int> everyone;
    for (int g = 0; g < n_gpu; ++g) {
      std::vector<int> on_gpu;
      for (int k = 0; k < per_gpu; ++k) {
        placement p;
        p.gpu = gpus == 0 ? -1 : g;
        p.slice = k;
        p.local_device = gpus == 0 ? 0 : g;
        on_gpu.push_back(static_cast<int>(s.gmis.size()));
        everyone.push_back(static_cast<int>(s.gmis.size()));
        s.gmis.push_back(std::move(p));
      }
      s.groups.push_back(std::move(on_gpu));
    }
    if (n_gpu > 1) s.groups.push_back(std::move(everyone));
    return s;
  }

  [[nodiscard]] identity identity_of(int rank, const std::string& run_id, const std::string& shm) const {
    const placement& p = gmis.at(static_cast<std::size_t>(rank));
    identity id;
    id.rank = rank;
    id.world = static_cast<int>(gmis.size());
    id.gpu = p.gpu;
    id.slice = p.slice;
    id.local_device = p.local_device;
    id.gpus = gpus;
    id.gmis_per_gpu = gmis_per_gpu;
    id.device_sms = p.device_sms;
    id.run_id = run_id;
    id.shm_name = shm;
    id.roles = p.roles;
    id.groups = groups;
    id.host = host;
    id.host_name = host_name;
    id.first_rank = first_rank;
    id.global_world = global_world;
    return id;
  }

  // Throws config_error for a spec that can not run (checked before anything starts).
  void validate() const {
    gmi::require(!gmis.empty(), "GMIs", gmis.size(), ">= 1");
    const int world = static_cast<int>(gmis.size());
    for (std::size_t g = 0; g < groups.size(); ++g) {
      for (int r : groups[g]) {
        gmi::require(r >= 0 && r < world, "group " + std::to_string(g) + " member", r,
                     "a rank in 0.." + std::to_string(world - 1));
      }
    }
    gmi::require(heartbeat_timeout.count() >= 0, "heartbeat_timeout_ms", heartbeat_timeout.count(), ">= 0");
    gmi::require(stop_grace.count() >= 0, "stop_grace_ms", stop_grace.count(), ">= 0");
  }
};

namespace detail {

// This process's argv, as the kernel has it.
inline std::vector<std::string> own_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  std::string cur;
  for (char c : all) {
    if (c == '\0') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// GMI_* variables a child inherits: diagnosis the user set for every GMI (GMI_TRACE, GMI_GIT_REVISION). Every
// other GMI_* variable is an identity, a launcher's note (GMI_CHOSEN) or a test hook of this process and is not
// passed on; settings travel as flags, which a GMI process re-parses from the launcher's argv.
inline bool inherited_gmi_variable(std::string_view kv) {
  for (std::string_view p : {"GMI_TRACE=", "GMI_GIT_REVISION="}) {
    if (kv.rfind(p, 0) == 0) return true;
  }
  return false;
}

// The environment of a child: ours without GMI_* (a nested launcher must not pass its own identity on) except
// inherited_gmi_variable's, then `add` in order, later entries replacing earlier ones of the same name.
inline std::vector<std::string> child_environment(const std::vector<const env_list*>& add) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view kv(*e);
    if (kv.rfind("GMI_", 0) == 0 && !inherited_gmi_variable(kv)) continue;
    out.emplace_back(kv);
  }
  for (const env_list* list : add) {
    for (const auto& [k, v] : *list) {
      const std::string prefix = k + "=";
      std::erase_if(out, [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
      out.push_back(prefix + v);
    }
  }
  return out;
}

// Starts `program` with `args` and `env` in a new process group; returns its pid. Throws gmi::error with the
// exec errno when the program can not be started (reported through a close-on-exec pipe).
inline pid_t spawn_process(const std::string& program, const std::vector<std::string>& args,
                           const std::vector<std::string>& env) {
  // Everything the child touches is built before fork: only async-signal-safe calls run between fork and exec.
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) throw gmi::error("pipe2: " + detail::errno_text(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close(report[0]);
    close(report[1]);
    throw gmi::error("fork: " + detail::errno_text(e));
  }
  if (pid == 0) {
    close(report[0]);
    setpgid(0, 0);
    // The kernel SIGKILLs us when the launcher's thread that forked exits: no orphans after a launcher crash.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the launcher died before prctl took effect
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    execve(program.c_str(), argv.data(), envp.data());
    const int e = errno;
    [[maybe_unused]] auto w = write(report[1], &e, sizeof e);
    _exit(127);
  }
  close(report[1]);
  setpgid(pid, pid);  // also from the parent, so the group exists before we might signal it
  int child_errno = 0;
  ssize_t got;
  do {
    got = read(report[0], &child_errno, sizeof child_errno);
  } while (got < 0 && errno == EINTR);
  close(report[0]);
  if (got == static_cast<ssize_t>(sizeof child_errno)) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw gmi::config_error(gmi::got_need("GMI program", program,
                                          "an executable file (execve: " + detail::errno_text(child_errno) + ")"));
  }
  return pid;
}

}  // namespace detail

// The worker side of a process GMI: attaches to the run's segment, runs fn(context&), and returns the process
// exit code (0, or 1 after recording the exception's message for the supervisor's error line).
// Use: `if (auto id = gmi::runtime::this_gmi()) return gmi::runtime::run_worker(*id, work);` at the top of main.
template <class F>
int run_worker(const identity& id, F&& fn) {
  std::shared_ptr<const segment> seg;
  try {
    seg = std::make_shared<const segment>(segment::attach(id.run_id));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", id.describe().c_str(), e.what());
    return 1;
  }
  try {
    {
      context ctx(id, seg);
      fn(ctx);
    }
    return 0;
  } catch (const std::exception& e) {
    seg->set_message(id.rank, e.what());
    seg->set_state(id.rank, gmi_state::failed);
    std::fprintf(stderr, "%s failed: %s\n", id.describe().c_str(), e.what());
    return 1;
  } catch (...) {
    seg->set_message(id.rank, "unknown exception");
    seg->set_state(id.rank, gmi_state::failed);
    return 1;
  }
}

// Starts this program again (same argv) in a new process group with our environment (less GMI_* identities)
// plus `env`; returns its pid. What a restart loop runs each attempt as.
inline pid_t spawn_self(const env_list& env) {
  return detail::spawn_process("/proc/self/exe", detail::own_argv(), detail::child_environment({&env}));
}

}  // namespace gmi::runtime

#pragma once
// What the multi-host test programs (ppo_hosts.cpp, gpu_hosts_probe.cpp) share: the wall clock their lines carry
// (the scripts subtract the kill time from the detection time), the options every one of them takes (this host's
// id, the heartbeat timeout, a host that kills itself at a step) and the kill itself.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <CLI/CLI.hpp>

namespace gmi_test {

inline double wall_now() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct host_flags {
  std::string host_id;
  int heartbeat_ms = 5000;
  int kill_host = -1, kill_at = 1;  // the host that kills itself, and at which iteration (round)
  std::string kill_file;            // where it writes the wall time of the kill first
  std::string kill_signal = "KILL";

  void add_to(CLI::App& app, const char* step) {
    app.add_option("--host-id", host_id, "this host's id (default: hostname, .local rank when several share it)");
    app.add_option("--heartbeat-timeout-ms", heartbeat_ms, "a host silent this long is lost")->check(CLI::Range(300, 600000));
    app.add_option("--kill-host", kill_host, std::string("test: this host SIGKILLs itself (its whole process) at ") + step);
    app.add_option("--kill-signal", kill_signal, "... or stops itself (STOP: a hung host)")->check(CLI::IsMember({"KILL", "STOP"}));
    app.add_option("--kill-at", kill_at, std::string("the ") + step + " of the kill");
    app.add_option("--kill-file", kill_file, "where the killed host writes its wall time before the kill");
  }
  // On host `host` at `step`: writes the time, then kills (or stops) this process.
  void maybe_kill(int host, int step) const {
    if (host != kill_host || step != kill_at) return;
    if (!kill_file.empty()) std::ofstream(kill_file) << std::to_string(wall_now()) << '\n';
    ::kill(::getpid(), kill_signal == "STOP" ? SIGSTOP : SIGKILL);
  }
};

}  // namespace gmi_test

#pragma once
// Starts gmi.test.comm_worker processes (fork + exec: CUDA must not be initialised in a forked child) and
// collects their exit codes with a deadline, killing stragglers (a hang is a failure, never a stuck test).
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace gmi_test {

struct worker_result {
  std::vector<int> codes;  // exit code per worker; -signal when killed; -1000 when it had to be killed
  double seconds = 0;
};

inline worker_result run_workers(const std::vector<std::vector<std::string>>& args_per_worker,
                                 const std::vector<std::vector<std::string>>& env_per_worker,
                                 std::chrono::seconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<pid_t> pids;
  for (std::size_t w = 0; w < args_per_worker.size(); ++w) {
    std::vector<std::string> args{GMI_COMM_WORKER};
    args.insert(args.end(), args_per_worker[w].begin(), args_per_worker[w].end());
    std::vector<char*> argv;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    std::vector<std::string> env;
    const std::vector<std::string> none;
    const auto& extra = w < env_per_worker.size() ? env_per_worker[w] : none;
    for (char** e = environ; *e; ++e) {  // a variable the worker's list sets replaces the inherited one
      const std::string entry(*e);
      bool replaced = false;
      for (const auto& x : extra) replaced = replaced || entry.compare(0, x.find('=') + 1, x, 0, x.find('=') + 1) == 0;
      if (!replaced) env.push_back(entry);
    }
    env.insert(env.end(), extra.begin(), extra.end());
    std::vector<char*> envp;
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    pid_t pid = -1;
    if (posix_spawn(&pid, GMI_COMM_WORKER, nullptr, nullptr, argv.data(), envp.data()) != 0) pid = -1;
    pids.push_back(pid);
  }
  worker_result r;
  r.codes.assign(pids.size(), -2000);
  const auto deadline = start + timeout;
  std::size_t left = pids.size();
  while (left) {
    for (std::size_t i = 0; i < pids.size(); ++i) {
      if (r.codes[i] != -2000 || pids[i] < 0) continue;
      int st = 0;
      if (::waitpid(pids[i], &st, WNOHANG) == pids[i]) {
        r.codes[i] = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
        --left;
      }
    }
    if (left && std::chrono::steady_clock::now() > deadline) {
      for (std::size_t i = 0; i < pids.size(); ++i) {
        if (r.codes[i] == -2000 && pids[i] > 0) {
          ::kill(pids[i], SIGKILL);
          ::waitpid(pids[i], nullptr, 0);
          r.codes[i] = -1000;
        }
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// CUDA_VISIBLE_DEVICES=<GPU g as this process sees it> (the g-th entry of an inherited list, else g): a worker
// that sees only its own GPU, as an MPS client does.
inline std::string only_gpu(int g) {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  if (v && *v) {
    std::string list(v), item;
    int k = 0;
    for (std::size_t at = 0; at <= list.size(); ++at) {
      if (at == list.size() || list[at] == ',') {
        if (k++ == g) return "CUDA_VISIBLE_DEVICES=" + item;
        item.clear();
      } else {
        item += list[at];
      }
    }
  }
  return "CUDA_VISIBLE_DEVICES=" + std::to_string(g);
}

// Arguments for n GPUs x m GMIs, one worker per GMI.
inline std::vector<std::vector<std::string>> hier_args(const std::string& tag, int gpus, int per_gpu,
                                                       const std::string& sizes, std::vector<std::string> extra = {}) {
  std::vector<std::vector<std::string>> out;
  for (int r = 0; r < gpus * per_gpu; ++r) {
    std::vector<std::string> a{"tag=" + tag, "gpus=" + std::to_string(gpus), "per_gpu=" + std::to_string(per_gpu),
                               "rank=" + std::to_string(r), "sizes=" + sizes};
    a.insert(a.end(), extra.begin(), extra.end());
    out.push_back(a);
  }
  return out;
}

}  // namespace gmi_test

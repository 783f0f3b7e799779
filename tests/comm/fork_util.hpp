#pragma once
// Real processes for the comm tests: fork a child that runs a function and _exits with its result
// (1 on an exception, after printing it), and reap it with a deadline.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

namespace gmi_test {

template <class Fn>
pid_t fork_child(Fn&& fn) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    int code = 0;
    try {
      code = fn();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[child %d] %s\n", ::getpid(), e.what());
      code = 1;
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  return pid;
}

// The child's exit code; -signal when killed; -1000 if it did not exit in time (it is then killed).
inline int reap(pid_t pid, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int st = 0;
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      return -1000;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace gmi_test

#pragma once
// Runs a helper program (nvidia-cuda-mps-control) with extra environment, text on stdin, and a time limit,
// and returns its exit status and output. Partition backends use it; GMIs themselves are started by runtime/.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

namespace gmi::partition::detail {

struct command_result {
  int exit_code = -1;      // -1: killed (timeout) or not started
  std::string output;      // stdout and stderr together
  bool timed_out = false;
  std::string start_error; // non-empty when the program could not be started
};

// The first executable among `program` as given (when it holds a '/'), PATH, then the extra directories.
inline std::optional<std::string> find_program(const std::string& program, const std::vector<std::string>& extra) {
  auto executable = [](const std::string& p) {
    struct stat st{};
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
  };
  if (program.find('/') != std::string::npos) {
    if (executable(program)) return program;
    return std::nullopt;
  }
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    std::size_t start = 0;
    while (start <= p.size()) {
      const std::size_t end = p.find(':', start);
      dirs.push_back(p.substr(start, end == std::string::npos ? std::string::npos : end - start));
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  dirs.insert(dirs.end(), extra.begin(), extra.end());
  for (const auto& d : dirs) {
    if (d.empty()) continue;
    const std::string candidate = d + "/" + program;
    if (executable(candidate)) return candidate;
  }
  return std::nullopt;
}

inline command_result run_command(const std::vector<std::string>& args,
                                  const std::vector<std::pair<std::string, std::string>>& env_add,
                                  const std::string& input, std::chrono::milliseconds limit, bool capture = true) {
  command_result res;
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    bool replaced = false;
    for (const auto& [k, v] : env_add) replaced = replaced || std::strncmp(*e, (k + "=").c_str(), k.size() + 1) == 0;
    if (!replaced) env.emplace_back(*e);
  }
  for (const auto& [k, v] : env_add) env.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) {
    res.start_error = std::strerror(errno);
    return res;
  }
  if (pipe2(out, O_CLOEXEC) != 0) {
    res.start_error = std::strerror(errno);
    close(in[0]);
    close(in[1]);
    return res;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    res.start_error = std::strerror(errno);
    for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
    return res;
  }
  if (pid == 0) {
    dup2(in[0], 0);
    if (capture) {
      dup2(out[1], 1);
      dup2(out[1], 2);
    } else {
      // A daemonizing program may keep inherited descriptors open for its whole life: give it none of ours.
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
    }
    setpgid(0, 0);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  if (!input.empty()) {
    signal(SIGPIPE, SIG_IGN);  // a control program that quits early must not kill us
    [[maybe_unused]] auto w = write(in[1], input.data(), input.size());
  }
  close(in[1]);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char buf[4096];
  if (!capture) close(out[0]);
  while (capture) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      res.timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    const ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;  // EOF: the program (and anything it forked that kept stdout) closed it
    res.output.append(buf, static_cast<std::size_t>(n));
  }
  if (capture) close(out[0]);
  int status = 0;
  if (!capture) {
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        res.timed_out = true;
        break;
      }
      usleep(2000);
    }
  }
  if (res.timed_out) kill(-pid, SIGKILL);
  if (capture || res.timed_out) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (!res.timed_out && WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
  return res;
}

}  // namespace gmi::partition::detail

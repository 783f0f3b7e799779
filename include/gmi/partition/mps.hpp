#pragma once
// partition::mps: one GMI process per slice, sharing its GPU through MPS. The launcher starts one control
// daemon per GPU in its own pipe/log directories (or attaches to a running one), gives each GMI its
// active-thread percentage and optional pinned-memory limit, and quits the daemons it started on every exit
// path; inside each GMI, verify_client checks MPS is really active (a client that can not reach the daemon
// silently runs without it) and that the SM count matches the percentage. Facts: cuda-notes section 1.

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gmi/core/error.hpp>
#include <gmi/core/status.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/device.hpp>
#include <gmi/cuda/nvml.hpp>
#include <gmi/partition/detail/command.hpp>
#include <gmi/partition/none.hpp>

namespace gmi::partition {

struct mps {
  using partition_concept = partition_tag;
  static constexpr const char* name = "mps";
  // Client CUDA contexts per device on Volta+ with driver 580 (MPS doc 2.3.5.1).
  static constexpr int max_clients_per_gpu = 48;

  struct config {
    std::vector<int> gpus{0};          // CUDA ordinals (as this launcher sees them)
    int gmis_per_gpu = 1;
    std::optional<int> active_thread_percentage;  // per GMI, 1..100; unset: 100 / gmis_per_gpu, rounded up
    std::optional<int> first_slice_percentage;    // slice 0 of every GPU (layout split's trainer); unset: as the others
    std::string pinned_mem_limit;      // per GMI, e.g. "8G" (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT); empty: none
    std::string control_program = "nvidia-cuda-mps-control";  // name (PATH, /usr/local/nvidia/bin) or path
    std::string attach_pipe_directory;  // non-empty: use the daemon already serving this pipe dir (one GPU)
    std::string run_id;                 // names /tmp/gmi-mps-<uid>-<run id>/; empty: pid + time

    // Unset: 100 / gmis_per_gpu rounded up. Rounding down loses SMs twice (the percentage, then the client's SM
    // count to the hardware step): 8 clients at 12% of 132 SMs get 14 SMs each, 112 in all; at 13% they get 16,
    // 128 in all. The sum may pass 100% (MPS allows it); the SM counts still fit the GPU.
    [[nodiscard]] int percentage() const {
      const int k = std::max(1, gmis_per_gpu);
      return active_thread_percentage ? *active_thread_percentage : std::min(100, (100 + k - 1) / k);
    }
    [[nodiscard]] int percentage_of(int slice) const {
      return slice == 0 && first_slice_percentage ? *first_slice_percentage : percentage();
    }
  };

  // Never throws; says which value is wrong and what is allowed. Order: counts and values first, then the
  // binary, then the GPUs (so the checks that need no machine run everywhere).
  static gmi::status can_implement(const config& c) noexcept {
    try {
      if (c.gmis_per_gpu < 1 || c.gmis_per_gpu > max_clients_per_gpu) {
        return gmi::status::invalid(gmi::got_need("gmis_per_gpu", c.gmis_per_gpu,
                                                  "1.." + std::to_string(max_clients_per_gpu) +
                                                      " (MPS client contexts per GPU)"));
      }
      if (c.first_slice_percentage && (*c.first_slice_percentage < 1 || *c.first_slice_percentage > 100)) {
        return gmi::status::invalid(gmi::got_need("first_slice_percentage", *c.first_slice_percentage, "1..100"));
      }
      if (c.active_thread_percentage && (*c.active_thread_percentage < 1 || *c.active_thread_percentage > 100)) {
        return gmi::status::invalid(gmi::got_need("active_thread_percentage", *c.active_thread_percentage, "1..100"));
      }
      if (!c.pinned_mem_limit.empty() && !valid_mem_limit(c.pinned_mem_limit)) {
        return gmi::status::invalid(gmi::got_need("pinned_mem_limit", c.pinned_mem_limit,
                                                  "a size like 512M or 8G"));
      }
      if (c.gpus.empty()) return gmi::status::invalid(gmi::got_need("gpus", "none", "at least one GPU"));
      if (!c.attach_pipe_directory.empty() && c.gpus.size() != 1) {
        return gmi::status::invalid(gmi::got_need("gpus with attach_pipe_directory", c.gpus.size(),
                                                  "1 (one attached daemon serves one GPU here)"));
      }
      if (!find_control(c.control_program)) {
        return gmi::status::unavailable("MPS control binary: got \"" + c.control_program +
                                        "\", need it on PATH or in /usr/local/nvidia/bin (install the NVIDIA "
                                        "driver utilities)");
      }
      auto n = gmi::cuda::device_count();
      if (!n) return n.error();
      for (int g : c.gpus) {
        if (g < 0 || g >= *n) {
          return gmi::status::invalid(gmi::got_need("gpu", g, "0.." + std::to_string(*n - 1) + " (visible GPUs)"));
        }
      }
      return gmi::status::ok();
    } catch (const std::exception& e) {
      return gmi::status::failed(e.what());
    }
  }
  static gmi::status can_implement(int gmis_per_gpu) noexcept {
    config c;
    c.gmis_per_gpu = gmis_per_gpu;
    return can_implement(c);
  }

  static std::optional<std::string> find_control(const std::string& program) {
    return detail::find_program(program, {"/usr/local/nvidia/bin", "/usr/bin"});
  }

  static bool valid_mem_limit(const std::string& s) {
    if (s.size() < 2) return false;
    const char unit = s.back();
    if (unit != 'M' && unit != 'G' && unit != 'K') return false;
    return std::all_of(s.begin(), s.end() - 1, [](char ch) { return ch >= '0' && ch <= '9'; });
  }

  // The daemons of one run. Quits the daemons it started when destroyed (and on quit()), so every exit path of
  // the launcher leaves none behind; an attached daemon is left running.
  class session {
   public:
    explicit session(config c) : cfg_(std::move(c)) {
      gmi::throw_unless_ok(can_implement(cfg_));
      control_ = *find_control(cfg_.control_program);
      if (cfg_.run_id.empty()) cfg_.run_id = std::to_string(getpid());
      root_ = "/tmp/gmi-mps-" + std::to_string(getuid()) + "-" + cfg_.run_id;
      try {
        for (int g : cfg_.gpus) start_gpu(g);
      } catch (...) {
        quit();
        throw;
      }
    }
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    ~session() { quit(); }

    [[nodiscard]] const config& settings() const noexcept { return cfg_; }
    [[nodiscard]] const std::string& root_directory() const noexcept { return root_; }
    [[nodiscard]] std::string pipe_directory(int gpu) const { return at(gpu).pipe; }
    [[nodiscard]] std::string log_directory(int gpu) const { return at(gpu).log; }
    // SMs of the whole GPU, as the launcher saw them before any client started.
    [[nodiscard]] int device_sm_count(int gpu) const { return at(gpu).sm_count; }

    // The environment of GMI `slice` on `gpu`: the daemon's directories, the GPU (so its local ordinal is 0), the
    // active-thread percentage (which verify_client reads back) and the pinned-memory limit.
    [[nodiscard]] std::vector<std::pair<std::string, std::string>> client_env(int gpu, int slice) const {
      const per_gpu& p = at(gpu);
      std::vector<std::pair<std::string, std::string>> env{
          {"CUDA_MPS_PIPE_DIRECTORY", p.pipe},
          {"CUDA_MPS_LOG_DIRECTORY", p.log},
          {"CUDA_VISIBLE_DEVICES", p.visible},
          {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(cfg_.percentage_of(slice))}};
      if (!cfg_.pinned_mem_limit.empty()) env.emplace_back("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=" + cfg_.pinned_mem_limit);
      return env;
    }

    // Sends one command to the daemon of `gpu` and returns its answer (throws gmi::error when it fails).
    std::string control(int gpu, const std::string& command) const {
      const per_gpu& p = at(gpu);
      auto r = detail::run_command({control_}, {{"CUDA_MPS_PIPE_DIRECTORY", p.pipe}, {"CUDA_MPS_LOG_DIRECTORY", p.log}},
                                   command + "\n", std::chrono::seconds(10));
      if (!r.start_error.empty() || r.timed_out || r.exit_code != 0) {
        throw gmi::error("MPS control '" + command + "' for GPU " + std::to_string(gpu) + " failed: " +
                         (r.timed_out ? "timed out" : !r.start_error.empty() ? r.start_error
                                                                             : "exit " + std::to_string(r.exit_code)) +
                         (r.output.empty() ? "" : ": " + r.output));
      }
      return r.output;
    }

    // Server pids of the daemon of `gpu` (get_server_list).
    [[nodiscard]] std::vector<int> server_pids(int gpu) const { return parse_pids(control(gpu, "get_server_list")); }

    // The sanctioned way to stop MPS clients: terminate_client for each (the client sees
    // CUDA_ERROR_MPS_CLIENT_TERMINATED and can then be killed without leaving the server in an undefined state).
    // Returns the lines of errors, empty when all went well; never throws (used on teardown paths).
    std::string terminate_clients(int gpu, const std::vector<int>& client_pids) const noexcept {
      std::string errors;
      try {
        for (int server : server_pids(gpu)) {
          for (int client : client_pids) {
            try {
              control(gpu, "terminate_client " + std::to_string(server) + " " + std::to_string(client));
            } catch (const std::exception& e) {
              errors += std::string(e.what()) + "\n";
            }
          }
        }
      } catch (const std::exception& e) {
        errors += std::string(e.what()) + "\n";
      }
      return errors;
    }

    // Pids of nvidia-cuda-mps-control/-server processes serving `gpu`'s pipe directory (read from /proc; needs
    // the same user or root).
    [[nodiscard]] std::vector<int> daemon_processes(int gpu) const { return processes_using(at(gpu).pipe); }

    // Quits every daemon this session started (echo quit | nvidia-cuda-mps-control), waits for them to go,
    // kills what is left after a bound, and removes the directories. Idempotent and noexcept.
    void quit() noexcept {
      for (auto& p : gpus_) {
        if (!p.started || p.quit) continue;
        p.quit = true;
        try {
          detail::run_command({control_}, {{"CUDA_MPS_PIPE_DIRECTORY", p.pipe}, {"CUDA_MPS_LOG_DIRECTORY", p.log}},
                              "quit\n", std::chrono::seconds(10));
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (!processes_using(p.pipe).empty() && std::chrono::steady_clock::now() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          }
          for (int pid : processes_using(p.pipe)) kill(pid, SIGKILL);
        } catch (...) {
        }
      }
      if (!root_.empty() && cfg_.attach_pipe_directory.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(root_, ec);
      }
    }

   private:
    struct per_gpu {
      int gpu = 0;
      std::string pipe, log, visible;
      int sm_count = 0;
      bool started = false, quit = false;
    };

    const per_gpu& at(int gpu) const {
      for (const auto& p : gpus_) {
        if (p.gpu == gpu) return p;
      }
      throw gmi::config_error(gmi::got_need("MPS gpu", gpu, "one of the session's GPUs"));
    }

    // Starts (or, attaching, records) the daemon of `gpu`; the entry is in gpus_ before anything can fail
    // after the daemon started, so quit() finds it.
    void start_gpu(int gpu) {
      per_gpu p;
      p.gpu = gpu;
      cudaDeviceProp prop{};
      GMI_CUDA_TRY(cudaGetDeviceProperties(&prop, gpu));
      p.sm_count = prop.multiProcessorCount;
      p.visible = gmi::cuda::nvml::uuid_string(prop.uuid);
      if (!cfg_.attach_pipe_directory.empty()) {
        p.pipe = cfg_.attach_pipe_directory;
        p.log = cfg_.attach_pipe_directory;  // only the daemon reads the log dir; the client ignores it
        gpus_.push_back(p);
        return;
      }
      const std::string dir = root_ + "/gpu" + std::to_string(gpu);
      p.pipe = dir + "/pipe";
      p.log = dir + "/log";
      std::error_code ec;
      std::filesystem::create_directories(p.pipe, ec);
      std::filesystem::create_directories(p.log, ec);
      if (ec) throw gmi::error("MPS directories under " + dir + ": " + ec.message());
      if (!processes_using(p.pipe).empty()) throw gmi::error("an MPS daemon already serves " + p.pipe);
      auto r = detail::run_command({control_, "-d"},
                                   {{"CUDA_MPS_PIPE_DIRECTORY", p.pipe},
                                    {"CUDA_MPS_LOG_DIRECTORY", p.log},
                                    {"CUDA_VISIBLE_DEVICES", p.visible}},
                                   "", std::chrono::seconds(15), false);
      p.started = true;  // from here on quit() must run, whatever happens
      gpus_.push_back(p);
      if (r.timed_out || r.exit_code != 0) {
        throw gmi::error("starting the MPS daemon for GPU " + std::to_string(gpu) + " (" + control_ +
                         " -d) failed: " + (r.timed_out ? "timed out" : "exit " + std::to_string(r.exit_code)) +
                         "; see " + p.log + "/control.log");
      }
      // The daemon forks before it listens: wait for its control socket.
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!std::filesystem::exists(p.pipe + "/control") && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (!std::filesystem::exists(p.pipe + "/control") && processes_using(p.pipe).empty()) {
        throw gmi::error("the MPS daemon for GPU " + std::to_string(gpu) + " did not open " + p.pipe +
                         "/control within 10 s; see " + p.log + "/control.log");
      }
    }

    static std::vector<int> parse_pids(const std::string& text) {
      std::vector<int> out;
      std::istringstream in(text);
      std::string tok;
      while (in >> tok) {
        if (!tok.empty() && std::all_of(tok.begin(), tok.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
          out.push_back(std::stoi(tok));
        }
      }
      return out;
    }

    // MPS control/server processes whose environment names this pipe directory.
    static std::vector<int> processes_using(const std::string& pipe) {
      std::vector<int> out;
      DIR* d = opendir("/proc");
      if (!d) return out;
      const std::string want = "CUDA_MPS_PIPE_DIRECTORY=" + pipe;
      while (dirent* e = readdir(d)) {
        const int pid = std::atoi(e->d_name);
        if (pid <= 0) continue;
        const std::string base = std::string("/proc/") + e->d_name;
        std::ifstream comm(base + "/comm");
        std::string name;
        std::getline(comm, name);
        if (name.rfind("nvidia-cuda-mps", 0) != 0) continue;
        std::ifstream env(base + "/environ", std::ios::binary);
        const std::string all((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
        std::size_t start = 0;
        while (start < all.size()) {
          const std::size_t end = all.find('\0', start);
          if (all.compare(start, (end == std::string::npos ? all.size() : end) - start, want) == 0) {
            out.push_back(pid);
            break;
          }
          if (end == std::string::npos) break;
          start = end + 1;
        }
      }
      closedir(d);
      return out;
    }

    config cfg_;
    std::string control_;
    std::string root_;
    std::vector<per_gpu> gpus_;
  };

  static session create(const config& c) { return session(c); }

  // What a GMI process found out about its MPS client state.
  struct client_state {
    bool mps_enabled = false;
    int sm_count = 0;        // cudaDevAttrMultiProcessorCount inside the client
    int device_sms = 0;      // the whole GPU (from the launcher), 0 when unknown
    int percentage = 100;
    int expected_low = 0, expected_high = 0;  // accepted SM counts
  };

  // The SM counts a client with `percentage` of `device_sms` may see: the percentage is rounded down to a
  // hardware step (measured: 25% of 132 SMs -> 32), so accept from the product rounded down to a multiple of 8
  // (the sm_90 slice step) up to the product rounded up.
  static std::pair<int, int> expected_sms(int device_sms, int percentage) {
    const double exact = device_sms * percentage / 100.0;
    const int high = std::min(device_sms, static_cast<int>(std::ceil(exact)));
    const int low = std::max(1, static_cast<int>(std::floor(exact)) / 8 * 8);
    return {std::min(low, high), high};
  }

  // Inside a GMI process: checks that MPS is active (CU_DEVICE_ATTRIBUTE_MPS_ENABLED) and that the SM count is
  // what the launcher asked for: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (client_env's) of `device_sms`, the whole GPU's
  // SMs as the launcher saw them (session::device_sm_count; 0: the count is not checked). Throws gmi::error naming
  // what is off.
  static client_state verify_client(int device, int device_sms) {
    client_state s;
    using attr_fn = CUresult (*)(int*, CUdevice_attribute, CUdevice);
    using init_fn = CUresult (*)(unsigned);
    const auto init = gmi::cuda::driver_entry<init_fn>("cuInit");
    const auto get_attr = gmi::cuda::driver_entry<attr_fn>("cuDeviceGetAttribute");
    if (!init || !get_attr) throw gmi::error("MPS check: no CUDA driver (cuDeviceGetAttribute not found)");
    GMI_CUDA_TRY(init(0));
    GMI_CUDA_TRY(cudaFree(nullptr));  // create the context: the MPS connection happens here
    int enabled = 0;
    GMI_CUDA_TRY(get_attr(&enabled, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, device));
    s.mps_enabled = enabled != 0;
    GMI_CUDA_TRY(cudaDeviceGetAttribute(&s.sm_count, cudaDevAttrMultiProcessorCount, device));
    const char* pct = std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
    s.percentage = pct && *pct ? std::atoi(pct) : 100;
    s.device_sms = device_sms;
    if (!s.mps_enabled) {
      const char* pipe = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
      throw gmi::error("MPS is not active in this GMI (CU_DEVICE_ATTRIBUTE_MPS_ENABLED = 0): the client could not "
                       "reach the daemon at CUDA_MPS_PIPE_DIRECTORY=" + std::string(pipe ? pipe : "<unset>") +
                       " and runs without MPS");
    }
    if (s.device_sms > 0) {
      std::tie(s.expected_low, s.expected_high) = expected_sms(s.device_sms, s.percentage);
      if (s.sm_count < s.expected_low || s.sm_count > s.expected_high) {
        throw gmi::error("MPS SM count: got " + std::to_string(s.sm_count) + ", need " +
                         std::to_string(s.expected_low) + ".." + std::to_string(s.expected_high) + " (" +
                         std::to_string(s.percentage) + "% of " + std::to_string(s.device_sms) + " SMs)");
      }
    }
    return s;
  }
};

}  // namespace gmi::partition

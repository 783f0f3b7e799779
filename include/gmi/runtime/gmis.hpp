#pragma once
// k GMIs on each of n GPUs under one partition backend, as one call: run_gmis(config, fn) runs
// fn(context&, binding&) in every GMI. What a backend needs is done here, so a pipeline switches backends by a
// flag:
//   none           threads of this process (or processes with launch_mode::processes), each on its own stream,
//                  sharing the GPU by time slicing and the hardware scheduler;
//   green_context  threads of this process, each on a green-context slice of the SMs and its green stream;
//   mps            processes (re-exec of this binary), one MPS daemon per GPU, each client its SM share,
//                  checked inside the client (verify_client);
//   mig            processes, each bound to an existing MIG instance (never created here).
// In the launcher run_gmis starts, supervises and tears down; in a GMI process (GMI_* variables set by the
// launcher) the same call runs that one GMI and returns its exit code, so main() stays one function.

#include <cuda_runtime_api.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gmi/core/choice.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/status.hpp>
#include <gmi/cuda/check.hpp>
#include <gmi/cuda/device.hpp>
#include <gmi/cuda/nvml.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/partition/partition.hpp>
#include <gmi/runtime/launcher.hpp>
#include <gmi/runtime/partitioned.hpp>
#include <gmi/runtime/supervisor.hpp>
#include <gmi/runtime/trace.hpp>

namespace gmi::runtime {

// How the GMIs of backend `none` run (the other backends decide: mps and mig processes, green_context threads).
enum class launch_mode { automatic, threads, processes };
inline constexpr choice_table<launch_mode, 3> launch_mode_names{
    {{"auto", launch_mode::automatic}, {"threads", launch_mode::threads}, {"processes", launch_mode::processes}}};

struct gmis_config {
  std::string partition = "none";    // none | mps | green_context | mig
  std::vector<int> gpus{0};          // CUDA ordinals of the launcher
  int gmis_per_gpu = 1;
  launch_mode launch = launch_mode::automatic;  // only `none` may choose
  std::optional<int> mps_percentage;  // per GMI, 1..100; unset: 100 / gmis_per_gpu rounded up
  std::optional<int> mps_first_slice_percentage;  // slice 0 of every GPU, 1..100 (layout split's trainer); unset: as above
  int sms_per_gmi = 0;               // green_context: 0 = the largest equal slice
  env_list env;                      // extra variables for GMI processes
  std::vector<std::string> roles{"env", "agent", "trainer"};
  std::chrono::milliseconds heartbeat_timeout{30000};
  bool handle_signals = true;
  // A run over several hosts (gpu_hosts::place): numbers this host's GMIs in the job and watches the other hosts.
  std::function<void(launch_spec&)> across_hosts;

  [[nodiscard]] int world() const noexcept { return static_cast<int>(gpus.size()) * gmis_per_gpu; }
  // mps and mig need one process per GMI; green contexts live in one process; `none` does as told (threads).
  [[nodiscard]] bool processes() const noexcept {
    if (partition == "mps" || partition == "mig") return true;
    if (partition == "green_context") return false;
    return launch == launch_mode::processes;
  }
};


// Each backend's own config for `c` (one place, used by can_implement, launch_gmis and the run's result lines).
inline gmi::partition::mps::config mps_config_of(const gmis_config& c) {
  gmi::partition::mps::config m;
  m.gpus = c.gpus;
  m.gmis_per_gpu = c.gmis_per_gpu;
  m.active_thread_percentage = c.mps_percentage;
  m.first_slice_percentage = c.mps_first_slice_percentage;
  return m;
}
inline gmi::partition::green_context::config green_config_of(const gmis_config& c) {
  gmi::partition::green_context::config g;
  g.gpus = c.gpus;
  g.gmis_per_gpu = c.gmis_per_gpu;
  g.sms_per_gmi = c.sms_per_gmi;
  return g;
}

namespace detail {
// MIG speaks NVML indices; `c` names CUDA ordinals.
inline gmi::result<gmi::partition::mig::config> mig_config_of(const gmis_config& c) {
  gmi::partition::mig::config m;
  m.gmis_per_gpu = c.gmis_per_gpu;
  m.gpus.clear();
  for (int g : c.gpus) {
    auto idx = gmi::cuda::nvml::index_of_cuda_device(g);
    if (!idx) return idx.error();
    m.gpus.push_back(*idx);
  }
  return m;
}
}  // namespace detail

// Never throws: the first thing about `c` that can not work, as "what: got X, need Y" (backend limits: 48 MPS
// clients per GPU, the green-context minimum slice, existing MIG instances, the MPS control binary, GPU ids).
[[nodiscard]] inline gmi::status can_implement(const gmis_config& c) noexcept {
  try {
    if (c.partition != "none" && c.partition != "mps" && c.partition != "green_context" && c.partition != "mig") {
      return gmi::status::invalid(gmi::got_need("partition", c.partition, gmi::partition::gpu_backends::names_text()));
    }
    const char* launch = choice_name(c.launch, launch_mode_names);
    if ((c.partition == "mps" || c.partition == "mig") && c.launch == launch_mode::threads) {
      return gmi::status::invalid(gmi::got_need("launch for partition " + c.partition, launch,
                                                "processes or auto (one process per GMI)"));
    }
    if (c.partition == "green_context" && c.launch == launch_mode::processes) {
      return gmi::status::invalid(gmi::got_need("launch for partition green_context", launch,
                                                "threads or auto (green contexts are slices of one process)"));
    }
    if (c.gpus.empty()) return gmi::status::invalid(gmi::got_need("GPUs", "none", "at least one"));
    if (c.gmis_per_gpu < 1) return gmi::status::invalid(gmi::got_need("gmis_per_gpu", c.gmis_per_gpu, ">= 1"));
    if ((c.mps_percentage || c.mps_first_slice_percentage) && c.partition != "mps") {
      return gmi::status::invalid(gmi::got_need("an MPS percentage with partition", c.partition, "mps"));
    }
    if (c.sms_per_gmi != 0 && c.partition != "green_context") {
      return gmi::status::invalid(gmi::got_need("SMs per GMI with partition", c.partition, "green_context"));
    }
    auto n = gmi::cuda::device_count();
    if (!n) return n.error();
    for (std::size_t i = 0; i < c.gpus.size(); ++i) {
      const int g = c.gpus[i];
      if (g < 0 || g >= *n) {
        return gmi::status::invalid(gmi::got_need("GPU", g, "0.." + std::to_string(*n - 1) + " (visible CUDA devices)"));
      }
      for (std::size_t j = 0; j < i; ++j) {
        if (c.gpus[j] == g) return gmi::status::invalid(gmi::got_need("GPUs", "GPU " + std::to_string(g) + " twice", "each GPU once"));
      }
    }
    if (c.partition == "mps") return gmi::partition::mps::can_implement(mps_config_of(c));
    if (c.partition == "green_context") return gmi::partition::green_context::can_implement(green_config_of(c));
    if (c.partition == "mig") {
      auto m = detail::mig_config_of(c);
      if (!m) return m.error();
      return gmi::partition::mig::can_implement(*m);
    }
    return gmi::status::ok();
  } catch (const std::exception& e) {
    return gmi::status::failed(e.what());
  }
}

// What a GMI got from its partition, alive on the GMI's thread for the GMI's whole life: the device current,
// the green context current (green_context), the stream every launch of the GMI goes on.
class binding {
 public:
  binding(const gmis_config& c, const context& ctx, const gmi::partition::green_context::session* green) {
    trace(ctx.id(), "binding to partition " + c.partition);
    partition_ = c.partition;
    device_ = ctx.id().local_device;
    ctx.set_gpu();
    if (c.partition == "mps") {
      const auto s = gmi::partition::mps::verify_client(device_, ctx.id().device_sms);
      sm_count_ = s.sm_count;
      what_ = "MPS client, " + std::to_string(s.percentage) + "% = " + std::to_string(s.sm_count) + " SMs";
    } else if (green) {
      green_.emplace(*green, ctx.gpu(), ctx.slice());
      sm_count_ = green_->sm_count();
      what_ = "green-context slice of " + std::to_string(sm_count_) + " SMs";
    } else {
      GMI_CUDA_TRY(cudaFree(nullptr));
      sm_count_ = gmi::cuda::describe_device(device_).sm_count;
      what_ = c.partition == "mig" ? "MIG instance of " + std::to_string(sm_count_) + " SMs"
                                   : "time-shared GPU (" + std::to_string(sm_count_) + " SMs)";
    }
    if (!green_) own_.emplace();
    if (auto idx = gmi::cuda::nvml::index_of_cuda_device(device_)) nvml_index_ = *idx;
    trace(ctx.id(), "bound: " + what_);
  }
  binding(const binding&) = delete;
  binding& operator=(const binding&) = delete;

  [[nodiscard]] cudaStream_t stream() const noexcept { return green_ ? green_->stream().get() : own_->get(); }
  [[nodiscard]] int sm_count() const noexcept { return sm_count_; }
  [[nodiscard]] int device() const noexcept { return device_; }
  [[nodiscard]] int nvml_index() const noexcept { return nvml_index_; }  // -1: unknown (e.g. a MIG device)
  [[nodiscard]] const std::string& partition() const noexcept { return partition_; }
  [[nodiscard]] const std::string& describe() const noexcept { return what_; }  // "MPS client, 25% = 32 SMs"
  // Makes the GMI's green context current again on this thread (NCCL calls cudaSetDevice, which makes the
  // primary context current); nothing to do for the other backends.
  void reassert() const {
    if (green_) green_->reassert();
  }

 private:
  std::string partition_, what_;
  int device_ = 0, sm_count_ = 0, nvml_index_ = -1;
  std::optional<gmi::partition::green_context::binding> green_;
  std::optional<gmi::cuda::stream> own_;
};

using gmi_work = std::function<void(context&, binding&)>;

// The launch spec of `c`: rank = gpu index * gmis_per_gpu + slice; one group per GPU, plus one of all when
// there are several GPUs.
[[nodiscard]] inline launch_spec spec_of(const gmis_config& c) {
  launch_spec s = launch_spec::uniform(static_cast<int>(c.gpus.size()), c.gmis_per_gpu);
  for (auto& p : s.gmis) {
    const int g = c.gpus[static_cast<std::size_t>(p.gpu)];
    p.gpu = g;
    p.local_device = g;
    p.roles = c.roles;
  }
  s.env = c.env;
  s.heartbeat_timeout = c.heartbeat_timeout;
  s.handle_signals = c.handle_signals;
  if (c.across_hosts) c.across_hosts(s);
  return s;
}

// In a GMI process: runs `fn` for `id` and returns the process's exit code.
inline int run_gmi_process(const gmis_config& c, const identity& id, const gmi_work& fn) {
  const int rc = run_worker(id, [&](context& ctx) {
    binding b(c, ctx, nullptr);
    fn(ctx, b);
  });
  // The process is a GMI of ours and is done with the GPU: without this, every GMI process that exported an
  // interprocess event would leave the driver's cuda.shm file in /dev/shm.
  cuda::release_primary_contexts();
  return rc;
}

// In the launcher: starts every GMI of `c`, supervises until all end or one fails, tears down (MPS daemons
// quit, segment unlinked, no child left) and returns the report; throws gmi_failed naming the GMI that failed,
// config_error when `c` can not work (before anything starts).
inline run_report launch_gmis(const gmis_config& c, const gmi_work& fn) {
  gmi::throw_unless_ok(can_implement(c));
  launch_spec spec = spec_of(c);
  if (!c.processes()) {
    std::optional<gmi::partition::green_context::session> green;
    if (c.partition == "green_context") green.emplace(green_config_of(c));
    const gmi::partition::green_context::session* gs = green ? &*green : nullptr;
    thread_group group(std::move(spec), [&c, gs, &fn](context& ctx) {
      binding b(c, ctx, gs);
      fn(ctx, b);
    });
    return group.wait_or_throw();
  }
  std::optional<gmi::partition::mps::session> mps;
  if (c.partition == "mps") {
    mps.emplace(mps_config_of(c));
    use_mps(spec, *mps);
  } else if (c.partition == "mig") {
    const gmi::partition::mig::config m = detail::mig_config_of(c).value();
    gmi::partition::mig::session mig(m);
    for (auto& p : spec.gmis) {
      const int nvml_index = gmi::cuda::nvml::index_of_cuda_device(p.gpu).value();
      for (auto& kv : mig.client_env(nvml_index, p.slice)) p.env.push_back(kv);
      p.local_device = 0;
    }
  }
  process_group group(std::move(spec));
  return group.wait_or_throw();  // the MPS session (declared first) quits its daemons after the group is gone
}

// Both sides in one call: in a GMI process runs that GMI and returns {exit code, nullopt}; in the launcher
// runs everything and returns {0, report}.
struct gmis_outcome {
  int exit_code = 0;
  std::optional<run_report> report;  // set in the launcher
};
inline gmis_outcome run_gmis(const gmis_config& c, const gmi_work& fn) {
  if (const auto id = this_gmi()) return {run_gmi_process(c, *id, fn), std::nullopt};
  return {0, launch_gmis(c, fn)};
}

}  // namespace gmi::runtime

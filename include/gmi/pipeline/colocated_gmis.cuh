#pragma once
// The colocated layout on many GMIs: synchronous data-parallel PPO over every GMI of every GPU. Each GMI runs
// env, agent and trainer (one rl::ppo_trainer); rl::ppo_sync keeps the trainers replicas of one policy:
//   gradients and loss terms   comm::hierarchical_allreduce at every minibatch (GMIs of a GPU reduce on the
//                              device, the GPUs' leaders over NCCL), non-blocking, stream-ordered before Adam;
//                              or, as the paper's baseline, comm::ip_allreduce (through host shared memory);
//   rollout statistics         the row exchange inside the kernels where it has room (fused), else the run's
//                              shared-memory allreduce (runtime::context), a few hundred doubles;
//   stop decisions             the same allreduce every 5 iterations (episodes, returns, stop votes), so every
//                              GMI stops after the same iteration.
// Each GMI reports its iterations, time, communication time and a checksum of its weights; the launcher adds the
// throughput up and checks that every GMI ended with the same weights, bit for bit (pipeline/training_totals.hpp).

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <array>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/comm/gathered_sum.cuh>
#include <gmi/comm/hierarchical.cuh>
#include <gmi/comm/ip_allreduce.hpp>
#include <gmi/comm/nccl.hpp>
#include <gmi/comm/two_level_sum.cuh>
#include <gmi/core/error.hpp>
#include <gmi/core/hash.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/comm/comm_clock.cuh>
#include <gmi/cuda/graph.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/pipeline/cross_host_sum.hpp>
#include <gmi/pipeline/training_totals.hpp>
#include <gmi/pipeline/run_options.hpp>
#include <gmi/rl/episode_window.hpp>
#include <gmi/rl/ppo_sync.hpp>
#include <gmi/runtime/context.hpp>
#include <gmi/runtime/gmis.hpp>
#include <gmi/runtime/gpu_hosts.hpp>
#include <gmi/runtime/trace.hpp>

namespace gmi {

// One GMI's transport for rl::ppo_sync: the GPU's hierarchical allreduce over the trainer's gradient buffer
// (NCCL among the GPUs' leaders when there are several GPUs), or with cpu_staged every GMI's row through one
// shared-memory segment on the host (the paper's IP path; every GMI of the run is on this host), and the run's
// shared-memory allreduce for the statistics. `automatic` builds both, times each on the gradient buffer
// (sums back to back as between minibatches, rank 0's medians shared with the group) and keeps the faster. With
// `update` "graph" or "fused", the hook lets the trainer replay its update as a CUDA graph where the device path
// allows it (comm::hierarchical_allreduce::replayable; never CPU-staged); with "fused" it also hands the trainer
// the allreduce's row exchange where there is one (MPS GMIs of one GPU, or GMI processes on several GPUs of one
// host, whose GPUs' sums meet in pinned host memory), so each minibatch step sums the group's rows inside its own
// kernel. `clock` (run_options::comm_clock): "on" times the group's communication (comm_seconds; host_sync_seconds
// always), "auto" only where that costs nothing measurable (the fused step kernels' waits, the CPU-staged path's
// host time; not the stamp kernels around sums between the steps), "off" never. Build it on every GMI in the same
// order; it lives as long as the trainer that uses it. Across hosts (`hosts`, GMIs as threads of each host's
// launcher) the leaders' communicator spans every GPU of every host (host 0's NCCL id), the statistics go through
// gpu_hosts::sum, ranks are global, and only the device path between the steps is used (no row exchange, no
// CPU-staged sum: both live in one host's memory). `cross` picks how the leaders sum across hosts
// (run_options::cross_host_sum, chosen by cross_host_sum_used in pipeline/cross_host_sum.hpp).
class gmi_gradient_sync {
 public:
  gmi_gradient_sync(runtime::context& ctx, const runtime::binding& b, const runtime::gmis_config& cfg, float* grads,
                    std::size_t count, allreduce_choice path = allreduce_choice::hierarchical,
                    update_choice update = update_choice::eager, clock_choice clock = clock_choice::off,
                    comm::inbox_memory inboxes = comm::inbox_memory::automatic, runtime::gpu_hosts* hosts = nullptr,
                    cross_sum_choice cross = cross_sum_choice::automatic)
      : ctx_(ctx), binding_(b), grads_(grads), count_(count), inboxes_(inboxes), hosts_(hosts), cross_(cross) {
    if (hosts_) {
      gmi::require(path != allreduce_choice::cpu_staged, "--gradient-allreduce across hosts", "cpu_staged",
                   "hierarchical or automatic (host shared memory does not reach the other hosts)");
      path = allreduce_choice::hierarchical;
    }
    if (clock != clock_choice::off) clock_.emplace(b.stream());
    if (path != allreduce_choice::hierarchical) {
      const std::string tag = ctx.id().run_id + "-grad-ip";
      ip_ = ctx.rank() == 0 ? comm::ip_allreduce::create(tag, ctx.world(), count * sizeof(float))
                            : comm::ip_allreduce::open(tag, ctx.rank(), ctx.timeout());
    }
    if (path != allreduce_choice::cpu_staged) build_hierarchical(cfg);
    use_ip_ = path == allreduce_choice::cpu_staged;
    chosen_ = choice_name(path, allreduce_choice_names);
    if (hosts_) chosen_ += " (GPUs' leaders across hosts: " + cross_used_ + ")";
    const bool graph_update = update != update_choice::eager;
    if (path == allreduce_choice::automatic) choose(b.stream(), graph_update && reduce_->replayable());
    graph_update_ = graph_update && !use_ip_ && reduce_->replayable();
    if (graph_update_ && update == update_choice::fused && !hosts_) build_exchange(cfg);
    if (clock == clock_choice::automatic && !exchange_ && !use_ip_) clock_.reset();  // the sums would need stamp kernels
  }
  gmi_gradient_sync(const gmi_gradient_sync&) = delete;
  gmi_gradient_sync& operator=(const gmi_gradient_sync&) = delete;

  [[nodiscard]] rl::ppo_sync hook() {
    rl::ppo_sync s;
    s.rank = ctx_.id().global_rank();
    s.world = ctx_.id().global_size();
    s.sum_device = [this](float* data, std::size_t n, CUstream_st* stream) {
      gmi::require(data == grads_ && n == count_, "gradient sum buffer",
                   std::to_string(n) + " floats", "the trainer's gradient buffer the allreduce was built on");
      sum(stream);
    };
    s.sum_stats = [this](double* data, std::size_t n) {
      const auto t0 = std::chrono::steady_clock::now();
      if (hosts_) {
        hosts_->sum(ctx_.rank(), data, n, [this] { return ctx_.stop_requested(); });
      } else {
        ctx_.allreduce(std::span<double>(data, n), ctx_.all());
      }
      host_sync_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    if (graph_update_) {
      s.replayed = [this](std::size_t calls, CUstream_st* stream) {
        reduce_->replayed(calls, stream);
        check_across();
      };
      s.exchange = exchange_;
    }
    return s;
  }
  // Whether the hook lets the trainer replay its update as a CUDA graph.
  [[nodiscard]] bool graph_update() const noexcept { return graph_update_; }
  // How the update runs: "fused" (replayed, each step sums the group's rows in its own kernel), "graph" or "eager".
  [[nodiscard]] std::string update() const { return exchange_ ? "fused" : graph_update_ ? "graph" : "eager"; }
  // Bounded wait for the last allreduce on `stream` (errors surface here; the CPU-staged sum is done on return).
  void wait(cudaStream_t stream) {
    if (!use_ip_) reduce_->wait(stream);
    check_across();
  }
  // The path in use ("hierarchical" or "cpu_staged"), with the measured times when it was chosen automatically.
  [[nodiscard]] const std::string& description() const noexcept { return chosen_; }
  // Across hosts, how this GMI's GPU leader sums with the other GPUs: "allreduce", "allgather", "two_level" or
  // "direct"; "" elsewhere.
  [[nodiscard]] const std::string& cross_host_sum() const noexcept { return cross_used_; }
  // With a clock: seconds in the gradient sums so far, once the work on `stream` is done (waits for it): the
  // device's spans from each sum's start to its end on the stream (comm::comm_clock) or, fused, the step kernels'
  // waits on the group's rows (the statistics gathered through the exchange included); the CPU-staged path's host
  // time. NaN without a clock.
  [[nodiscard]] double comm_seconds(cudaStream_t stream) const {
    if (!clock_) return std::numeric_limits<double>::quiet_NaN();
    return clock_->seconds(stream) + staged_seconds_;
  }
  // Of those, the step kernels' waits for the other GPUs' sums (fused across GPUs; else NaN).
  [[nodiscard]] double comm_across_seconds(cudaStream_t stream) const {
    if (!clock_ || !exchange_ || exchange_->gpus < 2) return std::numeric_limits<double>::quiet_NaN();
    return clock_->seconds(stream, true);
  }
  // Seconds this GMI's host spent in the group's shared-memory sums of rollout statistics through the hook; `add`
  // counts others (the stop decisions).
  [[nodiscard]] double host_sync_seconds() const noexcept { return host_sync_seconds_; }
  void add_host_sync_seconds(double s) noexcept { host_sync_seconds_ += s; }

 private:
  void build_hierarchical(const runtime::gmis_config& cfg) {
    const int gpus = ctx_.id().gpus;  // a GMI process's config sees one device: the run's shape is the identity's
    const int gpu_index = ctx_.id().gpu_index();
    const bool leader = ctx_.slice() == 0;
    const comm::milliseconds timeout = ctx_.timeout();
    const comm::two_level_shape shape{hosts_ ? hosts_->hosts() : 1,
                                      hosts_ ? hosts_->global_gpus() / hosts_->hosts() : gpus};
    if (hosts_) cross_used_ = cross_host_sum_used(cross_, shape.hosts, shape.gpus);
    std::optional<comm::two_level_nccl_ids> levels;
    if (cross_used_ == "two_level") {  // every GMI of every host: one sum carries the levels' ids
      const auto sum = [&](double* v, std::size_t n) {
        hosts_->sum(ctx_.rank(), v, n, [this] { return ctx_.stop_requested(); });
      };
      levels = comm::exchange_two_level_ids(shape, hosts_->host().host, gpu_index, leader, sum);
    }
    if (hosts_ && leader) {  // NCCL among the leaders of every host's GPUs; host 0's id came through MPI
      leaders_ = std::make_unique<comm::nccl_communicator>(hosts_->global_gpus(), hosts_->leaders_id(),
                                                           hosts_->global_gpu(gpu_index), comm::nccl_options{timeout});
      if (cross_used_ == "allgather" || cross_used_ == "direct") {  // before any capture: it allocates
        gathered_.emplace(*leaders_, count_, cross_used_ == "direct");
      }
      if (levels) two_level_.emplace(*leaders_, shape, hosts_->host().host, gpu_index, *levels, count_,
                                     comm::nccl_options{timeout});
      binding_.reassert();
    } else if (gpus > 1 && leader) {  // NCCL among the GPUs' leaders; the id goes through shared memory
      auto boot = comm::shm_bootstrapped_nccl::create(ctx_.id().run_id + "-nccl", gpus, gpu_index, timeout);
      ids_ = std::move(boot.ids);
      leaders_ = std::move(boot.comm);
      binding_.reassert();
    }
    comm::hierarchical_options o;
    o.tag = ctx_.id().run_id + "-grad-g" + std::to_string(gpu_index);
    o.local_rank = ctx_.slice();
    o.local_size = ctx_.id().gmis_per_gpu;
    o.mode = cfg.processes() ? comm::sharing::ipc : comm::sharing::in_process;
    o.timeout = timeout;
    o.blocking = false;  // Adam follows on the same stream
    reduce_.emplace(o, grads_, count_, leaders_.get());
    binding_.reassert();
  }

  // "fused": the GPU's row exchange, and with several GPUs of this host (GMIs as processes) the level where the
  // GPUs' sums meet, so a step needs no NCCL call. Inboxes in peer device memory when every GMI's device reaches
  // the others (partition none) or, where a GMI sees only its GPU (MPS), when the probe maps the peer inboxes
  // through CUDA IPC; else in pinned host memory where a GPU has several GMIs (one block a GPU polls host memory
  // and relays to the others, docs/scaling.md; --inbox-memory host asks for it), and with one GMI a GPU only when
  // --inbox-memory host asks, since there it measured slower than NCCL between the steps (docs/results.md).
  // Every GMI takes the same branch.
  void build_exchange(const runtime::gmis_config& cfg) {
    const int gpus = ctx_.id().gpus;
    if (gpus == 1) {
      exchange_ = reduce_->row_exchange();
      if (exchange_ && clock_) exchange_->wait_ns = clock_->total();
      return;
    }
    if (!cfg.processes() || gpus > comm::row_exchange::max_gpus) return;  // graph: NCCL between the steps
    comm::row_exchange_across_gpus_options o;
    o.tag = ctx_.id().run_id + "-grad-across";
    o.rank = ctx_.rank();
    o.gpu = ctx_.id().gpu_index();
    o.gpus = gpus;
    o.world = ctx_.world();
    o.count = count_;
    o.timeout = ctx_.timeout();
    o.memory = inboxes_;
    across_.emplace(o);
    binding_.reassert();
    if (across_->memory() == comm::inbox_memory::host && o.memory != comm::inbox_memory::host && cfg.gmis_per_gpu == 1) {
      across_.reset();  // graph
      return;
    }
    exchange_ = reduce_->row_exchange(&*across_);
    if (exchange_ && clock_) {
      exchange_->wait_ns = clock_->total();
      exchange_->across_ns = clock_->across_total();
    }
    if (exchange_) {  // where the GPUs' sums met, in the end line's gradient_allreduce
      chosen_ += std::string(", across GPUs in ") + choice_name(across_->memory(), comm::inbox_memory_names) +
                 " inboxes" + (across_->probed() ? " (probed)" : "");
    }
  }
  // Any GMI's step kernel that gave up, or a GMI gone: this GMI throws, and a failure here stops the others' kernels.
  void check_across() {
    if (!across_) return;
    try {
      across_->check();
    } catch (const gmi::error& e) {
      across_->mark_broken(e.what());
      throw;
    }
  }

  void sum(cudaStream_t stream) {
    if (use_ip_) {  // device -> this GMI's slot; the sum over every GMI; the result -> device; the slots free again
      const auto t0 = std::chrono::steady_clock::now();
      const std::span<float> slot = ip_->stage<float>(count_);
      GMI_CUDA_TRY(cudaMemcpyAsync(slot.data(), grads_, count_ * sizeof(float), cudaMemcpyDeviceToHost, stream));
      GMI_CUDA_TRY(cudaStreamSynchronize(stream));
      const std::span<const float> total = ip_->reduce<float>(count_, ctx_.timeout());
      GMI_CUDA_TRY(cudaMemcpyAsync(grads_, total.data(), count_ * sizeof(float), cudaMemcpyHostToDevice, stream));
      GMI_CUDA_TRY(cudaStreamSynchronize(stream));
      ip_->finish(ctx_.timeout());
      if (clock_) staged_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return;
    }
    if (clock_) clock_->start(stream);
    reduce_->allreduce(stream);
    binding_.reassert();
    if (clock_) clock_->stop(stream);
  }

  // Microseconds a sum of this path costs on this GMI as training issues them: after 5 unmeasured sums, the
  // median over `rounds` of `calls` sums back to back (the device path overlaps them on the stream, as between
  // minibatches; the CPU-staged one waits in each) and one wait, divided by `calls`.
  double time_sums(bool ip, cudaStream_t stream, int rounds, int calls) {
    use_ip_ = ip;
    for (int i = 0; i < 5; ++i) {
      sum(stream);
      wait(stream);
    }
    std::vector<double> us;
    for (int r = 0; r < rounds; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i) sum(stream);
      wait(stream);
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls);
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  }

  // The device path as a replayed update runs it: `calls` sums captured into a CUDA graph (after the eager warm-up
  // sums of time_sums), the median over `rounds` replays of one replay and one wait, divided by `calls`. The graph
  // goes before the communicator does (it holds NCCL's resources).
  double time_replayed_sums(cudaStream_t stream, int rounds, int calls) {
    time_sums(false, stream, 1, 1);
    const cuda::graph_exec graph = cuda::instantiate(cuda::capture(stream, [&](cudaStream_t s) {
      for (int i = 0; i < calls; ++i) reduce_->allreduce(s);
    }));
    const auto replay = [&] {
      graph.launch(stream);
      reduce_->replayed(static_cast<std::size_t>(calls), stream);
      wait(stream);
    };
    replay();
    std::vector<double> us;
    for (int r = 0; r < rounds; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      replay();
      us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls);
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  }

  // Every GMI runs the same timed calls (the sums are collective); rank 0's medians decide for the group. With
  // `replayed`, the device path is timed inside a CUDA graph, as a replayed update runs it.
  void choose(cudaStream_t stream, bool replayed) {
    constexpr int rounds = 5, calls = 8;
    const double hier = replayed ? time_replayed_sums(stream, rounds, calls) : time_sums(false, stream, rounds, calls);
    const double staged = time_sums(true, stream, rounds, calls);
    std::vector<double> v{ctx_.rank() == 0 ? hier : 0.0, ctx_.rank() == 0 ? staged : 0.0};
    ctx_.allreduce(std::span<double>(v), ctx_.all());
    use_ip_ = v[1] < v[0];
    char line[224];
    std::snprintf(line, sizeof line,
                  "%s (automatic: %.1f us a call against %.1f us for %s, median of %d x %d calls%s)",
                  use_ip_ ? "cpu_staged" : "hierarchical", use_ip_ ? v[1] : v[0], use_ip_ ? v[0] : v[1],
                  use_ip_ ? "hierarchical" : "cpu_staged", rounds, calls,
                  replayed ? ", the device path replayed in a graph" : "");
    chosen_ = line;
  }

  runtime::context& ctx_;
  const runtime::binding& binding_;
  float* grads_ = nullptr;
  std::size_t count_ = 0;
  comm::inbox_memory inboxes_ = comm::inbox_memory::automatic;  // where the GPUs' inboxes live (--inbox-memory)
  runtime::gpu_hosts* hosts_ = nullptr;  // a run over several hosts
  cross_sum_choice cross_ = cross_sum_choice::automatic;
  std::string cross_used_;  // across hosts: "allreduce" or "allgather"
  std::optional<comm::nccl_id_exchange> ids_;
  std::unique_ptr<comm::nccl_communicator> leaders_;
  std::optional<comm::gathered_sum_rows> gathered_;  // the allgather sum's rows (leaders_ holds their address)
  std::optional<comm::two_level_sum> two_level_;     // installed in leaders_; goes before it
  std::optional<comm::hierarchical_allreduce> reduce_;
  std::optional<comm::row_exchange_across_gpus> across_;  // "fused" over several GPUs: where their sums meet
  std::optional<comm::ip_allreduce> ip_;
  bool use_ip_ = false;
  bool graph_update_ = false;
  std::optional<comm::row_exchange> exchange_;  // the hook's row exchange ("fused": MPS GMIs, one host)
  std::string chosen_;
  std::optional<comm::comm_clock> clock_;
  double staged_seconds_ = 0;      // the CPU-staged sums' host time (clocked)
  double host_sync_seconds_ = 0;
};

// The GMIs of a synchronous group as train_loop sees them: on one host through the context's shared-memory
// allreduce (context_group); across hosts with global ranks, summed through runtime::gpu_hosts.
struct synced_group {
  runtime::context& ctx;
  runtime::gpu_hosts* hosts = nullptr;
  [[nodiscard]] int rank() const noexcept { return ctx.id().global_rank(); }
  [[nodiscard]] int world() const noexcept { return ctx.id().global_size(); }
  void sum(std::span<double> v) const {
    if (hosts) {
      hosts->sum(ctx.rank(), v.data(), v.size(), [this] { return ctx.stop_requested(); });
    } else {
      ctx.allreduce(v, ctx.all());
    }
  }
  [[nodiscard]] bool stop_requested() const noexcept { return ctx.stop_requested(); }
};

// Declared right after a GMI's gmi_gradient_sync (so destroyed right before it, on every path): the trainer's
// captured update graph goes first, since a graph holding NCCL work keeps the communicator's resources and the
// communicator's destruction would wait for them forever.
template <class Trainer>
struct graph_released_first {
  Trainer& trainer;
  std::chrono::milliseconds timeout;
  graph_released_first(Trainer& t, std::chrono::milliseconds wait) : trainer(t), timeout(wait) {}
  graph_released_first(const graph_released_first&) = delete;
  graph_released_first& operator=(const graph_released_first&) = delete;
  ~graph_released_first() {
    if (!trainer.release_graph(timeout)) {
      std::fprintf(stderr, "gmi: the update graph was still running after %lld ms at teardown; kept\n",
                   static_cast<long long>(timeout.count()));
    }
  }
};

}  // namespace gmi

#pragma once
// The off-policy layout over several GMIs: data-parallel SAC learners. Each GMI runs its own environments (seed +
// rank) into its own replay table (its shard) and samples its own batches; every gradient is averaged over the GMIs
// (rl::sac_sync), starting from rank 0's weights, so the weights stay bitwise equal: on GPU GMIs by default on the
// device (learner_device_sums: comm::hierarchical_allreduce over the trainer's two sum buffers, stream-ordered, no
// stream wait in an update; --gradient-allreduce cpu_staged sums through the host instead), on host GMIs through the
// runtime context's allreduce; the group decides together when to stop (offpolicy_loop.hpp with train_loop.hpp).
// Host GMIs are threads on disjoint core sets (partition::cpu_cores), GPU GMIs come from runtime::run_gmis (none or
// MPS). The launcher compares the GMIs' weight hashes and returns rank 0's result. With --split-roles (host or GPU
// GMIs) GMI 0 learns from the others' transitions instead (offpolicy_split.hpp; on GPU GMIs of one GPU through the
// device transport by default, split_channels.hpp).

#include <array>
#include <chrono>
#include <memory>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/comm/hierarchical.cuh>
#include <gmi/comm/nccl.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/hash.hpp>
#include <gmi/core/span.hpp>
#include <gmi/partition/cpu_cores.hpp>
#include <gmi/pipeline/offpolicy_loop.hpp>
#include <gmi/pipeline/offpolicy_split.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/pipeline/train_loop.hpp>
#include <gmi/rl/sac.cuh>
#include <gmi/rl/sac.hpp>
#include <gmi/rl/sac_global.hpp>
#include <gmi/rl/sac_sync.hpp>
#include <gmi/runtime/context.hpp>
#include <gmi/runtime/gmis.hpp>
#include <gmi/runtime/supervisor.hpp>

namespace gmi::detail {

// train_loop.hpp's group of GMIs, beating at every decision (the supervisor's hang detection).
struct learner_group : context_group {
  [[nodiscard]] bool stop_requested() const noexcept {
    ctx.heartbeat();
    return ctx.stop_requested();
  }
};

// A learner's place in the group: the sums go through the context's allreduce over every GMI of the run.
inline rl::sac_sync learner_sync(runtime::context& ctx) {
  rl::sac_sync s;
  s.rank = ctx.rank();
  s.world = ctx.world();
  s.sum = [&ctx](std::span<float> v) { ctx.allreduce(v, ctx.all()); };
  return s;
}

// A GPU learner's device sums: one comm::hierarchical_allreduce per sum buffer of the trainer (critics; actor and
// log-prob), non-blocking on the trainer's stream (the GPU's GMIs sum on the device, the GPUs' leaders over NCCL,
// one communicator per buffer). Built on every GMI in the same order, after the trainer and before set_sync;
// destroyed before the trainer (its waits are bounded).
class learner_device_sums {
 public:
  learner_device_sums(runtime::context& ctx, const runtime::binding& b, const runtime::gmis_config& cfg,
                      device_span<float> critics, device_span<float> actor)
      : ctx_(ctx), binding_(b) {
    build(0, "critics", critics, cfg);
    build(1, "actor", actor, cfg);
  }
  learner_device_sums(const learner_device_sums&) = delete;
  learner_device_sums& operator=(const learner_device_sums&) = delete;

  // `base` with the device path: sum_device and wait_device on these allreduces.
  [[nodiscard]] rl::sac_sync hook(rl::sac_sync base) {
    base.sum_device = [this](int part, CUstream_st* stream) {
      reduce_[std::size_t(part)]->allreduce(stream);
      binding_.reassert();
    };
    base.wait_device = [this](CUstream_st* stream) {
      for (auto& r : reduce_) r->wait(stream);
    };
    return base;
  }
  // The GPU's handshake ("host" between threads, "kernel" between MPS processes).
  [[nodiscard]] const char* handshake() const noexcept {
    const comm::handshake h = reduce_[0]->sync();
    return h == comm::handshake::kernel ? "kernel" : h == comm::handshake::device ? "device" : "host";
  }

 private:
  void build(int part, const std::string& name, device_span<float> buffer, const runtime::gmis_config& cfg) {
    const auto k = std::size_t(part);
    const int gpus = ctx_.id().gpus;
    const int gpu_index = ctx_.id().gpu_index();
    const comm::milliseconds timeout = ctx_.timeout();
    if (gpus > 1 && ctx_.slice() == 0) {  // NCCL among the GPUs' leaders; the id goes through shared memory
      auto boot = comm::shm_bootstrapped_nccl::create(ctx_.id().run_id + "-sac-nccl-" + name, gpus, gpu_index, timeout);
      ids_[k] = std::move(boot.ids);
      leaders_[k] = std::move(boot.comm);
      binding_.reassert();
    }
    comm::hierarchical_options o;
    o.tag = ctx_.id().run_id + "-sac-" + name + "-g" + std::to_string(gpu_index);
    o.local_rank = ctx_.slice();
    o.local_size = ctx_.id().gmis_per_gpu;
    o.mode = cfg.processes() ? comm::sharing::ipc : comm::sharing::in_process;
    o.timeout = timeout;
    o.blocking = false;  // the optimizer step follows on the same stream
    reduce_[k].emplace(o, buffer.data(), buffer.size(), leaders_[k].get());
    binding_.reassert();
  }

  runtime::context& ctx_;
  const runtime::binding& binding_;
  std::array<std::optional<comm::nccl_id_exchange>, 2> ids_;
  std::array<std::unique_ptr<comm::nccl_communicator>, 2> leaders_;  // before reduce_: destroyed after it
  std::array<std::optional<comm::hierarchical_allreduce>, 2> reduce_;
};

// The device transport of a split run on GPU GMIs (split_channels.hpp): named after the run, one channel an actor.
template <class Engine>
[[nodiscard]] split_channel_spec split_spec_of(runtime::context& ctx, int envs, bool processes) {
  split_channel_spec s;
  s.tag = ctx.id().run_id + "-sac-split";
  s.actors = ctx.world() - 1;
  s.envs = std::uint32_t(envs);
  s.steps = std::uint32_t(offpolicy_split_steps);
  s.row_floats = std::uint32_t(Engine::packed_width);
  s.weight_floats = Engine::actor_net::param_count;
  s.placement = comm::payload_placement::device;
  s.across_processes = processes;
  s.timeout = ctx.timeout();
  return s;
}

// Split roles on GPU GMIs: each actor's path to the learner (split_paths.hpp), one line an actor printed by the
// learner. Over several GPUs every actor first tells the learner where it is (its GPU, CUDA ordinal, GPUs its process
// sees), the learner plans with cudaDeviceCanAccessPeer and sends back the run's transport; on one GPU the learner
// plans alone. A refused plan (--split-transport device where an actor has no device path) ends every GMI.
struct split_start {
  bool device = false, peer = false;
};
inline split_start split_paths_at_start(runtime::context& ctx, const runtime::binding& b, split_transport_choice c,
                                        int gpus, bool quiet) {
  struct answer {
    std::uint32_t device = 0, peer = 0, refused = 0;
  };
  const auto bytes_of = [](const auto& v) {
    return std::span<const std::byte>(reinterpret_cast<const std::byte*>(&v), sizeof v);
  };
  int visible = 1;
  if (gpus > 1) GMI_CUDA_TRY(cudaGetDeviceCount(&visible));
  const split_gmi_place me{ctx.id().gpu, b.device(), visible};
  if (ctx.rank() != 0) {
    if (gpus == 1) return {c != split_transport_choice::host, false};
    ctx.send(bytes_of(me), 0);
    const std::vector<std::byte> m = ctx.recv(0);
    gmi::require(m.size() == sizeof(answer), "split roles: the learner's transport answer bytes", m.size(),
                 std::to_string(sizeof(answer)));
    answer a;
    std::memcpy(&a, m.data(), sizeof a);
    if (a.refused) {
      throw gmi::config_error("split roles: actor GMI " + std::to_string(ctx.rank()) +
                              ": the learner GMI 0 refused --split-transport device (its line says why)");
    }
    return {a.device != 0, a.peer != 0};
  }
  std::vector<split_gmi_place> actors(std::size_t(ctx.world() - 1), me);
  for (int a = 1; a < ctx.world() && gpus > 1; ++a) {
    const std::vector<std::byte> m = ctx.recv(a);
    gmi::require(m.size() == sizeof(split_gmi_place), "split roles: actor GMI " + std::to_string(a) + "'s place bytes",
                 m.size(), std::to_string(sizeof(split_gmi_place)));
    std::memcpy(&actors[std::size_t(a - 1)], m.data(), sizeof(split_gmi_place));
  }
  answer ans;
  split_plan plan;
  try {
    plan = plan_split_paths(c, me, actors, [](int from, int to) {
      int reach = 0;
      GMI_CUDA_TRY(cudaDeviceCanAccessPeer(&reach, from, to));
      return reach != 0;
    });
  } catch (const gmi::config_error&) {
    ans.refused = 1;
    for (int a = 1; a < ctx.world() && gpus > 1; ++a) ctx.send(bytes_of(ans), a);
    throw;
  }
  if (!quiet) {
    for (const std::string& l : plan.lines) std::printf("gmi: split roles: %s\n", l.c_str());
    std::fflush(stdout);
  }
  ans.device = plan.device ? 1u : 0u;
  ans.peer = plan.peer ? 1u : 0u;
  for (int a = 1; a < ctx.world() && gpus > 1; ++a) ctx.send(bytes_of(ans), a);
  return {plan.device, plan.peer};
}

// The environments' seed of GMI `rank` (the initial weights are rank 0's).
[[nodiscard]] inline std::uint64_t learner_seed(std::uint64_t seed, int rank) {
  return seed + 1000003ull * static_cast<std::uint64_t>(rank);
}

// FNV-1a of the actor's and both critics' weights (host spans or downloaded vectors).
template <class Engine>
[[nodiscard]] std::uint64_t learner_weights_hash(const Engine& eng) {
  std::vector<float> all;
  const auto add = [&](const auto& v) { all.insert(all.end(), v.data(), v.data() + v.size()); };
  add(eng.actor_params());
  add(eng.critic_params(0));
  add(eng.critic_params(1));
  return gmi::fnv1a(all.data(), all.size() * sizeof(float));
}

// A GMI's end, reported to the launcher as one JSON text (rank 0 adds the run's numbers).
template <class Engine>
void report_gmi(runtime::context& ctx, const train_result& r, const Engine& eng, const std::string& where,
                const char* role) {
  nlohmann::json j = {{"rank", ctx.rank()},          {"reason", r.reason_text()},
                      {"exit_code", r.exit_code},    {"iterations", r.iterations},
                      {"env_steps", r.env_steps},    {"wall_s", r.wall_seconds},
                      {"updates", eng.updates()},    {"train_samples_per_s", r.rates.train_samples_per_s},
                      {"weights_hash", learner_weights_hash(eng)}, {"where", where}, {"role", role}};
  if (ctx.rank() == 0) {
    if (std::isfinite(r.mean_return)) j["mean_return"] = r.mean_return;
    if (std::isfinite(r.eval_return)) j["eval_return"] = r.eval_return;
    j["curve"] = r.curve;
  }
  ctx.report(j.dump());
}

// One data-parallel learner's run (`sync`: the group's sums, learner_sync's or with the device path). With
// --sac-global-sampling the learners share one board (rl/sac_global.hpp) in a segment of the run.
template <class Pipeline, class Engine>
void learner_run(Engine& eng, runtime::context& ctx, const train_config<Pipeline>& o, std::string where,
                 const char* impl, rl::sac_sync sync) {
  std::optional<rl::sac_global_board> board;
  if (o.sac_global_sampling && ctx.world() > 1) {
    board.emplace(ctx.id().run_id + "-sac-global", ctx.rank(), ctx.world(), o.seed, ctx.timeout());
    sync = board->hook(std::move(sync));
    where += ", global sampling over the learners' tables";
  }
  eng.set_sync(std::move(sync));
  const train_result r = offpolicy_loop<Pipeline>(eng, o, where, impl, learner_group{{ctx}});
  report_gmi(ctx, r, eng, where, "learner");
}

// The launcher's result from the GMIs' reports: rank 0's numbers, the weights compared.
// `split`: one learner and actors, whose weights are not compared.
inline train_result collect_learners(const runtime::run_report& report, bool split = false) {
  train_result out;
  out.gmis = static_cast<int>(report.results.size());
  bool identical = true;
  std::optional<std::uint64_t> first;
  std::vector<std::string> reasons;
  for (std::size_t r = 0; r < report.results.size(); ++r) {
    if (report.results[r].empty()) throw gmi::error("GMI " + std::to_string(r) + " of the off-policy group reported nothing");
    const auto j = nlohmann::json::parse(report.results[r]);
    const auto h = j.at("weights_hash").get<std::uint64_t>();
    out.gmi_weights_hashes.push_back(h);
    if (first && *first != h) identical = false;
    if (!first) first = h;
    reasons.push_back(j.at("reason").get<std::string>());
    if (r != 0) continue;
    out.iterations = j.at("iterations").get<std::uint64_t>();
    out.env_steps = j.at("env_steps").get<double>();
    out.wall_seconds = j.at("wall_s").get<double>();
    out.rates.train_samples_per_s = j.at("train_samples_per_s").get<double>();
    if (j.contains("mean_return")) out.mean_return = j["mean_return"].get<double>();
    if (j.contains("eval_return")) out.eval_return = j["eval_return"].get<double>();
    out.curve = j.at("curve").get<std::vector<std::array<double, 2>>>();
  }
  out.set_reason(group_stop_reason(reasons));
  if (split) {
    out.exit_code = exit_code_of(out.reason, out.signal_number);
    return out;
  }
  std::printf("gmi: %zu SAC learners: weights %s (FNV-1a %016llx)\n", report.results.size(),
              identical ? "identical on every GMI" : "DIFFER between GMIs", static_cast<unsigned long long>(*first));
  std::fflush(stdout);
  if (!identical) {
    std::fprintf(stderr, "gmi: the SAC learners ended with different weights: data-parallel training is broken\n");
    out.exit_code = 1;
  } else {
    out.exit_code = exit_code_of(out.reason, out.signal_number);
  }
  return out;
}

// K learners as threads of this process, each on its own cores when there are enough (partition::cpu_cores); with
// --split-roles GMI 0 learns and the others act (offpolicy_split.hpp).
template <class Pipeline>
train_result offpolicy_on_host_gmis(const train_config<Pipeline>& o, int gmis) {
  using Env = typename Pipeline::env;
  using Nets = typename Pipeline::trainer::template networks<Env>;
  using engine = rl::sac_trainer<Env, Nets>;
  runtime::launch_spec spec = runtime::launch_spec::uniform(0, gmis);
  spec.heartbeat_timeout = std::chrono::milliseconds(30000);
  const auto cores = partition::cpu_cores::core_sets({gmis, {}});
  runtime::thread_group group(spec, [&](runtime::context& ctx) {
    const auto& mine = cores[static_cast<std::size_t>(ctx.rank())];
    partition::cpu_cores::binding bound(mine);
    const std::string where = "host threads (cpu_cores, " + std::to_string(mine.size()) + " core(s) a GMI)";
    const std::uint64_t seed = learner_seed(o.seed, ctx.rank());
    const offpolicy_role role = offpolicy_role_of(ctx.rank(), ctx.world(), o.split_roles);
    if (!o.split_roles) {
      engine eng(o.sac, o.num_envs, seed, o.env, bound.policy());
      learner_run<Pipeline>(eng, ctx, o, where, "gmi_host", learner_sync(ctx));
    } else if (role == offpolicy_role::learner) {
      engine eng(o.sac, o.num_envs, seed, o.env, bound.policy());
      const train_result r = split_learner_run<Pipeline>(eng, ctx, o, where, "gmi_host");
      report_gmi(ctx, r, eng, where, "learner");
    } else {
      engine eng(split_actor_config(o.sac), o.num_envs, seed, o.env, bound.policy());
      split_actor_run(eng, ctx);
      report_gmi(ctx, train_result{}, eng, where, "actor");
    }
  });
  return collect_learners(group.wait_or_throw(), o.split_roles);
}

// Learners on GPU GMIs (runtime::run_gmis: none or MPS, threads or processes). In a GMI process: that GMI's part.
// Gradients averaged on the device (hierarchical, the default) or through the host (cpu_staged).
template <class Pipeline>
train_result offpolicy_on_gpu_gmis(const train_config<Pipeline>& o, const runtime::gmis_config& cfg) {
  using Env = typename Pipeline::env;
  using Nets = typename Pipeline::trainer::template networks<Env>;
  const bool on_device = o.gradient_allreduce != allreduce_choice::cpu_staged;
  using engine = rl::sac_device_trainer<Env, Nets>;
  const runtime::gmi_work work = [&](runtime::context& ctx, runtime::binding& b) {
    const std::uint64_t seed = learner_seed(o.seed, ctx.rank());
    std::string where = cfg.partition + " over " + std::to_string(cfg.gpus.size()) + " GPU(s), " + b.describe();
    if (o.split_roles) {  // GMI 0 learns on its device table, the others step their envs on their devices
      std::optional<split_channel_spec> spec;  // the device transport: the actors write into GMI 0's memory
      const int gpus = int(cfg.gpus.size());
      const bool see_every_gpu = cfg.partition == "none";  // green contexts: not tried; MPS, MIG: one GPU each
      const bool allowed = split_transport_on_device(o.split_transport, true, gpus, see_every_gpu);
      const split_start st = split_paths_at_start(ctx, b, o.split_transport, gpus, o.quiet);
      if (st.device && allowed) {
        spec = split_spec_of<engine>(ctx, o.num_envs, runtime::this_gmi().has_value());  // GMI processes, or threads
        spec->peer = st.peer;
      }
      if (offpolicy_role_of(ctx.rank(), ctx.world(), true) == offpolicy_role::learner) {
        engine eng(o.sac, o.num_envs, seed, o.env);
        std::optional<split_channels_learner> ch;
        if (spec) ch.emplace(*spec, eng.stream());
        const train_result r = split_learner_run<Pipeline>(eng, ctx, o, where, "gmi_device", ch ? &*ch : nullptr);
        report_gmi(ctx, r, eng, where, "learner");
      } else {
        engine eng(split_actor_config(o.sac), o.num_envs, seed, o.env);
        std::optional<split_channels_actor> ch;
        if (spec) ch.emplace(*spec, ctx.rank(), eng.stream());
        split_actor_run(eng, ctx, ch ? &*ch : nullptr, std::size_t(o.num_envs));
        report_gmi(ctx, train_result{}, eng, where, "actor");
      }
      return;
    }
    engine eng(o.sac, o.num_envs, seed, o.env);
    if (!on_device || ctx.world() == 1) {
      learner_run<Pipeline>(eng, ctx, o, where + ", gradients summed through the host", "gmi_device",
                            learner_sync(ctx));
      return;
    }
    learner_device_sums sums(ctx, b, cfg, eng.sum_buffer(0), eng.sum_buffer(1));
    where += std::string(", gradients summed on the device (hierarchical, ") + sums.handshake() + " handshake)";
    learner_run<Pipeline>(eng, ctx, o, where, "gmi_device", sums.hook(learner_sync(ctx)));
  };
  const runtime::gmis_outcome outcome = runtime::run_gmis(cfg, work);
  if (!outcome.report) return ended_elsewhere(outcome.exit_code, false);
  return collect_learners(*outcome.report, o.split_roles);
}

}  // namespace gmi::detail

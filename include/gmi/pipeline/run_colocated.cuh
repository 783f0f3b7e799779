#pragma once
// The colocated layout's run: synchronous data-parallel PPO over every GMI of every GPU (the gradient sums are
// colocated_gmis.cuh's). Every GMI trains on its own environments (seed + rank); rank 0's initial weights start
// the group; rank 0 prints the group's progress; the launcher prints the totals and checks that every GMI holds
// the same weights. --checkpoint saves every GMI at the same group step (gmis_checkpoint.hpp); --resume restores
// every GMI; --restart-on-failure makes the launcher a loop of attempts (restart.hpp). Under mpirun/srun with
// one launcher a host, each host runs its GMIs as threads and joins the others (runtime::gpu_hosts): ranks and
// GPUs are global, the GPUs' leaders form one NCCL communicator over every host, host 0 prints and reports the
// job's totals, and a lost host or a failed GMI anywhere ends every host with one line naming it; with
// --restart-on-failure each host's launcher runs the GMIs of every attempt in a child process and the hosts restart
// together from the last checkpoint every host completed (host_attempts.hpp).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <utility>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/core/hash.hpp>
#include <gmi/io/safetensors.hpp>
#include <gmi/metrics/jsonl.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/metrics/run_info.hpp>
#include <gmi/pipeline/colocated_gmis.cuh>
#include <gmi/pipeline/cpu_actors.hpp>
#include <gmi/pipeline/gmis_checkpoint.hpp>
#include <gmi/pipeline/gmis_restart.hpp>
#include <gmi/pipeline/host_attempts.hpp>
#include <gmi/pipeline/report.hpp>
#include <gmi/pipeline/restart.hpp>
#include <gmi/pipeline/sm_activity.hpp>
#include <gmi/pipeline/train_config.hpp>
#include <gmi/pipeline/train_loop.hpp>
#include <gmi/pipeline/training_totals.hpp>
#include <gmi/rl/episode_window.hpp>
#include <gmi/rl/ppo.cuh>
#include <gmi/rl/ppo_eval.hpp>
#include <gmi/runtime/gmis.hpp>
#include <gmi/runtime/gpu_hosts.hpp>
#include <gmi/runtime/host_checkpoint.hpp>
#include <gmi/runtime/host_restart.hpp>
#include <gmi/runtime/trace.hpp>

namespace gmi::detail {

// Set when a run over several hosts failed: gmi::run then exits at once (_Exit) after its line, since a GMI thread
// may still sit in a collective whose peer is gone, and a normal exit would wait for it.
inline std::atomic<bool> hosts_failed{false};

// How much longer than a sum the other hosts wait for host 0's totals at the end of a run: host 0's first GMI
// evaluates the final policy first (256 Ant episodes took over a minute beside a second simulated host at 963a8f8,
// and the 60 s of a sum ended one such run with a timeout).
inline constexpr std::chrono::minutes final_evaluation_allowance{15};

// The job's totals, one record a host (gpu_hosts::gather).
struct host_totals {
  double samples_per_s = 0;
  std::uint64_t weights_hash = 0, iterations = 0;
  int weights_identical = 0;
};

template <class Pipeline>
train_result train_on_gmis(const train_config<Pipeline>& o, const runtime::gmis_config& cfg_in,
                           gmi_training_total* trial = nullptr) {
  using Env = typename Pipeline::env;
  using engine = typename Pipeline::template engine<exec::cuda>;
  runtime::gmis_config cfg = cfg_in;  // the launcher adds the restart loop's variables for GMI processes
  if constexpr (!Pipeline::comm_type::reduces) {
    throw gmi::config_error(gmi::got_need("communicator for layout colocated over " + std::to_string(cfg.world()) + " GMIs",
                                          Pipeline::comm_type::name,
                                          "one that reduces gradients: gmi::comm::hierarchical<gmi::comm::nccl> in the "
                                          "pipeline type"));
  }
  // --minibatch-scope (run_options.hpp): the group's minibatch split over the GMIs, or each GMI's own.
  rl::ppo_config per_gmi = o.ppo;
  const bool launcher = !runtime::this_gmi().has_value();
  // Several hosts (mpirun -np H, srun): this launcher joins the others before anything starts (place() refused
  // what does not work across hosts).
  std::shared_ptr<runtime::gpu_hosts> hosts;
  if (const runtime::host_info job = runtime::job_host(o.host_id); launcher && job.hosts > 1 && !trial) {
    runtime::gpu_hosts_options ho;
    ho.gpus = static_cast<int>(cfg.gpus.size());
    ho.gmis_per_gpu = cfg.gmis_per_gpu;
    ho.link.epochs = 1 + std::max(0, o.restart_on_failure);  // a link communicator for each attempt
    // An attempt of the restart loop across hosts talks to the other hosts through its launcher.
    const std::optional<runtime::relayed_hosts> relayed = relayed_hosts_from_env();
    hosts = relayed ? std::make_shared<runtime::gpu_hosts>(job, ho, *relayed) : std::make_shared<runtime::gpu_hosts>(job, ho);
    cfg.across_hosts = [hosts](runtime::launch_spec& s) { hosts->place(s); };
  }
  const int global_world = hosts ? hosts->global_world() : cfg.world();
  // Across hosts: each GMI's time in the cross-host sums over its training loop, and the loop's wall time.
  std::vector<std::pair<runtime::sum_phases, double>> cross_phases(hosts ? static_cast<std::size_t>(cfg.world()) : 0);
  const bool host0 = !hosts || hosts->host().host == 0;
  if (o.minibatch_scope == scope_choice::group) per_gmi.minibatch = std::max(1, (o.ppo.minibatch + global_world - 1) / global_world);
  // What a step averages (a GMI's minibatch is capped at its rollout, horizon x envs), for the start line.
  const long long gmi_minibatch = std::min<long long>(per_gmi.minibatch, static_cast<long long>(o.ppo.horizon) * o.num_envs);
  const long long group_minibatch = gmi_minibatch * global_world;
  // An attempt of a restart loop resumes where its parent says; otherwise from --resume.
  const std::optional<restart_note> attempt = restart_note_from_env();
  const std::string resume = attempt ? attempt->resume : o.resume_path;
  const std::optional<kill_at> kill = test_kill_from_env();
  const double group_samples = static_cast<double>(o.num_envs) * o.ppo.horizon * global_world;
  if (launcher) {
    gmi::throw_unless_ok(runtime::can_implement(cfg));
    if (kill) gmi::require(kill->rank < cfg.world(), test_kill_var, std::getenv(test_kill_var), "a rank below " + std::to_string(cfg.world()));
    const bool attempts_across_hosts = hosts && !hosts->relayed() && o.restart_on_failure > 0;
    if (attempts_across_hosts) {  // each host's launcher runs the attempts as child processes and relays for them
      host_attempts_config hc;
      hc.restarts = o.restart_on_failure;
      hc.checkpoint = o.checkpoint_path;
      hc.first_resume = o.resume_path;
      hc.gmis = cfg.world();
      hc.timeout = hosts->timeout();
      hc.attempt_bound = std::chrono::seconds(static_cast<long long>(std::min(o.max_seconds, 1e7)) + 600);
      hc.stop_signal = &detail::stop_signal;
      if (host0) {
        std::printf("gmi: --restart-on-failure %d across %d hosts: each host's launcher runs every attempt as a child "
                    "process; a failure on any host restarts every host from the last checkpoint all completed (%s)\n",
                    o.restart_on_failure, hosts->hosts(), o.checkpoint_path.c_str());
        std::fflush(stdout);
      }
      return ended_elsewhere(run_attempts_on_hosts(*hosts, hc), true);
    }
    // An attempt across hosts resumes where its launcher says: the launchers agreed on the checkpoint already.
    if (!resume.empty() && hosts && !hosts->relayed()) {  // the hosts agree on the last checkpoint all completed
      const auto it = runtime::agree_on_checkpoint(resume, {hosts->host().host, hosts->hosts(), cfg.world()},
                                                   [&](const void* m, void* a, std::size_t b) { hosts->gather_bytes(m, a, b); });
      gmi::require(it.has_value(), "--resume " + resume, "no manifest on some host",
                   "a checkpoint every host saved (" + resume + ".host<h>)");
    } else if (!resume.empty() && !hosts) {
      (void)manifest_for_resume(resume, cfg.world(), o.num_envs);
    }
    if (o.restart_on_failure > 0 && !attempt) {
      const restart_loop_config rc = gmis_restart_loop(o, cfg.world(), group_samples);
      std::printf("gmi: --restart-on-failure %d: each attempt runs as a child process; a lost GMI group restarts from "
                  "the last checkpoint at %s\n", o.restart_on_failure, o.checkpoint_path.c_str());
      std::fflush(stdout);
      return ended_elsewhere(run_with_restarts(rc), true);
    }
    // GMI processes get their environment from the launcher (GMI_* of ours are not passed on): the attempt's
    // place in a restart loop (in GMI_CHOSEN, beside a planned run's candidate) and the test hook go explicitly.
    if (attempt) add_to_chosen(cfg.env, "restart", to_json(*attempt));
    if (const char* v = std::getenv(test_kill_var)) cfg.env.emplace_back(test_kill_var, v);
  }
  const std::optional<restart_status> status = restart_status::from_env();
  const metrics::run_info run = metrics::describe_run();
  const char* task = task_name<Env>();
  if (launcher && !trial && hosts && host0) {
    std::printf("gmi: %d hosts (%s), host 0 '%s': each %zu GPU(s) x %d GMIs; NCCL among the %d GPUs' leaders of "
                "every host, statistics and stop votes summed through MPI\n", hosts->hosts(),
                hosts->host().source.c_str(), hosts->host().id.c_str(), cfg.gpus.size(), cfg.gmis_per_gpu,
                hosts->global_gpus());
  }
  if (launcher && !trial && host0) {
    std::printf("gmi: %s | colocated (synchronous PPO) | partition %s (%s) | %d GMIs = %zu GPU(s) x %d | %d envs per "
                "GMI | minibatch %lld per GMI (%lld for the group, --minibatch-scope %s) | gradients %s | seed %llu\n",
                task, cfg.partition.c_str(), cfg.processes() ? "processes" : "threads", global_world,
                cfg.gpus.size() * static_cast<std::size_t>(hosts ? hosts->hosts() : 1), cfg.gmis_per_gpu, o.num_envs, gmi_minibatch, group_minibatch, choice_name(o.minibatch_scope, scope_choice_names),
                o.gradient_allreduce == allreduce_choice::cpu_staged ? "cpu_staged (host shared memory)"
                                                                     : choice_name(o.gradient_allreduce, allreduce_choice_names),
                static_cast<unsigned long long>(o.seed));
    std::fflush(stdout);
  }
  const runtime::gmi_work work = [&](runtime::context& ctx, runtime::binding& b) {
    runtime::trace(ctx.id(), "building the trainer");
    const bool rank0 = ctx.id().global_rank() == 0;  // across hosts: host 0's first GMI
    // CPU actors (actors::on_cpu): this GMI's own actor cores among this host's GMIs.
    const int on_host = ctx.id().gpus * ctx.id().gmis_per_gpu, index = ctx.id().gpu_index() * ctx.id().gmis_per_gpu + ctx.slice();
    engine trainer = actors::make_gmi_engine<engine, Env>(
        index, on_host, o.actor_cores_per_gmi, o.num_envs, o.seed + 1000003ull * static_cast<std::uint64_t>(ctx.id().global_rank()),
        per_gmi, o.env, exec::cuda{.stream = b.stream(), .sm_count = b.sm_count()});
    // Room for every GMI's rollout statistics in the exchanged row (32 Cartpole GMIs need 1440 floats, the row
    // is 1289), so the fused update gathers them in its kernels instead of through the host every iteration.
    // Before a resume too: a resumed trainer is past iteration 0, and the buffer holds no state a checkpoint keeps.
    trainer.widen_gradient_buffer(engine::gradient_words_for(ctx.id().global_size()));
    std::uint64_t start_iteration = 0;
    if (!resume.empty()) {  // each GMI from its own file, before set_sync (Adam and normalizers must agree)
      if (hosts) {  // this GMI's file of the job (or this host's) manifest, its size and CRC checked
        const auto manifest = runtime::manifest_for_host(resume, hosts->host().host);
        trainer.load_state(runtime::load_from_hosts(manifest, ctx.id().global_rank()));
        start_iteration = runtime::read_host_manifest(manifest).iteration;
        gmi::require(trainer.iteration() == start_iteration, "--resume " + resume + ": iteration of GMI " +
                     std::to_string(ctx.id().global_rank()) + "'s file", trainer.iteration(),
                     std::to_string(start_iteration) + " (the manifest's)");
      } else {
        start_iteration = resume_gmi(ctx, trainer, resume);
      }
      if (ctx.rank() == 0) {
        std::printf("gmi: resumed from %s at iteration %llu (%d GMIs)\n", resume.c_str(),
                    static_cast<unsigned long long>(start_iteration), ctx.world());
        std::fflush(stdout);
      }
    }
    const auto grads = trainer.gradient_buffer();
    gmi_gradient_sync sync(ctx, b, cfg, grads.data(), grads.size(), o.gradient_allreduce, o.synced_update,
                           o.comm_clock, o.inbox_memory, hosts.get(), o.cross_host_sum);
    const graph_released_first<engine> release_graph_first{trainer, ctx.timeout()};
    if (rank0 && o.gradient_allreduce == allreduce_choice::automatic && !o.quiet) {
      std::printf("gmi: gradients %s\n", sync.description().c_str());
      std::fflush(stdout);
    }
    trainer.set_sync(sync.hook());  // rank 0's weights to every GMI
    if (rank0 && !o.quiet && o.synced_update != update_choice::eager && !sync.graph_update()) {
      std::printf("gmi: the update runs eagerly (kernel by kernel): the gradient sum (%s) waits on the host between "
                  "kernels\n", sync.description().c_str());
      std::fflush(stdout);
    }
    runtime::trace(ctx.id(), "trainer synced");
    const double world = ctx.id().global_size();
    if (status && ctx.rank() == 0) {
      status->block().start_iteration.store(start_iteration);
      status->block().iteration.store(start_iteration);
      status->block().started_ns.store(steady_ns());
    }
    // train_loop saves at rounds (every 5 iterations), so every GMI saves the same iteration.
    std::uint64_t last_saved = start_iteration;
    const auto save = [&] {
      if (o.checkpoint_path.empty() || trainer.iteration() == last_saved) return;
      if (hosts) {  // a file a GMI on its host, a manifest a host, the job's manifest on host 0 (host_checkpoint.hpp)
        io::checkpoint ck = trainer.save_state();
        ck.meta["git"] = run.git;
        ck.meta["run_id"] = run.run_id;
        const runtime::host_saver saver{ctx.id().global_rank(), ctx.id().global_size(), hosts->host().host,
                                        [&](double* d, std::size_t n) {
                                          hosts->sum(ctx.rank(), d, n, [&ctx] { return ctx.stop_requested(); });
                                        }};
        runtime::save_on_hosts(saver, ck, o.checkpoint_path, trainer.iteration(), cfg.world());
        last_saved = trainer.iteration();
        if (!rank0) return;
        io::export_safetensors(trainer.policy_tensors(), o.checkpoint_path + ".safetensors");
        if (!o.quiet) {
          std::printf("gmi: checkpoint %s (job manifest; a manifest and %d GMI files a host, + .safetensors) at "
                      "iteration %llu\n", o.checkpoint_path.c_str(), cfg.world(),
                      static_cast<unsigned long long>(trainer.iteration()));
          std::fflush(stdout);
        }
        return;
      }
      gmis_manifest base;
      base.gmis_per_gpu = cfg.gmis_per_gpu;
      base.gpus = ctx.id().gpus;
      base.num_envs = trainer.num_envs();
      base.env_steps = static_cast<double>(trainer.iteration()) * trainer.samples_per_iteration() * world;
      base.task = task;
      base.run_id = run.run_id;
      base.git = run.git;
      const auto m = save_gmis_checkpoint(ctx, trainer, o.checkpoint_path, base, {{"git", run.git}, {"run_id", run.run_id}});
      last_saved = trainer.iteration();
      if (!m) return;
      io::export_safetensors(trainer.policy_tensors(), o.checkpoint_path + ".safetensors");
      if (status) {
        status->block().checkpoint_ns.store(steady_ns());
        status->block().checkpoint_plus_1.store(m->iteration + 1);
      }
      if (!o.quiet) {
        std::printf("gmi: checkpoint %s (manifest + %d GMI files, + .safetensors) at iteration %llu\n",
                    o.checkpoint_path.c_str(), m->world, static_cast<unsigned long long>(m->iteration));
        std::fflush(stdout);
      }
    };
    // The communication clock's readings when the run starts (the automatic choice's timed sums left out).
    const double comm0 = sync.comm_seconds(b.stream()), host_sync0 = sync.host_sync_seconds();
    const double across0 = sync.comm_across_seconds(b.stream());
    const runtime::sum_phases phases0 = hosts ? hosts->phases(ctx.rank()) : runtime::sum_phases{};
    const auto loop_started = std::chrono::steady_clock::now();
    sm_activity_window gpm(ctx.slice(), b.nvml_index());  // GPU utilization from the first round on
    const loop_settings ls = loop_settings::of(o);
    const auto after_iterate = [&] {
      ctx.heartbeat();
      if (status && ctx.rank() == 0) status->block().iteration.store(trainer.iteration(), std::memory_order_relaxed);
      if (kill && kill->rank == ctx.rank() && trainer.iteration() == kill->iteration) {
        const std::string line = ctx.id().describe() + " killed by the test hook " + test_kill_var + "=" +
                                 std::getenv(test_kill_var) + " after iteration " + std::to_string(kill->iteration);
        if (status) status->set_note(line);
        std::fprintf(stderr, "gmi: %s\n", line.c_str());
        std::fflush(stderr);
        ::raise(SIGKILL);
      }
    };
    const auto progress = [&](const loop_view& v) {
      if (o.quiet) return;
      std::printf("iter %6llu | steps %s | train %s samples/s (all GMIs) | return %s | kl %.4f | lr %.1e | %s\n",
                  static_cast<unsigned long long>(v.iteration), metrics::si(v.steps).c_str(),
                  metrics::si(v.run_steps / v.seconds).c_str(),
                  std::isfinite(v.mean_return) ? metrics::si(v.mean_return).c_str() : "-", v.losses.approx_kl,
                  v.losses.learning_rate, metrics::clock_text(v.seconds).c_str());
      std::fflush(stdout);
    };
    const loop_end e = train_loop(trainer, synced_group{ctx, hosts.get()}, ls, gpm, after_iterate, progress, save);
    sync.add_host_sync_seconds(e.decide_seconds);
    if (hosts) {
      cross_phases[static_cast<std::size_t>(ctx.rank())] = {
          hosts->phases(ctx.rank()).since(phases0),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_started).count()};
    }
    const std::string reason = stop_reason_text(e.reason, e.signal_number);
    sync.wait(b.stream());
    trainer.synchronize();
    gmi_training_result r;
    r.gpm = gpm.finish();
    r.rank = ctx.rank();
    r.gpu = ctx.gpu();
    r.slice = ctx.slice();
    r.num_envs = trainer.num_envs();
    r.iterations = trainer.iteration();
    // this run's (the rate's): a resumed checkpoint's steps took none of its time
    r.samples = static_cast<double>(trainer.iteration() - start_iteration) * trainer.samples_per_iteration();
    const auto end = std::chrono::steady_clock::now();
    r.seconds = std::chrono::duration<double>(end - e.started).count();  // the drain after the loop included
    if (e.warm && trainer.iteration() > e.warm->second) {
      r.warm_samples = static_cast<double>(trainer.iteration() - e.warm->second) * trainer.samples_per_iteration();
      r.warm_seconds = std::chrono::duration<double>(end - e.warm->first).count();
    }
    r.device_bytes = cuda::device_bytes_of_this_thread().peak;
    r.comm_seconds = sync.comm_seconds(b.stream()) - comm0;  // NaN without a clock
    r.host_sync_seconds = sync.host_sync_seconds() - host_sync0;
    r.comm_across_seconds = sync.comm_across_seconds(b.stream()) - across0;  // NaN unless fused across GPUs
    r.mean_return = e.mean_return;
    r.reason = reason;
    r.binding = b.describe();
    if (ctx.rank() == 0) r.curve = e.curve;
    r.gradients = sync.description();
    r.update = sync.update();
    r.statistics = trainer.statistics_in_kernel() ? "kernel" : "host";
    if constexpr (requires { trainer.collection_name(); }) r.collection = trainer.collection_name();
    const auto params = trainer.params();
    std::vector<float> host(params.size());
    cuda::copy(host_span<float>(host.data(), host.size()), memory_span<const float, device_memory>(params.data(), params.size()),
               b.stream());
    GMI_CUDA_TRY(cudaStreamSynchronize(b.stream()));
    r.weights_hash = gmi::fnv1a(host.data(), host.size() * sizeof(float));
    // Rank 0: the final policy without exploration noise, on host threads after the clock stopped (the weights
    // are the group's, identical on every GMI). Not for autotune trials, a diverged run or one that trained nothing.
    if constexpr (requires { rl::evaluate_mode(trainer, 1, o.env); }) {
      if (rank0 && !trial && e.reason != stop_reason::diverged && e.trained()) {
        const runtime::heartbeat_during beats(ctx);  // a physics task's evaluation outlasts the hang timeout
        const rl::eval_result ev = rl::evaluate_mode(trainer, rl::default_eval_episodes, o.env);
        r.eval_return = ev.mean_return;
        r.eval_length = ev.mean_length;
        r.eval_episodes = ev.episodes;
      }
    }
    ctx.report(nlohmann::json(r).dump());
    runtime::trace(ctx.id(), "done: " + reason);
  };
  runtime::gmis_outcome outcome;
  try {
    outcome = runtime::run_gmis(cfg, work);
  } catch (const runtime::gmi_failed& e) {
    if (hosts) {  // one line naming this host; the other hosts hear it unless the cause is one of them
      runtime::failure f = e.info();
      f.message = hosts->describe() + ": " + f.message;
      if (f.rank >= 0) {
        hosts->notify_failure(f.message);
        // NCCL fails as soon as a peer host's sockets close: name that host once the link misses it.
        const bool collective = f.cause.find("NCCL") != std::string::npos || f.cause.find("host sum") != std::string::npos;
        if (const auto lost = collective ? hosts->wait_for_lost_host() : std::nullopt) {
          f.message = hosts->describe() + ": " + lost->message + " (here " + e.info().message + ")";
        }
      }
      if (status) status->set_note(f.message);  // an attempt across hosts: its launcher names this line
      hosts_failed.store(true);
      throw runtime::gmi_failed(f);
    }
    if (status && e.info().rank >= 0) {  // tell the restart loop a GMI was lost (a launcher signal is no loss)
      status->set_note(e.what());
      status->block().lost_gmi.store(1);
    }
    throw;
  }
  if (!outcome.report) return ended_elsewhere(outcome.exit_code, false);  // a GMI process: its launcher reports
  gmi_training_total t = collect_training(*outcome.report);
  const gmi_training_result& first = t.per_gmi.front();
  int hosts_count = 1;
  if (hosts) {  // the job's totals from every host; then the closing barrier
    host_totals mine{t.samples_per_s, first.weights_hash, t.iterations, t.weights_identical ? 1 : 0};
    std::vector<host_totals> all;
    try {
      // Host 0's first GMI evaluates the final policy (rl::default_eval_episodes on host threads: a minute or more
      // for a physics task) before its launcher gets here: the others wait for the totals that much longer.
      all = hosts->gather(mine, hosts->timeout() + final_evaluation_allowance);
      hosts->finish();
    } catch (const gmi::error& e) {
      hosts_failed.store(true);
      throw runtime::gmi_failed(runtime::failure{-1, e.what(), hosts->describe() + ": " + e.what()});
    }
    t.samples_per_s = 0;
    for (const host_totals& h : all) {
      t.samples_per_s += h.samples_per_s;
      t.weights_identical = t.weights_identical && h.weights_identical == 1 && h.weights_hash == first.weights_hash &&
                            h.iterations == t.iterations;
    }
    hosts_count = hosts->hosts();
    if (!host0) {
      std::printf("gmi: %s: %s after %llu iterations, %s samples/s on this host's %zu GMIs; host 0 reports the job\n",
                  hosts->describe().c_str(), t.reason.c_str(), static_cast<unsigned long long>(t.iterations),
                  metrics::si(mine.samples_per_s).c_str(), t.per_gmi.size());
      std::fflush(stdout);
    }
  }
  if (trial) {
    if (!t.weights_identical) throw gmi::error("the GMIs ended with different weights: synchronous training is broken");
    *trial = t;
    return {};
  }
  const std::string on_hosts = hosts ? " on " + std::to_string(hosts_count) + " hosts" : "";
  if (host0) std::printf("gmi: %s after %llu iterations: %s samples/s over %d GMIs%s (%s each on average, update %s, "
              "statistics %s) | mean return %s | weights %s (FNV-1a %016llx)\n",
              t.reason.c_str(), static_cast<unsigned long long>(t.iterations), metrics::si(t.samples_per_s).c_str(),
              global_world, on_hosts.c_str(), metrics::si(t.samples_per_s / global_world).c_str(),
              first.update.c_str(), first.statistics.c_str(), return_text(first.mean_return, o).c_str(), t.weights_identical ? "identical on every GMI" : "DIFFER between GMIs",
              static_cast<unsigned long long>(first.weights_hash));
  if (host0 && std::isfinite(first.eval_return)) {
    std::printf("gmi: deterministic evaluation: mean return %s over %llu episodes\n",
                return_text(first.eval_return, o).c_str(), static_cast<unsigned long long>(first.eval_episodes));
  }
  if (host0 && std::isfinite(t.comm_share)) std::printf("gmi: %s\n", comm_share_text(t).c_str());
  nlohmann::json cross_host;  // host 0's GMI 0 across hosts: where its training loop's time went (docs/multihost.md)
  if (hosts && host0 && !cross_phases.empty()) {
    const auto& [p, wall] = cross_phases.front();
    const double allreduce = first.comm_seconds;  // device spans of the gradient sums; NaN without --comm-clock on
    cross_host = {{"wall_seconds", wall}, {"sums", p.sums}, {"sum_seconds", p.sum_seconds},
                  {"mpi_seconds", p.mpi_seconds}, {"wait_seconds", p.wait_seconds}};
    if (std::isfinite(allreduce)) cross_host["allreduce_seconds"] = allreduce;
    std::printf("gmi: across hosts, host 0's GMI 0 in %.3f s of training: %.3f s in %llu cross-host sums of statistics "
                "and stop votes (%.3f s in MPI between the hosts, %.3f s waiting), gradient allreduce %s\n",
                wall, p.sum_seconds, static_cast<unsigned long long>(p.sums), p.mpi_seconds, p.wait_seconds,
                std::isfinite(allreduce) ? (std::to_string(allreduce) + " s (device spans)").c_str()
                                         : "not timed (--comm-clock on times it)");
  }
  if (host0) std::printf("gmi: %s%s\n", utilization_text(t).c_str(), hosts ? " (host 0's GPUs)" : "");
  std::fflush(stdout);
  if (host0 && !o.metrics_path.empty()) {
    nlohmann::json per = nlohmann::json::array();
    for (const auto& g : t.per_gmi) {
      per.push_back(g);
      per.back().erase("curve");  // rank 0's, once, at the top
    }
    nlohmann::json line = gmis_end_line(run, task, "colocated", cfg, o);
    line.update({{"reason", t.reason},
                 {"iteration", t.iterations},
                 {"train_samples_per_s", t.samples_per_s},
                 {"weights_identical", t.weights_identical},
                 {"per_gmi", per},
                 {"ppo", ppo_settings_json(o.ppo)},
                 {"curve", first.curve},
                 {"gradient_allreduce", first.gradients},
                 {"synced_update", first.update},
                 {"synced_update_asked", choice_name(o.synced_update, update_choice_names)},
                 {"rollout_statistics", first.statistics},
                 {"minibatch_scope", choice_name(o.minibatch_scope, scope_choice_names)},
                 {"comm_clock", choice_name(o.comm_clock, clock_choice_names)},
                 {"minibatch_gradient", rl::minibatch_gradient_name<typename Pipeline::network>(o.ppo.network)},
                 {"collection", first.collection.empty() ? rl::collection_path_name<typename Pipeline::network>(o.ppo.network)
                                                         : first.collection},
                 {"network", network_text<Pipeline>()}});
    if (std::isfinite(first.mean_return)) line["mean_return"] = first.mean_return;
    if (std::isfinite(first.eval_return)) {
      line.update({{"eval_return", first.eval_return}, {"eval_episodes", first.eval_episodes}, {"eval_length", first.eval_length}});
    }
    if (std::isfinite(t.comm_share)) {
      line.update({{"comm_share", t.comm_share}, {"comm_share_max", t.comm_share_max}, {"host_sync_share", t.host_sync_share}});
    }
    if (std::isfinite(t.comm_share_across)) line["comm_share_across"] = t.comm_share_across;
    put_sm_activity(line, t.gpm);
    if (hosts) {  // the job's shape; per_gmi, utilization and communication shares are host 0's
      line.update({{"hosts", hosts_count}, {"gpus_per_host", cfg.gpus.size()}, {"gpus", hosts->global_gpus()},
                   {"cross_host_sum",
                    cross_host_sum_used(o.cross_host_sum, hosts->hosts(), hosts->global_gpus() / hosts->hosts())},
                   {"cross_host_sum_asked", choice_name(o.cross_host_sum, cross_sum_choice_names)},
                   {"gmis", global_world}, {"launcher", hosts->host().source}, {"host_id", hosts->host().id}});
      if (!cross_host.is_null()) line["cross_host"] = cross_host;
    } else {
      line["hosts"] = 1;
    }
    metrics::jsonl_log(o.metrics_path).write(line);
  }
  train_result result;
  result.set_reason(t.reason);
  result.gmis = global_world;
  result.iterations = t.iterations;
  result.env_steps = static_cast<double>(t.iterations) * group_samples;
  result.wall_seconds = first.seconds;
  result.mean_return = first.mean_return;
  result.curve = first.curve;
  result.eval_return = first.eval_return;
  result.rates.train_samples_per_s = t.samples_per_s;
  if (!t.weights_identical) {
    std::fprintf(stderr, "gmi: the GMIs ended with different weights: synchronous training is broken\n");
    result.exit_code = 1;
  } else {
    result.exit_code = exit_code_of(result.reason, detail::stop_signal.load());  // diverged: GMI 0 said why
  }
  return result;
}

}  // namespace gmi::detail

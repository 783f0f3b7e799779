#pragma once
// The split layout: asynchronous PPO with V-trace (rl/appo.hpp). On every GPU, slice 0 is the trainer GMI, slices
// 1..k-1 serving GMIs:
//   serving GMI   acts with the newest weights it has (read from the weights board without waiting), sends each
//                 rollout ([T + 1][N] appo_records, the version inside) through comm::channel to the trainer;
//   trainer GMI   takes rollouts whose weights are at most --max-policy-lag updates old (older ones are dropped
//                 and counted), updates with V-trace after every `servers` rollouts and publishes the weights.
// The trainer decides when the run stops (solved from the rollouts' finished episodes, time, step limit, signal,
// teardown) and says so in the published payload ([snapshot | stop]); the serving GMIs close their channel ends,
// and the trainer drains the channel until every one has closed, so every wait is bounded by the channel timeout.
// The trainer's host never waits for its own update: a rollout's weights version and finished episodes come in
// its package note (comm::package_note, counted by the serving GMI), its copy into the update batch queues behind
// the running update, and the weights of update k are published once its event has fired, from one of two
// payload buffers, while update k + 1 may already run.
// With several GPUs the trainers are one data-parallel group (split_trainer_group.hpp): they sum gradients and
// normalizer moments through NCCL inside each update and take the stop decision together every few updates;
// each GPU's serving GMIs still feed and read only their own trainer.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gmi/comm/channel.hpp>
#include <gmi/comm/weights_channel.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/hash.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/event.hpp>
#include <gmi/cuda/stream.hpp>
#include <gmi/metrics/progress.hpp>
#include <gmi/pipeline/restart.hpp>
#include <gmi/pipeline/run_options.hpp>
#include <gmi/pipeline/sm_activity.hpp>
#include <gmi/pipeline/split_totals.hpp>
#include <gmi/pipeline/split_trainer_group.hpp>
#include <gmi/pipeline/stop_reason.hpp>
#include <gmi/pipeline/train_loop.hpp>
#include <gmi/rl/appo.cuh>
#include <gmi/rl/episode_window.hpp>
#include <gmi/runtime/context.hpp>
#include <gmi/runtime/gmis.hpp>
#include <gmi/runtime/trace.hpp>

namespace gmi {

struct split_settings {
  rl::appo_config appo;
  int max_policy_lag = 4;
  std::uint32_t channel_slots = 4;  // rollouts each serving GMI may have queued (comm::channel_options::slots)
  int num_envs = 0;
  std::uint64_t seed = 0;
  detail::loop_settings limits;  // the step and time limits, target, log interval and solved window of every layout
  bool quiet = false;
  std::optional<kill_at> kill;  // the test hook GMI_TEST_KILL_AT: this trainer SIGKILLs itself after that update
};

// What a serving GMI's package note says about its rollout: the weights version it acted with, and the episodes
// that finished in its previous rollout (counted from that rollout's bootstrap row, one rollout behind so the
// serving GMI never waits for the copy).
struct rollout_note {
  std::uint64_t version = 0;
  rl::episode_stats episodes;

  template <class Record>
  static rl::episode_stats count(const Record* bootstrap_row, std::size_t n) {
    rl::episode_stats e;
    for (std::size_t i = 0; i < n; ++i) {
      e.episodes += bootstrap_row[i].end;
      e.return_sum += bootstrap_row[i].reward;
    }
    return e;
  }
  [[nodiscard]] comm::package_note packed() const {
    comm::package_note p;
    p.words[0] = version;
    p.words[1] = episodes.episodes;
    p.words[2] = std::bit_cast<std::uint64_t>(episodes.return_sum);
    return p;
  }
  static rollout_note from(const comm::package_note& p) {
    rollout_note r;
    r.version = p.words[0];
    r.episodes.episodes = p.words[1];
    r.episodes.return_sum = std::bit_cast<double>(p.words[2]);
    return r;
  }
};

namespace detail {
// The channel and board of GPU `gpu_index`, the same values on every GMI of that GPU.
template <class Net>
comm::channel_options split_channel(const runtime::context& ctx, const split_settings& s, int gpu_index, int servers) {
  const int horizon = s.appo.ppo.horizon, envs = s.num_envs;
  using record = rl::appo_record<Net::obs_dim, Net::act_dim>;
  comm::channel_options c;
  c.tag = ctx.id().run_id + "-exp-g" + std::to_string(gpu_index);
  c.producers = servers;
  c.consumers = 1;
  c.record_bytes = sizeof(record);
  c.shape_tag = (std::uint64_t{Net::obs_dim} << 48) ^ (std::uint64_t{Net::act_dim} << 40) ^
                (std::uint64_t(horizon) << 20) ^ std::uint64_t(envs);
  c.package_steps = static_cast<std::uint32_t>(horizon + 1);  // a package is one whole rollout
  c.package_envs = static_cast<std::uint32_t>(envs);
  c.packages_per_slot = 1;
  c.slots = s.channel_slots;
  c.placement = comm::payload_placement::device;
  c.timeout = ctx.timeout();
  c.across_processes = runtime::this_gmi().has_value();  // GMI processes, else every GMI a thread of this one
  return c;
}
template <class Net>
comm::weights_options split_board(const runtime::context& ctx, int gpu_index, int servers) {
  comm::weights_options w;
  w.tag = ctx.id().run_id + "-wts-g" + std::to_string(gpu_index);
  w.bytes = (rl::appo_snapshot_layout<Net>::size + 1) * sizeof(float);  // [snapshot | stop]
  w.readers = servers;
  w.placement = comm::payload_placement::device;
  w.timeout = ctx.timeout();
  return w;
}
}  // namespace detail

// The trainer GMI of one GPU; `gpus` > 1: one of the group of every GPU's trainer.
template <class Env, class Net>
split_gmi_result split_trainer(runtime::context& ctx, runtime::binding& b, const split_settings& s, int servers,
                               int gpus) {
  using learner_type = rl::appo_learner<Net, exec::cuda>;
  using record = typename learner_type::record;
  using layout = rl::appo_snapshot_layout<Net>;
  const int gpu_index = ctx.id().gpu_index();
  const cudaStream_t stream = b.stream();
  rl::appo_config cfg = s.appo;
  cfg.rollouts = servers;
  // Before the learner, so it goes after it (the learner's update graph holds the group's NCCL work).
  std::optional<split_trainer_group> group;
  if (gpus > 1) {
    group.emplace(ctx, gpus, servers + 1);
    b.reassert();
  }
  learner_type learner(s.num_envs, s.seed, cfg, exec::cuda{.stream = stream, .sm_count = b.sm_count()});
  if (group) learner.set_sync(group->sync());
  const split_group_abort_on_unwind abort_guard{group ? &*group : nullptr};
  // Waits for this trainer's stream or an event on it; bounded in a group (behind its collectives).
  auto settle = [&] {
    if (group) group->settle(stream);
    else learner.synchronize();
  };
  auto wait_for = [&](const cuda::event& e) {
    if (group) group->wait(e.get());
    else e.synchronize();
  };
  comm::weights_writer board(detail::split_board<Net>(ctx, gpu_index, servers));
  comm::channel_consumer consumer(detail::split_channel<Net>(ctx, s, gpu_index, servers), 0, 1,
                                  stream);
  b.reassert();
  // Two payloads ([snapshot | stop]) so update k + 1 can be queued before update k's weights are published.
  cuda::device_buffer<float> payloads[2] = {cuda::device_buffer<float>(layout::size + 1),
                                           cuda::device_buffer<float>(layout::size + 1)};
  for (auto& p : payloads) p.fill_bytes(0, stream);  // stop = 0.0f
  cuda::event filled[2];
  bool pending[2] = {false, false};
  int next_payload = 0, oldest = 0;
  cuda::stream publish_stream;  // the board's copy waits only for itself
  // Publishes the oldest pending payload (waiting for its update when `wait`); false when none is pending or its
  // update still runs.
  auto publish_oldest = [&](bool wait) {
    if (!pending[oldest] || (!wait && !filled[oldest].ready())) return false;
    wait_for(filled[oldest]);
    board.publish(payloads[oldest].data(), publish_stream.get());
    pending[oldest] = false;
    oldest ^= 1;
    return true;
  };
  // Queues the learner's current weights into the next payload; published by publish_oldest.
  auto queue_publish = [&] {
    if (pending[next_payload]) publish_oldest(true);  // two updates behind: wait for the older one
    const auto snap = learner.snapshot();
    GMI_CUDA_TRY(cudaMemcpyAsync(payloads[next_payload].data(), snap.data(), layout::size * sizeof(float),
                                 cudaMemcpyDeviceToDevice, stream));
    filled[next_payload].record(stream);
    pending[next_payload] = true;
    next_payload ^= 1;
  };
  // The final weights with stop = 1, after everything pending.
  auto publish_stop = [&] {
    while (publish_oldest(true)) {
    }
    const auto snap = learner.snapshot();
    const float flag = 1.0f;
    float* p = payloads[next_payload].data();
    GMI_CUDA_TRY(cudaMemcpyAsync(p, snap.data(), layout::size * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    GMI_CUDA_TRY(cudaMemcpyAsync(p + layout::size, &flag, sizeof flag, cudaMemcpyHostToDevice, stream));
    settle();
    board.publish(p, publish_stream.get());
  };
  queue_publish();  // version 1: the initial weights; board version v = learner version v - 1
  publish_oldest(true);
  runtime::trace(ctx.id(), "trainer: initial weights published");

  const std::size_t n = static_cast<std::size_t>(s.num_envs);
  rl::episode_window window(static_cast<std::uint64_t>(s.limits.min_episodes));
  rl::episode_stats unshared;  // in a group: episodes finished since the group's last decision
  split_gmi_result r;
  r.trainer = true;
  double lag_sum = 0;
  bool stopping = false, solved = false;
  std::string reason = "all serving GMIs closed";
  const auto t0 = std::chrono::steady_clock::now();
  double last_log = 0, last_look = 0;
  bool diverged = false;  // the loss terms turned non-finite
  const bool printer = !s.quiet && gpu_index == 0;
  std::optional<std::pair<std::chrono::steady_clock::time_point, std::uint64_t>> first_update;
  sm_activity_window gpm(ctx.slice(), b.nvml_index());
  // The run stops here (`why`): throughput window closed, the final weights published with the stop flag.
  auto stop_now = [&](std::string why) {
    reason = std::move(why);
    stopping = true;
    if (first_update && learner.version() > first_update->second) {
      r.warm_steps = static_cast<double>(learner.version() - first_update->second) *
                     static_cast<double>(learner.samples_per_update());
      r.warm_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - first_update->first).count();
    }
    r.gpm = gpm.finish();
    publish_stop();
    runtime::trace(ctx.id(), "trainer: stop published (" + reason + "), draining");
  };
  auto served_steps = [&] {
    return static_cast<double>(r.rollouts + r.dropped) * static_cast<double>(cfg.ppo.horizon) * static_cast<double>(n);
  };
  auto seconds_since_start = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  // In a group, before every check_every-th update: the group's episodes and votes; true when it stops now.
  auto group_decides = [&] {
    const int sig = detail::stop_signal.load();
    const split_trainer_group::tally t =
        group->decide({.diverged = diverged, .signal = sig != 0, .time_up = seconds_since_start() >= s.limits.max_seconds,
                       .stop_requested = ctx.stop_requested(), .episodes = static_cast<double>(unshared.episodes),
                       .return_sum = unshared.return_sum, .served = served_steps()});
    unshared = {};
    if (t.episodes > 0)
      if (const auto mean = window.add({.episodes = static_cast<std::uint64_t>(t.episodes), .return_sum = t.return_sum}))
        solved = std::isfinite(s.limits.target_return) && *mean >= s.limits.target_return;
    const stop_causes c{.diverged = t.diverged != 0, .solved = solved, .signal = sig, .time_up = t.time_up != 0,
                        .steps_up = t.served >= s.limits.max_env_steps};
    if (c.diverged || c.solved || t.signal || c.time_up || c.steps_up || t.stop_requested) {
      stop_now(t.signal && !sig && !c.diverged && !c.solved ? std::string("signal (on another trainer)") : stop_text(c));
    }
    return stopping;
  };
  for (;;) {
    const auto asked = std::chrono::steady_clock::now();
    auto batch = consumer.next_batch();
    r.waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    if (!batch) break;
    ctx.heartbeat();
    const auto* rollout = batch->template as<record>();
    if (stopping) continue;  // draining: the serving GMIs close once they read the stop
    publish_oldest(false);   // the last update's weights, if it has finished
    const rollout_note note = rollout_note::from(batch->notes().front());
    if (note.episodes.episodes > 0) {
      if (group) {
        unshared.episodes += note.episodes.episodes;
        unshared.return_sum += note.episodes.return_sum;
      } else if (const auto mean = window.add(note.episodes)) {
        solved = std::isfinite(s.limits.target_return) && *mean >= s.limits.target_return;
      }
    }
    const std::uint64_t current = learner.version() + 1;  // the board version of the learner's weights
    const std::uint64_t version = note.version;
    const std::uint64_t lag = current > version ? current - version : 0;
    lag_sum += static_cast<double>(lag);
    r.lag_max = std::max(r.lag_max, lag);
    if (lag > static_cast<std::uint64_t>(s.max_policy_lag)) {
      ++r.dropped;
    } else {
      learner.take(rollout);
      ++r.rollouts;
    }
    batch->release();
    if (learner.ready() && !(group && learner.version() % split_trainer_group::check_every == 0 && group_decides())) {
      learner.update();
      queue_publish();
      if (s.kill && s.kill->rank == ctx.rank() && learner.version() == s.kill->iteration) {
        std::fprintf(stderr, "gmi: %s killed by the test hook %s=%s after update %llu\n", ctx.id().describe().c_str(),
                     test_kill_var, std::getenv(test_kill_var), static_cast<unsigned long long>(learner.version()));
        std::fflush(stderr);
        ::raise(SIGKILL);
      }
      if (!first_update) {
        first_update.emplace(std::chrono::steady_clock::now(), learner.version());
        gpm.start();
      }
    }
    if (stopping) continue;
    const double elapsed = seconds_since_start();
    const double trained = static_cast<double>(learner.version()) * static_cast<double>(learner.samples_per_update());
    const int sig = detail::stop_signal.load();
    // At each log time the trainer looks at its loss terms: non-finite ones end the run (reason "diverged"; in a
    // group, at its next decision).
    std::optional<rl::ppo_losses> looked;  // the loss terms, when the trainer looks at them
    if (elapsed - last_look >= s.limits.log_interval) {
      last_look = elapsed;
      if (group) group->settle(stream);  // the losses' copy waits behind the group's collectives
      const auto& l = looked.emplace(learner.losses());
      if (!l.finite() && !diverged) {
        diverged = true;
        std::fprintf(stderr, "gmi: training diverged by update %llu (%s samples trained): %s; the run stops "
                             "(try a smaller --lr or --max-grad-norm)\n",
                     static_cast<unsigned long long>(learner.version()), metrics::si(trained).c_str(),
                     l.not_finite().c_str());
      }
    }
    if (printer && looked && (elapsed - last_log >= s.limits.log_interval)) {
      const double m = window.last_mean().value_or(std::numeric_limits<double>::quiet_NaN());
      // How far the serving GMIs' policies were from the learner's in the last update (copies T x C floats).
      const rl::appo_lag_stats off = learner.lag_stats();
      std::printf("update %6llu | trained %s | %s samples/s | return %s | lag mean %.2f max %llu | dropped %llu | kl %.4f "
                  "| entropy %.2f | clipped %.2f | |log pi/mu| %.2f, rho clipped %.2f | %s\n",
                  static_cast<unsigned long long>(learner.version()), metrics::si(trained * gpus).c_str(),
                  metrics::si(trained * gpus / std::max(elapsed, 1e-9)).c_str(),
                  std::isfinite(m) ? metrics::si(m).c_str() : "-",
                  lag_sum / static_cast<double>(r.rollouts + r.dropped), static_cast<unsigned long long>(r.lag_max),
                  static_cast<unsigned long long>(r.dropped), looked->approx_kl, looked->entropy, looked->clip_fraction,
                  off.mean_abs_log_ratio, off.rho_clipped, metrics::clock_text(elapsed).c_str());
      std::fflush(stdout);
      last_log = elapsed;
    }
    if (group) continue;  // the group decides before its updates
    const stop_causes c{.diverged = diverged, .solved = solved, .signal = sig, .time_up = elapsed >= s.limits.max_seconds,
                        .steps_up = served_steps() >= s.limits.max_env_steps};
    if (c.diverged || c.solved || c.signal || c.time_up || c.steps_up || ctx.stop_requested()) stop_now(stop_text(c));
  }
  settle();
  r.seconds = seconds_since_start();
  r.updates = learner.version();
  r.replayed = learner.replayed_updates();
  r.steps = static_cast<double>(learner.version()) * static_cast<double>(learner.samples_per_update());
  r.lag_mean = r.rollouts + r.dropped ? lag_sum / static_cast<double>(r.rollouts + r.dropped) : 0.0;
  r.mean_return = window.last_mean().value_or(std::numeric_limits<double>::quiet_NaN());
  r.reason = reason;
  std::vector<float> final_weights(layout::size);
  const auto snap = learner.snapshot();
  GMI_CUDA_TRY(cudaMemcpyAsync(final_weights.data(), snap.data(), layout::size * sizeof(float), cudaMemcpyDeviceToHost,
                               stream));
  learner.synchronize();  // a copy after everything has settled
  r.weights_hash = gmi::fnv1a(final_weights.data(), final_weights.size() * sizeof(float));
  return r;
}

// A serving GMI: act, send, pick up newer weights between rollouts; stop when the trainer says so.
template <class Env, class Net>
split_gmi_result split_server(runtime::context& ctx, runtime::binding& b, const split_settings& s, int servers,
                              const typename Env::params& env_params) {
  using actor_type = rl::appo_actor<Env, Net, exec::cuda>;
  using layout = rl::appo_snapshot_layout<Net>;
  const int gpu_index = ctx.id().gpu_index();
  const cudaStream_t stream = b.stream();
  const rl::ppo_config& p = s.appo.ppo;
  actor_type actor(s.num_envs, s.seed + 1000003ull * static_cast<std::uint64_t>(ctx.rank()), p.horizon, p.gamma,
                   p.bootstrap_truncation, env_params, exec::cuda{.stream = stream});
  comm::channel_producer producer(detail::split_channel<Net>(ctx, s, gpu_index, servers),
                                  ctx.slice() - 1, stream);
  comm::weights_reader board(detail::split_board<Net>(ctx, gpu_index, servers));
  b.reassert();
  std::vector<float> payload(layout::size + 1);
  using record = typename actor_type::record;
  const std::size_t n = static_cast<std::size_t>(s.num_envs);
  // The bootstrap rows of the last two rollouts (their finished episodes), each with the event of its copy.
  cuda::pinned_buffer<record> rows[2] = {cuda::pinned_buffer<record>(n), cuda::pinned_buffer<record>(n)};
  cuda::event copied[2];
  split_gmi_result r;
  std::uint64_t have = 0;
  auto adopt = [&](std::uint64_t version) {
    GMI_CUDA_TRY(cudaMemcpyAsync(actor.snapshot().data(), payload.data(), layout::size * sizeof(float),
                                 cudaMemcpyHostToDevice, stream));
    GMI_CUDA_TRY(cudaStreamSynchronize(stream));
    actor.set_version(version);
    have = version;
    ++r.updates;
  };
  adopt(board.wait_newer(payload.data(), 0, stream));  // the initial weights (bounded wait)
  std::string reason = "trainer stop";
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    if (payload[layout::size] != 0.0f) break;
    if (ctx.stop_requested()) {
      reason = "stopped";
      break;
    }
    actor.collect();
    const std::size_t k = r.rollouts % 2;
    GMI_CUDA_TRY(cudaMemcpyAsync(rows[k].data(), actor.records().data() + static_cast<std::size_t>(p.horizon) * n,
                                 n * sizeof(record), cudaMemcpyDeviceToHost, stream));
    copied[k].record(stream);
    rollout_note note{.version = have};
    if (r.rollouts > 0) {  // the previous rollout's row: its copy was queued a whole rollout ago
      copied[k ^ 1].synchronize();
      note.episodes = rollout_note::count(rows[k ^ 1].data(), n);
    }
    producer.send(actor.records().data(), static_cast<std::uint32_t>(p.horizon + 1),
                  static_cast<std::uint32_t>(s.num_envs), note.packed());
    ++r.rollouts;
    ctx.heartbeat();
    if (const auto v = board.read_latest(payload.data(), have, stream)) adopt(*v);
  }
  producer.close();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.steps = static_cast<double>(r.rollouts) * p.horizon * s.num_envs;
  r.reason = reason;
  return r;
}

// The work of every GMI of a split run (runtime::run_gmis).
template <class Env, class Net>
auto split_gmi_work(const split_settings& s, int gmis_per_gpu, const typename Env::params& env_params) {
  return [s, gmis_per_gpu, env_params](runtime::context& ctx, runtime::binding& b) {
    const int servers = gmis_per_gpu - 1;
    runtime::trace(ctx.id(), ctx.slice() == 0 ? "split: trainer" : "split: serving");
    const int gpus = ctx.id().gpus;  // a GMI process's config sees one device: the run's shape is the identity's
    split_gmi_result r = ctx.slice() == 0 ? split_trainer<Env, Net>(ctx, b, s, servers, gpus)
                                          : split_server<Env, Net>(ctx, b, s, servers, env_params);
    r.rank = ctx.rank();
    r.gpu = ctx.gpu();
    r.slice = ctx.slice();
    r.num_envs = s.num_envs;
    r.binding = b.describe();
    ctx.report(nlohmann::json(r).dump());
    runtime::trace(ctx.id(), "split: done: " + r.reason);
  };
}

}  // namespace gmi

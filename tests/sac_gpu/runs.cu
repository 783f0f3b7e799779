#include "sac_gpu/runs.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include <gmi/comm/hierarchical.cuh>
#include <gmi/envs/pendulum.hpp>
#include <gmi/pipeline/offpolicy_split.hpp>
#include <gmi/rl/env_batch.hpp>
#include <gmi/comm/shm_segment.hpp>
#include <gmi/rl/sac.cuh>
#include <gmi/rl/sac_global.hpp>
#include <gmi/rl/sac_sync.hpp>
#include <gmi/runtime/launcher.hpp>
#include <gmi/runtime/supervisor.hpp>

#include "sac/nstep_expect.hpp"

namespace sac_gpu {

namespace {
template <class T>
gmi::cuda::device_buffer<T> up(const std::vector<T>& v) {
  gmi::cuda::device_buffer<T> b(v.size());
  gmi::cuda::copy(b.span(), gmi::host_span<const T>(v.data(), v.size()), nullptr);
  return b;
}
template <class T>
std::vector<T> down(const gmi::cuda::device_buffer<T>& b) {
  std::vector<T> v(b.size());
  gmi::cuda::copy(gmi::host_span<T>(v.data(), v.size()), gmi::device_span<const T>(b.data(), b.size()), nullptr);
  GMI_CUDA_TRY(cudaDeviceSynchronize());
  return v;
}
std::vector<float> uniform(std::size_t n, std::uint64_t stream, float lo, float hi) {
  gmi::rng r(31, stream);
  std::vector<float> v(n);
  for (float& x : v) x = r.uniform(lo, hi);
  return v;
}
// Largest |a - b| / (|a| + |b| + floor) over the elements.
double worst(const std::vector<float>& a, const std::vector<float>& b, double floor) {
  double w = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    w = std::max(w, std::abs(double(a[i]) - double(b[i])) / (std::abs(double(a[i])) + std::abs(double(b[i])) + floor));
  return w;
}
}  // namespace

namespace {
// The batched device gradients (sac_device_gradients) against the host's per-sample ones on one batch.
template <int Hidden>
agreement device_matches_host_with(std::size_t n) {
  using nets = gmi::rl::sac_networks<5, 2, Hidden>;
  constexpr int O = 5, A = 2, X = 7;
  const float alpha = 0.3f, gamma = 0.99f, lo = -5.0f, hi = 2.0f;
  const auto actor = gmi::rl::sac_initial_params<typename nets::actor>(1, 0);
  const auto c1 = gmi::rl::sac_initial_params<typename nets::critic>(1, 1);
  const auto c2 = gmi::rl::sac_initial_params<typename nets::critic>(1, 2);
  const auto obs = uniform(n * O, 1, -1, 1), act = uniform(n * A, 2, -1, 1), nxt = uniform(n * O, 3, -1, 1);
  const auto rew = uniform(n, 4, -2, 0), eps = uniform(n * A, 5, -2, 2), eps_next = uniform(n * A, 6, -2, 2);
  std::vector<float> term(n, 0.0f);
  for (std::size_t i = 0; i < n; i += 5) term[i] = 1.0f;
  std::vector<float> x(n * X);
  for (std::size_t i = 0; i < n; ++i) {
    for (int j = 0; j < O; ++j) x[i * X + j] = obs[i * O + j];
    for (int j = 0; j < A; ++j) x[i * X + O + j] = act[i * A + j];
  }
  // Host.
  gmi::rl::sac_gradients<nets> h;
  std::vector<float> y_h(n), gc_h(nets::critic::param_count), ga_h(nets::actor::param_count);
  h.critic_targets(actor.data(), c1.data(), c2.data(), nxt.data(), rew.data(), term.data(), eps_next.data(), n, alpha,
                   gamma, lo, hi, y_h.data());
  const double critic_loss_h = h.critic_loss(c1.data(), x.data(), y_h.data(), n, gc_h.data());
  const auto ar = h.actor_loss(actor.data(), c1.data(), c2.data(), obs.data(), eps.data(), n, alpha, lo, hi, ga_h.data());
  // Device.
  const auto d_actor = up(actor), d_c1 = up(c1), d_c2 = up(c2), d_obs = up(obs), d_nxt = up(nxt), d_rew = up(rew);
  const auto d_term = up(term), d_eps = up(eps), d_eps_next = up(eps_next), d_x = up(x);
  const auto d_log_alpha = up(std::vector<float>{std::log(alpha)});
  gmi::cuda::device_buffer<float> y(n), gc(nets::critic::param_count), ga(nets::actor::param_count);
  auto sums = up(std::vector<float>(gmi::rl::sac_sum_count, 0.0f));
  gmi::rl::sac_device_gradients<nets> g(gmi::exec::cuda{}, n);
  g.critic_targets(d_actor.data(), d_c1.data(), d_c2.data(), d_nxt.data(), d_rew.data(), d_term.data(),
                   d_eps_next.data(), n, d_log_alpha.data(), gamma, lo, hi, y.data());
  g.critic_gradient(d_c1.data(), d_x.data(), y.data(), n, gc.data(), g.terms());
  g.sum(g.terms(), n, 1.0f / float(n), sums.data() + gmi::rl::sac_sum_critic);
  g.actor_gradient(d_actor.data(), d_c1.data(), d_c2.data(), d_obs.data(), d_eps.data(), n, d_log_alpha.data(), lo,
                   hi, ga.data(), g.terms(), g.terms2());
  g.sum(g.terms(), n, 1.0f / float(n), sums.data() + gmi::rl::sac_sum_actor);
  g.sum(g.terms2(), n, 1.0f / float(n), sums.data() + gmi::rl::sac_sum_log_prob);
  GMI_CUDA_TRY(cudaGetLastError());
  agreement out;
  out.targets = worst(down(y), y_h, 1e-3);
  out.critic_grad = worst(down(gc), gc_h, 1e-3);
  out.actor_grad = worst(down(ga), ga_h, 1e-3);
  const auto s = down(sums);
  out.actor_loss_host = ar.loss;
  out.actor_loss_device = s[gmi::rl::sac_sum_actor];
  out.log_prob_host = ar.log_prob;
  out.log_prob_device = s[gmi::rl::sac_sum_log_prob];
  out.critic_loss_host = critic_loss_h;
  out.critic_loss_device = s[gmi::rl::sac_sum_critic];
  out.path = g.critic_path();
  return out;
}
}  // namespace

agreement device_matches_host(std::size_t n, int hidden) {
  gmi::require(hidden == 32 || hidden == 256, "device_matches_host hidden", hidden, "32 or 256");
  return hidden == 32 ? device_matches_host_with<32>(n) : device_matches_host_with<256>(n);
}

learn_result learn_pendulum(int num_envs, std::size_t env_steps, shard_settings replay) {
  using nets = gmi::rl::sac_networks<3, 1, 64>;
  gmi::rl::sac_config c;
  c.batch = 128;
  c.warmup_steps = 1000;
  c.replay_capacity = 100000;
  c.actor_lr = 1e-3f;
  c.critic_lr = 1e-3f;
  c.alpha_lr = 1e-3f;
  c.replay_shards = replay.shards;
  c.placement_every = replay.every;
  if (replay.mib >= 0) c.replay_device_mib = replay.mib;
  learn_result out;
  {
    gmi::rl::env_batch<gmi::envs::pendulum> e(16, 99);
    std::vector<float> o(16 * 3), a(16), rew(16);
    std::vector<std::uint8_t> te(16), tr(16);
    e.reset({o.data(), o.size()});
    gmi::rng r(5, 5);
    for (int s = 0; s < 200; ++s) {
      for (float& x : a) x = r.uniform(-1.0f, 1.0f);
      e.step({a.data(), 16}, {o.data(), o.size()}, {rew.data(), 16}, {te.data(), 16}, {tr.data(), 16});
      for (float x : rew) out.random_return += x / 16.0;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  gmi::rl::sac_device_trainer<gmi::envs::pendulum, nets> t(c, num_envs, 2024);
  for (std::size_t done = 0; done < env_steps; done += 1000) {
    t.train(done + 1000);
    const auto s = t.last_update();
    char line[256];
    std::snprintf(line, sizeof line, "env_steps %zu updates %llu alpha %.3f critic %.3f actor %.3f eval %.1f (%.1f s)",
                  t.env_steps(), static_cast<unsigned long long>(t.updates()), s.alpha, s.critic_loss, s.actor_loss,
                  t.evaluate(8, 123), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    out.log.emplace_back(line);
  }
  out.final_return = t.evaluate(16, 4242);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.env_steps = t.env_steps();
  out.updates = t.updates();
  if (const auto r = t.replay_shards()) {
    out.shard_envs = r->envs;
    for (const auto m : r->memory) out.shard_memory.emplace_back(gmi::replay::name_of(m));
    out.shard_drawn.assign(r->drawn.begin(), r->drawn.end());
    out.placement_steps = r->placement_steps;
    out.decided_steps = r->decided_steps;
    out.moves = r->moves;
  }
  return out;
}

namespace {
// `gmis` device learners as threads on GPU 0 for `env_steps` each; gradients averaged through the host, or on the
// device through one comm::hierarchical_allreduce per sum buffer (the pipeline's learner_device_sums, built here
// from comm's public API). Each learner's final weights (actor, critic 1, critic 2), rank 0's initial ones.
struct learners_run {
  std::vector<std::vector<float>> weights;
  std::vector<float> initial;
  std::size_t updates = 0;
  std::uint64_t device_sums = 0, host_sums = 0;  // rank 0's
  std::vector<gmi::rl::sac_global_counts> draws;  // with global sampling: each learner's
  std::vector<std::size_t> tables;                // each learner's table at the end
  double final_return = 0;                        // rank 0's deterministic return at the end (with `evaluate`)
};
// What differs from the defaults below: the settings, each learner's capacity, global sampling, an evaluation.
struct learners_setup {
  std::optional<gmi::rl::sac_config> config;
  std::vector<std::size_t> capacity;  // per learner (empty: the config's)
  bool global = false, evaluate = false;
  // Instead of the board: a plan giving learner 0 every draw, seeded as a lone learner of seed 100 seeds its
  // update's draw (seed x 0x9E3779B97F4A7C15 + the update's index), and the others none.
  bool all_to_first = false;
};
learners_run run_learners(int gmis, std::size_t env_steps, bool on_device, const learners_setup& setup = {}) {
  using trainer = gmi::rl::sac_device_trainer<gmi::envs::pendulum, gmi::rl::sac_networks<3, 1, 64>>;
  gmi::rl::sac_config c;
  c.batch = 128;
  c.warmup_steps = 512;
  c.replay_capacity = 20000;
  if (setup.config) c = *setup.config;
  learners_run out;
  out.weights.resize(static_cast<std::size_t>(gmis));
  out.draws.resize(static_cast<std::size_t>(gmis));
  out.tables.resize(static_cast<std::size_t>(gmis));
  static int runs = 0;
  const std::string tag = "sacgpu-" + std::to_string(::getpid()) + "-" + std::to_string(runs++);
  gmi::runtime::thread_group g(gmi::runtime::launch_spec::uniform(1, gmis), [&](gmi::runtime::context& ctx) {
    GMI_CUDA_TRY(cudaSetDevice(0));
    gmi::rl::sac_config mine = c;
    if (!setup.capacity.empty()) mine.replay_capacity = setup.capacity[static_cast<std::size_t>(ctx.rank())];
    trainer t(mine, 8, 100 + static_cast<std::uint64_t>(ctx.rank()));
    std::optional<gmi::rl::sac_global_board> board;
    std::array<std::optional<gmi::comm::hierarchical_allreduce>, 2> reduce;
    gmi::rl::sac_sync s;
    s.rank = ctx.rank();
    s.world = ctx.world();
    s.sum = [&ctx](std::span<float> v) { ctx.allreduce(v, ctx.all()); };
    if (on_device) {
      for (int part = 0; part < 2; ++part) {
        gmi::comm::hierarchical_options o;
        o.tag = tag + "-" + std::to_string(part);
        o.local_rank = ctx.rank();
        o.local_size = ctx.world();
        o.mode = gmi::comm::sharing::in_process;
        o.timeout = std::chrono::seconds(30);
        o.blocking = false;
        const auto b = t.sum_buffer(part);
        reduce[std::size_t(part)].emplace(o, b.data(), b.size());
      }
      s.sum_device = [&reduce](int part, CUstream_st* stream) { reduce[std::size_t(part)]->allreduce(stream); };
      s.wait_device = [&reduce](CUstream_st* stream) {
        for (auto& r : reduce) r->wait(stream);
      };
    }
    if (setup.global) {
      board.emplace(tag + "-global", ctx.rank(), ctx.world(), 11, std::chrono::seconds(30));
      s = board->hook(s);
    }
    std::uint64_t update = 0;
    if (setup.all_to_first) {
      const bool first = ctx.rank() == 0;
      s.share = [&update, first](std::size_t, std::size_t draws) {
        return gmi::rl::sac_share{first ? draws : 0, 100 * 0x9E3779B97F4A7C15ull + update++, first ? 1.0 : 0.0};
      };
    }
    t.set_sync(s);
    const auto r = static_cast<std::size_t>(ctx.rank());
    if (r == 0) out.initial = t.actor_params();
    while (t.env_steps() < env_steps) {
      t.step();
      ctx.heartbeat();
    }
    (void)t.read_stats();  // the bounded wait for the device sums, then the stream
    std::vector<float> w = t.actor_params();
    for (int k = 0; k < 2; ++k) {
      const auto cp = t.critic_params(k);
      w.insert(w.end(), cp.begin(), cp.end());
    }
    out.weights[r] = std::move(w);
    out.draws[r] = t.global_draws();
    out.tables[r] = t.table().size();
    if (r == 0 && setup.evaluate) out.final_return = t.evaluate(16, 4242);
    if (r == 0) {
      out.updates = t.updates();
      out.device_sums = t.device_sums();
      out.host_sums = t.host_sums();
    }
    ctx.barrier(ctx.all());  // no learner frees its buffers while the GPU's leader may still read them
  });
  (void)g.wait_or_throw();
  return out;
}
bool all_equal(const std::vector<std::vector<float>>& w) {
  for (const auto& x : w) {
    if (x.size() != w[0].size() || std::memcmp(x.data(), w[0].data(), x.size() * sizeof(float)) != 0) return false;
  }
  return true;
}
}  // namespace

data_parallel device_learners(int gmis, std::size_t env_steps, bool on_device) {
  const learners_run r = run_learners(gmis, env_steps, on_device);
  data_parallel out;
  out.updates = r.updates;
  out.device_sums = r.device_sums;
  out.host_sums = r.host_sums;
  out.weights_equal = all_equal(r.weights);
  out.weights_moved = !std::equal(r.initial.begin(), r.initial.end(), r.weights[0].begin());
  return out;
}

global_result global_learners(std::size_t env_steps) {
  gmi::rl::sac_config c;  // learn_pendulum's settings
  c.batch = 128;
  c.warmup_steps = 1000;
  c.actor_lr = 1e-3f;
  c.critic_lr = 1e-3f;
  c.alpha_lr = 1e-3f;
  learners_setup setup;
  setup.config = c;
  setup.capacity = {100000, 2000};
  setup.global = true;
  setup.evaluate = true;
  const auto start = std::chrono::steady_clock::now();
  const learners_run r = run_learners(2, env_steps, true, setup);
  global_result out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& d : r.draws) {
    out.drawn.push_back(d.drawn);
    out.expected.push_back(d.expected);
    out.empty.push_back(d.empty_updates);
    out.global_updates.push_back(d.updates);
  }
  out.tables = r.tables;
  out.updates = r.updates;
  out.device_sums = r.device_sums;
  out.weights_equal = all_equal(r.weights);
  out.weights_moved = !std::equal(r.initial.begin(), r.initial.end(), r.weights[0].begin());
  out.final_return = r.final_return;
  return out;
}

lone_match global_against_lone(std::size_t env_steps) {
  gmi::rl::sac_config c;
  c.batch = 128;
  c.warmup_steps = 512;
  c.replay_capacity = 20000;
  c.cuda_graph = false;
  learners_setup setup;
  setup.config = c;
  setup.all_to_first = true;
  const learners_run r = run_learners(2, env_steps, true, setup);
  using trainer = gmi::rl::sac_device_trainer<gmi::envs::pendulum, gmi::rl::sac_networks<3, 1, 64>>;
  gmi::rl::sac_config lone_config = c;
  lone_config.batch = 256;
  GMI_CUDA_TRY(cudaSetDevice(0));
  trainer lone(lone_config, 8, 100);
  lone.train(env_steps);
  std::vector<float> w = lone.actor_params();
  for (int k = 0; k < 2; ++k) {
    const auto cp = lone.critic_params(k);
    w.insert(w.end(), cp.begin(), cp.end());
  }
  lone_match out;
  out.updates = r.updates;
  out.lone_updates = lone.updates();
  out.empty_updates_second = r.draws[1].empty_updates;
  out.device_sums = r.device_sums;
  out.weights_equal = all_equal(r.weights);
  out.weights_moved = !std::equal(r.initial.begin(), r.initial.end(), r.weights[0].begin());
  out.equals_lone = r.weights[0] == w;
  return out;
}

sum_paths device_sum_against_host_sum(int gmis, std::size_t env_steps) {
  const learners_run d = run_learners(gmis, env_steps, true), h = run_learners(gmis, env_steps, false);
  sum_paths out;
  out.updates = d.updates;
  out.device_sums = d.device_sums;
  out.host_sums_of_device_run = d.host_sums;
  out.weights_equal = all_equal(d.weights);
  out.paths_bit_equal = d.weights[0] == h.weights[0];
  double diff = 0, moved = 0;
  const std::size_t na = h.initial.size();
  for (std::size_t i = 0; i < h.weights[0].size(); ++i) {
    const double e = double(d.weights[0][i]) - double(h.weights[0][i]);
    diff += e * e;
    if (i < na) {
      const double m = double(h.weights[0][i]) - double(h.initial[i]);
      moved += m * m;
    }
  }
  // The actor's movement stands for the scale; the critics' differences count too (a stricter bound).
  out.distance = moved > 0 ? std::sqrt(diff / moved) : std::numeric_limits<double>::infinity();
  return out;
}

split_result split_on_gpu(int gmis, std::size_t env_steps) {
  using trainer = gmi::rl::sac_device_trainer<gmi::envs::pendulum, gmi::rl::sac_networks<3, 1, 64>>;
  gmi::rl::sac_config c;
  c.batch = 128;
  c.warmup_steps = 512;
  c.replay_capacity = 20000;
  split_result out;
  {  // One actor's packed rows through the learner's device insert: every row found in the table (a batch of 32,
     // so the table's min-size limiter lets 36 items be sampled; still warming up, so no update draws first).
    GMI_CUDA_TRY(cudaSetDevice(0));
    gmi::rl::sac_config small = c;
    small.batch = 32;
    small.warmup_steps = 64;
    trainer actor(gmi::detail::split_actor_config(small), 3, 7), learner(small, 1, 8);
    std::vector<float> rows;
    for (int t = 0; t < 12; ++t) actor.collect_packed(true, rows);
    learner.insert_packed(1, rows, 3, 12);
    gmi::replay::device_table& table = learner.table();
    gmi::replay::device_batch b;
    table.sample(gmi::replay::sampler::fifo(), 36, 1, 0, b);
    GMI_CUDA_TRY(cudaStreamSynchronize(table.stream()));
    constexpr std::size_t W = trainer::packed_width;
    std::vector<float> cols[5];
    const std::size_t widths[5] = {3, 1, 1, 3, 1};
    for (int k = 0; k < 5; ++k) {
      cols[k].resize(36 * widths[k]);
      GMI_CUDA_TRY(cudaMemcpy(cols[k].data(), b.column<float>(std::size_t(k)), cols[k].size() * 4, cudaMemcpyDeviceToHost));
    }
    for (std::size_t k = 0; k < 36; ++k) {
      const float* r = rows.data() + k * W;
      for (std::size_t i = 0; i < 36; ++i) {
        if (std::memcmp(&cols[0][i * 3], r, 12) == 0 && cols[1][i] == r[3] && cols[2][i] == r[4] &&
            std::memcmp(&cols[3][i * 3], r + 5, 12) == 0 && cols[4][i] == r[8]) {
          ++out.rows_found;
          break;
        }
      }
    }
    out.rows_sent = 36;
    out.learner_table = table.size();
    out.single_insert_updates = learner.updates();
  }
  std::vector<std::size_t> actor_steps(static_cast<std::size_t>(gmis), 0);
  std::vector<float> initial, final_weights;
  gmi::runtime::thread_group g(gmi::runtime::launch_spec::uniform(1, gmis), [&](gmi::runtime::context& ctx) {
    GMI_CUDA_TRY(cudaSetDevice(0));
    const auto r = static_cast<std::size_t>(ctx.rank());
    if (gmi::detail::offpolicy_role_of(ctx.rank(), ctx.world(), true) == gmi::detail::offpolicy_role::learner) {
      trainer eng(c, 8, 100);
      initial = eng.actor_params();
      gmi::detail::split_learner<trainer> l(eng, ctx);
      while (eng.env_steps() < env_steps) l.step();
      l.finish();
      out.learner_env_steps = eng.env_steps();
      out.learner_updates = eng.updates();
      out.learner_table_after = eng.table().size();
      final_weights = eng.actor_params();
    } else {
      trainer eng(gmi::detail::split_actor_config(c), 8, 100 + r);
      gmi::detail::split_actor_run(eng, ctx);
      actor_steps[r] = eng.env_steps();
      out.actor_updates += eng.updates();
    }
  });
  (void)g.wait_or_throw();
  for (std::size_t r = 1; r < actor_steps.size(); ++r) out.actor_env_steps += actor_steps[r];
  out.weights_moved = initial != final_weights;
  return out;
}

graph_result graph_against_launches(std::size_t env_steps, std::size_t timed_updates) {
  using trainer = gmi::rl::sac_device_trainer<gmi::envs::pendulum, gmi::rl::sac_networks<3, 1, 256>>;
  gmi::rl::sac_config c;
  c.batch = 256;
  c.warmup_steps = 512;
  c.replay_capacity = 20000;
  c.cuda_graph = false;  // launched kernel by kernel (the default replays the graph)
  gmi::rl::sac_config g = c;
  g.cuda_graph = true;
  GMI_CUDA_TRY(cudaSetDevice(0));
  trainer a(c, 8, 77), b(g, 8, 77), a2(c, 8, 77);
  const auto initial = a.critic_params(0);
  a.train(env_steps);
  b.train(env_steps);
  a2.train(env_steps);
  graph_result out;
  out.updates = a.updates();
  out.updates_graph = b.updates();
  out.graph_updates = b.graph_updates();
  out.graph_updates_of_launched = a.graph_updates();
  out.actor_equal = a.actor_params() == b.actor_params();
  out.critics_equal = a.critic_params(0) == b.critic_params(0) && a.critic_params(1) == b.critic_params(1);
  out.weights_moved = a.critic_params(0) != initial;
  out.launched_repeat_equal = a.actor_params() == a2.actor_params() && a.critic_params(0) == a2.critic_params(0) &&
                              a.critic_params(1) == a2.critic_params(1);
  const auto sa = a.last_update(), sb = b.last_update();
  out.stats_equal = sa.critic_loss == sb.critic_loss && sa.actor_loss == sb.actor_loss && sa.alpha == sb.alpha &&
                    sa.log_prob == sb.log_prob;
  const auto rate = [&](trainer& t) {
    (void)t.last_update();  // the stream idle before the clock starts
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < timed_updates; ++i) t.update();
    (void)t.last_update();
    return double(timed_updates) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  out.updates_per_s_launched = rate(a);
  out.updates_per_s_graph = rate(b);
  return out;
}

nstep_result device_nstep_against_one_step() {
  constexpr int N = 3;
  constexpr std::size_t envs = 2, steps = 7;
  gmi::rl::sac_config c;
  c.batch = 4;
  c.warmup_steps = 64;  // no update: only collection
  c.replay_capacity = 64;
  c.gamma = 0.9f;
  gmi::envs::pendulum::params p;
  p.max_steps = 4;
  using trainer = gmi::rl::sac_device_trainer<gmi::envs::pendulum, gmi::rl::sac_networks<3, 1, 32>>;
  trainer one(c, int(envs), 5, p);
  c.n_step = N;
  trainer three(c, int(envs), 5, p);
  one.train(steps * envs);
  three.train(steps * envs);
  const auto r = sac_test::compare_nstep(one.table().take_snapshot(), three.table().take_snapshot(), N, envs, steps,
                                        4, c.gamma, 3, 1);
  nstep_result out;
  out.inserted_one = one.table().size();
  out.inserted_three = three.table().size();
  out.env_steps_three = three.env_steps();
  out.compared = r.compared;
  out.cut = r.cut;
  out.worst = r.worst;
  return out;
}

}  // namespace sac_gpu

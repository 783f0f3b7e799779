#pragma once
// CPU actors: a host_sim's environments stepped on pinned host cores, in `groups` equal groups (2: double
// buffering). As a gmi::batch_env (host memory) every step steps all of them; run(policy, steps) is the
// overlapped loop: while the cores step one group, the policy (GPU inference) works on the other group's
// observations. The only synchronisation per step is the hand-off: a group's observations are ready (the last
// actor thread to finish its slice raises a counter) and its actions are ready (the policy raises a counter,
// from a CUDA host callback: cudaLaunchHostFunc(stream, &handoff::signal_callback, &ready)). In run(), a thread that
// has stepped its own slice of a group steps what is left of the other slices of its NUMA node (one environment at
// a time, from a counter per slice): a group is done when its slowest env is, not its slowest thread's slice.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gmi/actors/actor_threads.hpp>
#include <gmi/actors/host_sim.hpp>
#include <gmi/actors/staging.hpp>
#include <gmi/concepts/env.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/span.hpp>

namespace gmi::actors {

struct actor_config {
  std::vector<int> cores;  // the cores to step on, one thread each (choose_cores(n) picks n NUMA-aware)
  int groups = 2;          // env groups that alternate; 2 overlaps stepping with inference, 1 does not
  std::chrono::milliseconds handoff_timeout{60000};  // the longest a hand-off may take before the run fails
  // In run(): a thread done with its own slice of a group steps the rest of other slices on its NUMA node, so one
  // slow core (or slice of slow environments) does not hold the group's hand-off; false: each slice on its owner only.
  bool steal = true;
};

// What the policy gets for one group at one step k of run(): observations after k steps (k = 0: those the
// run starts from), and, for k >= 1, the rewards, flags and final observations of step k. All are staging
// (pinned) host memory that stays valid until the policy signals this group's next hand-off. When needs_actions,
// the policy writes the group's actions and then calls ready.signal() once; otherwise (the run's last
// observations, for bootstrapping) it must not signal.
struct group_batch {
  int group = 0;
  int step = 0;
  bool needs_actions = true;
  std::size_t first_env = 0;  // the group's first environment index in the sim
  std::size_t num_envs = 0;
  host_span<const float> obs, rewards, final_obs;
  host_span<const std::uint8_t> terminated, truncated;
  host_span<float> actions;
};

template <class P>
concept actor_policy = requires(P& p, const group_batch& b, handoff& ready) { p.submit(b, ready); };

// What happened in which order, for tests and traces: each record takes the next slot of one atomic counter.
enum class event_kind : std::uint8_t { obs_ready, submit, actions_ready, step_begin, step_end };
struct event {
  event_kind kind;
  int group;
  int step;
};
class event_log {
 public:
  explicit event_log(std::size_t capacity) : slots_(capacity) {}
  void record(event_kind k, int group, int step) noexcept {
    const std::size_t at = next_.fetch_add(1, std::memory_order_acq_rel);
    if (at >= slots_.size()) return;
    slots_[at].e = {k, group, step};
    slots_[at].written.store(true, std::memory_order_release);
  }
  // Slot of the first record of (k, group, step), or -1; safe while the run goes on (sees finished records).
  [[nodiscard]] long find(event_kind k, int group, int step) const noexcept {
    const std::size_t n = std::min(next_.load(std::memory_order_acquire), slots_.size());
    for (std::size_t i = 0; i < n; ++i) {
      if (!slots_[i].written.load(std::memory_order_acquire)) continue;
      const event& e = slots_[i].e;
      if (e.kind == k && e.group == group && e.step == step) return long(i);
    }
    return -1;
  }
  // The records in order (call after the run).
  [[nodiscard]] std::vector<event> events() const {
    std::vector<event> out;
    const std::size_t n = std::min(next_.load(), slots_.size());
    for (std::size_t i = 0; i < n; ++i) out.push_back(slots_[i].e);
    return out;
  }
  [[nodiscard]] bool overflowed() const noexcept { return next_.load() > slots_.size(); }

 private:
  struct slot {
    std::atomic<bool> written{false};
    event e{};
  };
  std::vector<slot> slots_;
  std::atomic<std::size_t> next_{0};
};

namespace detail {
template <class S>
struct fixed_dims {};
template <fixed_size_sim S>
struct fixed_dims<S> {
  using batch_env_concept = gmi::batch_env_tag;  // with fixed sizes, cpu_actors is a gmi::batch_env
  static constexpr int obs_dim = S::obs_size, act_dim = S::act_size;
};
}  // namespace detail

template <host_sim S>
class cpu_actors : public detail::fixed_dims<S> {
 public:
  using sim_type = S;
  using memory_space = gmi::host_memory;
  template <class T>
  using span = host_span<T>;

  // Builds the sim in place from sim_args, starts one pinned thread per core and lets each thread place
  // (first-touch) the environments it owns. Refuses groups < 1 and env counts the groups do not divide.
  template <class... Args>
  explicit cpu_actors(actor_config config, Args&&... sim_args)
      : config_(std::move(config)), sim_(std::forward<Args>(sim_args)...), threads_(config_.cores) {
    const std::size_t n = sim_.num_envs();
    require(config_.groups >= 1, "actor groups", config_.groups, ">= 1");
    require(n % std::size_t(config_.groups) == 0 && n / std::size_t(config_.groups) >= std::size_t(threads_.size()),
            "num_envs", n,
            "a multiple of groups (" + std::to_string(config_.groups) + ") with >= one env per actor thread (" +
                std::to_string(threads_.size()) + ") in each group");
    per_group_ = n / std::size_t(config_.groups);
    od_ = std::size_t(sim_.obs_dim());
    ad_ = std::size_t(sim_.act_dim());
    obs_ = staging_buffer<float>(n * od_);
    final_obs_ = staging_buffer<float>(n * od_);
    actions_ = staging_buffer<float>(n * ad_);
    rewards_ = staging_buffer<float>(n);
    terminated_ = staging_buffer<std::uint8_t>(n);
    truncated_ = staging_buffer<std::uint8_t>(n);
    groups_ = std::vector<group_state>(std::size_t(config_.groups));
    busy_ = std::vector<busy_slot>(std::size_t(threads_.size()));
    taken_ = std::vector<cursor>(std::size_t(config_.groups) * std::size_t(threads_.size()));
    stolen_ = std::vector<cursor>(std::size_t(threads_.size()));
    // Each thread's victims: the other threads on its NUMA node, the next ones first (thieves spread out).
    const int T = threads_.size();
    std::vector<int> node(static_cast<std::size_t>(T));
    for (int t = 0; t < T; ++t) node[std::size_t(t)] = numa_node_of(threads_.cores()[std::size_t(t)]);
    victims_.resize(std::size_t(T));
    for (int t = 0; t < T; ++t) {
      for (int d = 1; d < T; ++d) {
        const int v = (t + d) % T;
        if (node[std::size_t(v)] == node[std::size_t(t)]) victims_[std::size_t(t)].push_back(v);
      }
    }
    if constexpr (host_sim_with_prepare<S>) {
      threads_.run([&](int t) {
        for (int g = 0; g < config_.groups; ++g) {
          const slice s = owned(g, t);
          sim_.prepare(s.first, s.last);
        }
      });
    }
  }

  [[nodiscard]] int num_envs() const noexcept { return int(sim_.num_envs()); }
  [[nodiscard]] int groups() const noexcept { return config_.groups; }
  [[nodiscard]] std::size_t envs_per_group() const noexcept { return per_group_; }
  [[nodiscard]] int threads() const noexcept { return threads_.size(); }
  [[nodiscard]] const std::vector<int>& cores() const noexcept { return threads_.cores(); }
  [[nodiscard]] bool staging_pinned() const noexcept { return obs_.pinned(); }
  [[nodiscard]] S& sim() noexcept { return sim_; }
  [[nodiscard]] bool steal() const noexcept { return config_.steal; }
  // Stealing on or off for the next runs (call between runs; the results are the same either way).
  void set_steal(bool on) noexcept { config_.steal = on; }
  // Environment steps that run() made on a thread other than the env's owner, since construction.
  [[nodiscard]] std::uint64_t stolen_steps() const noexcept {
    std::uint64_t n = 0;
    for (const cursor& c : stolen_) n += c.n.load(std::memory_order_relaxed);
    return n;
  }

  // --- gmi::batch_env (host memory): all environments at once, each on the thread that owns it. ---
  // start: where the episode-step counters begin (rl::episode_start; random_step needs a sim_with_random_start).
  void reset(span<float> obs, CUstream_st* = nullptr, rl::episode_start start = rl::episode_start::first_step) {
    check("obs", obs.size(), sim_.num_envs() * od_);
    if constexpr (!sim_with_random_start<S>) {
      require(start == rl::episode_start::first_step, "episode start on CPU actors", "random_step",
              "first_step (this sim has no reset_one(i, obs, episode_start); set random_episode_start false)");
    }
    threads_.run([&](int t) {
      for (int g = 0; g < config_.groups; ++g) {
        const slice s = owned(g, t);
        for (std::size_t i = s.first; i < s.last; ++i) {
          if constexpr (sim_with_random_start<S>) {
            sim_.reset_one(i, obs.data() + i * od_, start);
          } else {
            sim_.reset_one(i, obs.data() + i * od_);
          }
        }
      }
    });
  }
  void step(span<const float> actions, span<float> obs, span<float> rewards, span<std::uint8_t> terminated,
            span<std::uint8_t> truncated, CUstream_st* = nullptr, span<float> final_obs = {}) {
    const std::size_t n = sim_.num_envs();
    check("actions", actions.size(), n * ad_);
    check("obs", obs.size(), n * od_);
    check("rewards", rewards.size(), n);
    check("terminated", terminated.size(), n);
    check("truncated", truncated.size(), n);
    if (!final_obs.empty()) check("final_obs", final_obs.size(), n * od_);
    threads_.run([&](int t) {
      const auto began = std::chrono::steady_clock::now();
      for (int g = 0; g < config_.groups; ++g) {
        const slice s = owned(g, t);
        step_range(s, actions.data(), obs.data(), rewards.data(), terminated.data(), truncated.data(),
                   final_obs.empty() ? nullptr : final_obs.data());
      }
      busy_[std::size_t(t)].add(std::chrono::steady_clock::now() - began);
    });
  }

  // --- The overlapped loop. ---
  // Starts new episodes everywhere (step counters as `start` says); the next run() starts from these observations.
  void start(rl::episode_start start = rl::episode_start::first_step) {
    reset(obs_.span(0, obs_.size()), nullptr, start);
    started_ = true;
  }

  // `steps` steps of every group, alternating groups: policy.submit is called (on this thread) for each group
  // with its observations after 0..steps steps; the cores step a group once its actions are handed back.
  // Consecutive runs continue the same episodes. Throws gmi::error when a hand-off takes longer than
  // config.handoff_timeout, and rethrows what an actor thread or the policy threw.
  template <actor_policy P>
  void run(P& policy, int steps, event_log* log = nullptr) {
    require(steps >= 1, "cpu_actors::run steps", steps, ">= 1");
    if (!started_) start();
    const int G = config_.groups, T = threads_.size();
    for (auto& g : groups_) {
      g.obs_base = g.obs_ready.count();
      g.act_base = g.act_ready.count();
      g.arrive_base = g.arrived.load();
    }
    for (cursor& c : taken_) c.n.store(0, std::memory_order_relaxed);
    const bool steal = config_.steal;
    threads_.launch([&, G, T, steps, steal](int t) {
      for (int k = 0; k < steps; ++k) {
        for (int g = 0; g < G; ++g) {
          group_state& gs = groups_[std::size_t(g)];
          wait(gs.act_ready, gs.act_base + std::uint64_t(k) + 1, "actions", g, k);
          if (threads_.stop_flag().load()) return;
          if (log && t == 0) {
            log->record(event_kind::actions_ready, g, k);
            log->record(event_kind::step_begin, g, k);
          }
          const auto began = std::chrono::steady_clock::now();
          take(g, t);
          if (steal) {
            std::uint64_t others = 0;
            for (int v : victims_[std::size_t(t)]) others += take(g, v);
            if (others) stolen_[std::size_t(t)].n.fetch_add(others, std::memory_order_relaxed);
          }
          busy_[std::size_t(t)].add(std::chrono::steady_clock::now() - began);
          const std::uint64_t arrived = gs.arrived.fetch_add(1, std::memory_order_acq_rel) + 1;
          if (arrived == gs.arrive_base + std::uint64_t(k + 1) * std::uint64_t(T)) {
            // Every thread is past group g's step k and none can start its step k + 1 before the signal below:
            // the group's slice counters start again from 0 for it.
            for (int v = 0; v < T; ++v) taken_[std::size_t(g * T + v)].n.store(0, std::memory_order_relaxed);
            if (log) log->record(event_kind::step_end, g, k);
            gs.obs_ready.signal();
          }
        }
      }
    });
    try {
      for (int k = 0; k <= steps; ++k) {
        for (int g = 0; g < G; ++g) {
          group_state& gs = groups_[std::size_t(g)];
          if (k > 0) wait(gs.obs_ready, gs.obs_base + std::uint64_t(k), "observations", g, k);
          if (threads_.stop_flag().load()) break;
          if (log) log->record(event_kind::obs_ready, g, k);
          const std::size_t first = std::size_t(g) * per_group_;
          group_batch b;
          b.group = g;
          b.step = k;
          b.needs_actions = k < steps;
          b.first_env = first;
          b.num_envs = per_group_;
          b.obs = {obs_.data() + first * od_, per_group_ * od_};
          b.final_obs = {final_obs_.data() + first * od_, per_group_ * od_};
          b.rewards = {rewards_.data() + first, per_group_};
          b.terminated = {terminated_.data() + first, per_group_};
          b.truncated = {truncated_.data() + first, per_group_};
          b.actions = {actions_.data() + first * ad_, per_group_ * ad_};
          if (log) log->record(event_kind::submit, g, k);
          policy.submit(b, gs.act_ready);
        }
      }
    } catch (...) {
      threads_.stop();
      try {
        threads_.join();
      } catch (...) {
      }
      throw;
    }
    threads_.join();
    if (threads_.stop_flag().load()) {
      throw gmi::error(got_need("cpu_actors::run", "stopped before its last step", "every hand-off in time"));
    }
  }

  // Seconds the actor threads have spent stepping environments since construction, summed over the threads (not
  // waiting for hand-offs). Over a run of `wall` seconds, busy_seconds() / (threads() * wall) is the fraction of
  // the cores' stepping rate the loop used (1: the cores never waited for the policy).
  [[nodiscard]] double busy_seconds() const noexcept {
    std::int64_t ns = 0;
    for (const busy_slot& b : busy_) ns += b.ns.load(std::memory_order_relaxed);
    return double(ns) * 1e-9;
  }

  // Episodes finished since the previous read (call between runs).
  rl::episode_stats read_stats() { return sim_.read_stats(); }

  // The observations the next run() starts from (num_envs x obs_dim; call between runs).
  [[nodiscard]] host_span<const float> observations() const noexcept { return {obs_.data(), obs_.size()}; }
  // Sets them (a checkpoint's, with the sim's state restored beside them): the next run continues from these.
  void restore_observations(host_span<const float> obs) {
    check("restored obs", obs.size(), obs_.size());
    std::copy(obs.begin(), obs.end(), obs_.data());
    started_ = true;
  }

 private:
  struct group_state {
    handoff obs_ready, act_ready;
    std::atomic<std::uint64_t> arrived{0};
    std::uint64_t obs_base = 0, act_base = 0, arrive_base = 0;
  };

  // A counter on a cache line of its own: environments of one slice of one group taken in the current step (threads
  // fetch_add it for the next one), or one thread's stolen env steps.
  struct alignas(64) cursor {
    std::atomic<std::uint64_t> n{0};
  };

  // One thread's stepping time, on a cache line of its own (threads do not share lines when they add).
  struct alignas(64) busy_slot {
    std::atomic<std::int64_t> ns{0};
    void add(std::chrono::steady_clock::duration d) noexcept {
      ns.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(), std::memory_order_relaxed);
    }
  };

  // Thread t's environments of group g.
  [[nodiscard]] slice owned(int g, int t) const noexcept {
    const slice s = slice_of(per_group_, threads_.size(), t);
    const std::size_t base = std::size_t(g) * per_group_;
    return {base + s.first, base + s.last};
  }

  // The calling thread steps environments of thread v's slice of group g, one at a time, until the slice's counter
  // says all are taken (by it, by v or by another thief); returns how many it stepped.
  std::uint64_t take(int g, int v) {
    const slice s = owned(g, v);
    std::atomic<std::uint64_t>& next = taken_[std::size_t(g * threads_.size() + v)].n;
    const std::uint64_t size = s.last - s.first;
    std::uint64_t mine = 0;
    for (std::uint64_t j = next.fetch_add(1, std::memory_order_relaxed); j < size;
         j = next.fetch_add(1, std::memory_order_relaxed), ++mine) {
      const std::size_t i = s.first + std::size_t(j);
      step_range({i, i + 1}, actions_.data(), obs_.data(), rewards_.data(), terminated_.data(), truncated_.data(),
                 final_obs_.data());
    }
    return mine;
  }

  void step_range(slice s, const float* actions, float* obs, float* rewards, std::uint8_t* terminated,
                  std::uint8_t* truncated, float* final_obs) {
    for (std::size_t i = s.first; i < s.last; ++i) {
      const rl::step_result r =
          sim_.step_one(i, actions + i * ad_, obs + i * od_, final_obs ? final_obs + i * od_ : nullptr);
      rewards[i] = r.reward;
      terminated[i] = r.terminated ? 1 : 0;
      truncated[i] = r.truncated ? 1 : 0;
    }
  }

  void wait(const handoff& h, std::uint64_t target, const char* what, int g, int k) {
    const auto deadline = std::chrono::steady_clock::now() + config_.handoff_timeout;
    if (h.wait_until(target, deadline, threads_.stop_flag())) return;
    if (threads_.stop_flag().load()) return;  // another side failed; the run reports it
    threads_.stop();
    throw gmi::error(got_need(std::string("cpu_actors: hand-off of group ") + std::to_string(g) + "'s " + what +
                                  " at step " + std::to_string(k),
                              "none after " + std::to_string(config_.handoff_timeout.count()) + " ms",
                              "the policy to signal every hand-off it is given"));
  }

  static void check(const char* what, std::size_t got, std::size_t need) {
    if (got != need) {
      throw config_error(got_need(std::string("cpu_actors: ") + what + " element count", got, "== " + std::to_string(need)));
    }
  }

  actor_config config_;
  S sim_;
  actor_threads threads_;
  std::size_t per_group_ = 0, od_ = 0, ad_ = 0;
  staging_buffer<float> obs_, final_obs_, actions_, rewards_;
  staging_buffer<std::uint8_t> terminated_, truncated_;
  std::vector<group_state> groups_;
  std::vector<busy_slot> busy_;
  std::vector<cursor> taken_;                // [group * threads + slice]
  std::vector<cursor> stolen_;               // [thread]
  std::vector<std::vector<int>> victims_;    // [thread]: the threads whose slices it may take from
  bool started_ = false;
};

}  // namespace gmi::actors

#pragma once
// gmi::actors::host_sim: environments a host thread steps one at a time (index i, its action in, its next
// observation out). The CPU actors batch any host_sim over pinned cores; env_sim<E> makes one of any gmi::env
// (its host code, through the same per-environment entry points as rl::env_batch, so a run on actors gives the
// same numbers as a serial rl::env_batch run with the same seed), and mujoco.hpp makes one of an MJCF task.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include <gmi/concepts/env.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/exec/policy.hpp>
#include <gmi/io/checkpoint.hpp>
#include <gmi/rl/env_batch.hpp>

namespace gmi::actors {

struct host_sim_tag {};

// A host_sim: using host_sim_concept = gmi::actors::host_sim_tag;
//   std::size_t num_envs() const; int obs_dim() const; int act_dim() const;
//   void reset_one(std::size_t i, float* obs);                                   // new episode, first obs
//   rl::step_result step_one(std::size_t i, const float* action, float* obs, float* final_obs);  // auto-resets
//   rl::episode_stats read_stats();                                             // episodes since last read
// Calls for different i may run at once on different threads; calls for one i never do.
// Optional: void prepare(std::size_t first, std::size_t last), called once on the thread that will own
// environments [first, last) before any of them is used, so their memory is first touched (placed) there.
// Optional: static constexpr int obs_size, act_size (fixed sizes): then cpu_batch models gmi::batch_env.
template <class S>
concept host_sim = requires(S& s, const S& cs, std::size_t i, const float* a, float* o) {
  typename S::host_sim_concept;
  requires std::same_as<typename S::host_sim_concept, host_sim_tag>;
  { cs.num_envs() } -> std::convertible_to<std::size_t>;
  { cs.obs_dim() } -> std::convertible_to<int>;
  { cs.act_dim() } -> std::convertible_to<int>;
  s.reset_one(i, o);
  { s.step_one(i, a, o, o) } -> std::same_as<rl::step_result>;
  { s.read_stats() } -> std::same_as<rl::episode_stats>;
};

// Optional: void reset_one(std::size_t i, float* obs, rl::episode_start start), a new episode whose step counter
// starts at a draw in [0, max_steps) for episode_start::random_step (ppo_config::random_episode_start), as
// rl::env_batch_view::reset_one: same initial state, a shortened first episode left out of the statistics.
template <class S>
concept sim_with_random_start = host_sim<S> && requires(S& s, std::size_t i, float* o) {
  s.reset_one(i, o, rl::episode_start::random_step);
};

template <class S>
concept host_sim_with_prepare = host_sim<S> && requires(S& s, std::size_t i) { s.prepare(i, i); };

// Optional: template <class F> void visit_state(F f), f(name, span) for each array of the environments' state, so
// checkpoints hold it and a resumed run continues the same episodes.
template <class S>
concept sim_with_state = host_sim<S> && requires(S& s) {
  s.visit_state([](const char*, auto) {});
};

// Optional, for state that is not a set of contiguous arrays (one mjData per environment): save_state(ck, prefix)
// adds the environments' state as tensors named prefix + ..., load_state(ck, prefix) checks and restores them
// (a checkpoint file is untrusted input: sizes and versions refused in one line).
template <class S>
concept sim_with_checkpoint = host_sim<S> && requires(S& s, io::checkpoint& ck, const io::checkpoint& cck,
                                                      const std::string& prefix) {
  s.save_state(ck, prefix);
  s.load_state(cck, prefix);
};

template <class S>
concept fixed_size_sim = host_sim<S> && requires {
  { S::obs_size } -> std::convertible_to<int>;
  { S::act_size } -> std::convertible_to<int>;
};

// Any gmi::env as a host_sim: environment i draws from gmi::rng(seed, i, ...) exactly as in rl::env_batch.
template <gmi::env E>
class env_sim {
 public:
  using host_sim_concept = host_sim_tag;
  using env_type = E;
  static constexpr int obs_size = E::obs_dim, act_size = E::act_dim;

  env_sim(int num_envs, std::uint64_t seed, typename E::params params = {})
      : batch_(num_envs, seed, params, exec::host{}), view_(batch_.view()) {}
  env_sim(const env_sim&) = delete;
  env_sim& operator=(const env_sim&) = delete;

  [[nodiscard]] std::size_t num_envs() const noexcept { return std::size_t(batch_.num_envs()); }
  [[nodiscard]] int obs_dim() const noexcept { return E::obs_dim; }
  [[nodiscard]] int act_dim() const noexcept { return E::act_dim; }
  void reset_one(std::size_t i, float* obs, rl::episode_start start = rl::episode_start::first_step) {
    view_.reset_one(i, obs, start);
  }
  rl::step_result step_one(std::size_t i, const float* action, float* obs, float* final_obs) {
    return view_.step_one(i, action, obs, final_obs);
  }
  rl::episode_stats read_stats() { return batch_.read_stats(); }
  // Every environment's state, RNG counter, length and return so far as named arrays (checkpoints).
  template <class F>
  void visit_state(F&& f) {
    batch_.visit_state(std::forward<F>(f));
  }

 private:
  rl::env_batch<E, exec::host> batch_;
  rl::env_batch_view<E> view_;
};

// A gmi::env with a host sim's sizes, for typing the trainer of a sim that is not a gmi::env (a MuJoCo task): the
// trainer builds an env batch of it that nothing steps (the actors' sim is the environment).
template <fixed_size_sim S>
struct sim_shape {
  using env_concept = gmi::env_tag;
  static constexpr int obs_dim = S::obs_size, act_dim = S::act_size;
  static constexpr const char* name = "host_sim";
  struct params {
    int max_steps = 1;
  };
  struct state {
    float unused;
  };
  GMI_HD static void reset(state& s, gmi::rng&, const params&) { s.unused = 0; }
  GMI_HD static gmi::transition step(state&, const float*, gmi::rng&, const params&) { return {0.0f, true}; }
  GMI_HD static void observe(const state&, float* obs, const params&) {
    for (int k = 0; k < obs_dim; ++k) obs[k] = 0;
  }
};

namespace detail {
// The env a PPO trainer on the actors is typed on: E for env_sim<E>, sim_shape<S> otherwise.
template <class S>
struct trainer_env {
  using type = sim_shape<S>;
};
template <gmi::env E>
struct trainer_env<env_sim<E>> {
  using type = E;
};
}  // namespace detail

// Environments [first, last) of n that thread t of `threads` owns: contiguous slices as equal as possible.
struct slice {
  std::size_t first, last;
};
[[nodiscard]] inline slice slice_of(std::size_t n, int threads, int t) {
  const std::size_t per = n / std::size_t(threads), extra = n % std::size_t(threads), ut = std::size_t(t);
  const std::size_t first = ut * per + (ut < extra ? ut : extra);
  return {first, first + per + (ut < extra ? 1 : 0)};
}

}  // namespace gmi::actors

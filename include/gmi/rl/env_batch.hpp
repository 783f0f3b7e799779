#pragma once
// The batched environment driver: turns any gmi::env into a gmi::batch_env of N environments stepped on host
// threads (exec::host) or in CUDA kernels (exec::cuda, include <gmi/rl/env_batch.cuh> and compile with nvcc).
// Auto-reset, time limits reported apart from termination, per-environment RNG streams from one seed, episode
// statistics kept beside the states and read without a stream-wide synchronisation.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <unistd.h>

#include <gmi/concepts/env.hpp>
#include <gmi/core/error.hpp>
#include <gmi/core/hd.hpp>
#include <gmi/core/rng.hpp>
#include <gmi/core/span.hpp>
#include <gmi/cuda/buffer.hpp>
#include <gmi/cuda/event.hpp>
#include <gmi/exec/host.hpp>
#include <gmi/exec/policy.hpp>

namespace gmi::rl {

// Episodes finished since the previous read (every environment together).
struct episode_stats {
  std::uint64_t episodes = 0;
  double return_sum = 0;
  double length_sum = 0;
  std::uint64_t invalid_actions = 0;  // steps whose action had a NaN or infinite component (see step_one)

  [[nodiscard]] double mean_return() const { return episodes ? return_sum / double(episodes) : 0.0; }
  [[nodiscard]] double mean_length() const { return episodes ? length_sum / double(episodes) : 0.0; }
};

// Where reset() starts each environment's episode-step counter. random_step: at a uniform draw in
// [0, params.max_steps) from the environment's own stream (as Isaac Lab's episode length buffer), so the time limits
// of N environments fall at different iterations and a rollout window sees every phase of an episode, not the same
// one in all N. That first, shortened episode ends by truncation (a time limit: bootstrapped) and is left out of
// the return statistics, whose mean would otherwise mix partial episodes into it.
enum class episode_start { first_step, random_step };

// What step_one reports for one environment.
struct step_result {
  float reward;
  bool terminated;  // terminal state (or an invalid action): do not bootstrap
  bool truncated;   // the time limit params.max_steps was reached first: bootstrap from the value
};

namespace detail {
template <class E>
constexpr bool has_table = requires(typename E::params& p, const float* t) {
  { E::make_table(p) } -> std::same_as<std::vector<float>>;
  E::bind_table(p, t);
};

GMI_HD inline bool is_finite(float v) {
  // Exponent all ones is NaN or infinity; checked on the bits so fast-math flags can not fold it away.
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return (bits & 0x7f800000u) != 0x7f800000u;
}
}  // namespace detail

// A view of N environments' storage: trivially copyable, passed by value to kernels. step_one/reset_one are
// the per-environment entry points; a fused rollout kernel (policy forward + sampling + env step) calls them
// from its own threads, one environment per call, and must not call two of them for the same i at once.
//
// Layout: states are stored word-major (word k of environment i at state_words[k * num_envs + i]), so a warp
// stepping consecutive environments reads and writes each state word coalesced. Per-environment counters are
// separate arrays for the same reason.
template <gmi::env E>
struct env_batch_view {
  using env_type = E;
  using state = typename E::state;
  static constexpr int obs_dim = E::obs_dim, act_dim = E::act_dim;
  static constexpr std::size_t state_words = (sizeof(state) + 3) / 4;

  std::uint32_t* state_words_ptr;
  std::uint64_t* rng_blocks;     // Philox block counter of environment i's stream
  std::int32_t* lengths;         // steps taken in the current episode (| uncounted_bit: left out of the statistics)
  float* returns;                // undiscounted return of the current episode
  std::uint32_t* done_episodes;  // statistics since the last read ...
  double* done_return_sum;
  double* done_length_sum;
  std::uint32_t* invalid_actions;
  typename E::params params;
  std::uint64_t seed;
  std::size_t num_envs;

  // Set in lengths[i] while environment i is in an episode that began at a drawn step (episode_start::random_step).
  static constexpr std::int32_t uncounted_bit = std::int32_t(1) << 30;

  GMI_HD state load(std::size_t i) const {
    state s;
    for (std::size_t k = 0; k < state_words; ++k) {
      const std::uint32_t w = state_words_ptr[k * num_envs + i];
      const std::size_t bytes = (k + 1) * 4 <= sizeof(state) ? 4 : sizeof(state) - k * 4;
      std::memcpy(reinterpret_cast<unsigned char*>(&s) + k * 4, &w, bytes);
    }
    return s;
  }
  GMI_HD void store(std::size_t i, const state& s) const {
    for (std::size_t k = 0; k < state_words; ++k) {
      std::uint32_t w = 0;
      const std::size_t bytes = (k + 1) * 4 <= sizeof(state) ? 4 : sizeof(state) - k * 4;
      std::memcpy(&w, reinterpret_cast<const unsigned char*>(&s) + k * 4, bytes);
      state_words_ptr[k * num_envs + i] = w;
    }
  }

  // Starts a new episode in environment i and writes its first observation to obs (obs_dim floats). With
  // episode_start::random_step the step counter then starts at a draw in [0, max_steps) taken after E::reset, so the
  // initial state is the same as first_step's.
  GMI_HD void reset_one(std::size_t i, float* obs, episode_start start = episode_start::first_step) const {
    gmi::rng r(seed, i, rng_blocks[i]);
    state s;
    E::reset(s, r, params);
    E::observe(s, obs, params);
    store(i, s);
    std::int32_t length = 0;
    if (start == episode_start::random_step) {
      // Multiply-shift maps 32 random bits onto [0, max_steps) the same way on host and device.
      const std::uint64_t m = static_cast<std::uint64_t>(params.max_steps);
      length = static_cast<std::int32_t>((static_cast<std::uint64_t>(r.next_u32()) * m) >> 32) | uncounted_bit;
    }
    rng_blocks[i] = r.block();
    lengths[i] = length;
    returns[i] = 0.0f;
  }

  // Steps environment i with action (act_dim floats) and writes the observation the policy acts on next to obs:
  // after a terminated or truncated step that is the first observation of the next episode (auto-reset), and
  // final_obs (if not null) receives the last observation of the finished episode.
  // An action with a NaN or infinite component is not applied: the environment is reset, the step reports
  // reward 0 and terminated, the episode is left out of the return statistics, and invalid_actions counts it.
  GMI_HD step_result step_one(std::size_t i, const float* action, float* obs, float* final_obs = nullptr) const {
    gmi::rng r(seed, i, rng_blocks[i]);
    state s = load(i);
    bool valid = true;
    for (int k = 0; k < act_dim; ++k) valid = valid && detail::is_finite(action[k]);
    gmi::transition tr{0.0f, true};
    if (valid) tr = E::step(s, action, r, params);
    return finish_one(i, s, r, valid, tr, obs, final_obs);
  }

  // The bookkeeping after environment i's dynamics moved s (state) to its next state with transition tr, or did
  // not run (valid false: the action was invalid): episode statistics, auto-reset, the observation and the
  // stored state, as step_one; r: environment i's stream, as step_one made it. For steppers that run the
  // dynamics of all environments at once (rl/batched_dynamics.cuh).
  GMI_HD step_result finish_one(std::size_t i, state& s, gmi::rng& r, bool valid, const gmi::transition& tr, float* obs,
                                float* final_obs) const {
    const std::int32_t raw = lengths[i];
    std::int32_t uncounted = raw & uncounted_bit;
    std::int32_t length = (raw & ~uncounted_bit) + 1;
    float ret = returns[i];
    step_result out{0.0f, true, false};
    if (valid) {
      ret += tr.reward;
      out = {tr.reward, tr.terminated, !tr.terminated && length >= params.max_steps};
    } else {
      invalid_actions[i] += 1;
    }
    if (out.terminated || out.truncated) {
      if (valid && !uncounted) {
        done_episodes[i] += 1;
        done_return_sum[i] += double(ret);
        done_length_sum[i] += double(length);
      }
      if (final_obs) E::observe(s, final_obs, params);
      E::reset(s, r, params);
      length = 0;
      uncounted = 0;
      ret = 0.0f;
    }
    E::observe(s, obs, params);
    store(i, s);
    rng_blocks[i] = r.block();
    lengths[i] = length | uncounted;
    returns[i] = ret;
    return out;
  }
};

namespace detail {
// The primary template fails loudly: the CUDA path lives in env_batch.cuh.
template <class P>
struct launcher {
  static_assert(sizeof(P) == 0,
                "gmi::rl::env_batch with gmi::exec::cuda needs #include <gmi/rl/env_batch.cuh> in a .cu file");
};
template <>
struct launcher<exec::host> {
  template <class F>
  static void run(const exec::host& p, CUstream_st*, std::size_t n, F f) {
    exec::for_each(p, n, f);
  }
};

template <class E>
struct reset_all_fn {
  env_batch_view<E> v;
  float* obs;
  episode_start start;
  GMI_HD void operator()(std::size_t i) const { v.reset_one(i, obs + i * E::obs_dim, start); }
};

template <class E>
struct step_all_fn {
  env_batch_view<E> v;
  const float* actions;
  float* obs;
  float* rewards;
  std::uint8_t* terminated;
  std::uint8_t* truncated;
  float* final_obs;
  GMI_HD void operator()(std::size_t i) const {
    const step_result r = v.step_one(i, actions + i * E::act_dim, obs + i * E::obs_dim,
                                     final_obs ? final_obs + i * E::obs_dim : nullptr);
    rewards[i] = r.reward;
    terminated[i] = r.terminated ? 1 : 0;
    truncated[i] = r.truncated ? 1 : 0;
  }
};

// Statistics are reduced in a fixed order (lane c sums environments c, c + lanes, ...; then one lane sums the
// lanes), so host and GPU give the same sums for the same rewards, whatever the thread count. The reduction
// also zeroes the accumulators: each read covers the episodes since the previous one.
inline constexpr std::size_t stats_lanes = 256;

struct stats_partial {
  double episodes, return_sum, length_sum, invalid_actions;
};

template <class E>
struct stats_lane_fn {
  env_batch_view<E> v;
  stats_partial* partial;
  GMI_HD void operator()(std::size_t c) const {
    stats_partial s{0, 0, 0, 0};
    for (std::size_t i = c; i < v.num_envs; i += stats_lanes) {
      s.episodes += v.done_episodes[i];
      s.return_sum += v.done_return_sum[i];
      s.length_sum += v.done_length_sum[i];
      s.invalid_actions += v.invalid_actions[i];
      v.done_episodes[i] = 0;
      v.done_return_sum[i] = 0;
      v.done_length_sum[i] = 0;
      v.invalid_actions[i] = 0;
    }
    partial[c] = s;
  }
};

struct stats_total_fn {
  stats_partial* partial;  // stats_lanes entries; the total goes to partial[stats_lanes]
  GMI_HD void operator()(std::size_t) const {
    stats_partial t{0, 0, 0, 0};
    for (std::size_t c = 0; c < stats_lanes; ++c) {
      t.episodes += partial[c].episodes;
      t.return_sum += partial[c].return_sum;
      t.length_sum += partial[c].length_sum;
      t.invalid_actions += partial[c].invalid_actions;
    }
    partial[stats_lanes] = t;
  }
};

struct device_stats_readout {
  cuda::pinned_buffer<stats_partial> host{1};
  cuda::event ready;
  bool pending = false;
};

inline std::size_t host_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? std::size_t(pages) * std::size_t(page) : std::numeric_limits<std::size_t>::max();
}
}  // namespace detail

// N copies of E stepped together by policy P (exec::host or exec::cuda). Models gmi::batch_env; arrays passed
// to reset/step live in memory_space (device memory for exec::cuda, host memory for exec::host).
template <gmi::env E, gmi::exec::policy P = exec::host>
class env_batch {
 public:
  using batch_env_concept = gmi::batch_env_tag;
  using env_type = E;
  using policy_type = P;
  using params_type = typename E::params;
  using memory_space = std::conditional_t<P::on_device, gmi::device_memory, gmi::host_memory>;
  template <class T>
  using span = gmi::memory_span<T, memory_space>;
  static constexpr int obs_dim = E::obs_dim, act_dim = E::act_dim;

  // Environment i draws from gmi::rng(seed, i, ...). Throws config_error for num_envs < 1, max_steps < 1, or
  // storage that does not fit in the free memory of the policy's side. For exec::cuda the storage is
  // initialised on policy.stream and the constructor waits for it.
  env_batch(int num_envs, std::uint64_t seed, params_type params = {}, P policy = {})
      : policy_(policy), params_(params), seed_(seed), n_(checked_count(num_envs, params)) {
    states_ = array<std::uint32_t>(n_ * env_batch_view<E>::state_words);
    rng_blocks_ = array<std::uint64_t>(n_);
    lengths_ = array<std::int32_t>(n_);
    returns_ = array<float>(n_);
    done_episodes_ = array<std::uint32_t>(n_);
    done_return_sum_ = array<double>(n_);
    done_length_sum_ = array<double>(n_);
    invalid_actions_ = array<std::uint32_t>(n_);
    partial_ = array<detail::stats_partial>(detail::stats_lanes + 1);
    if constexpr (P::on_device) {
      rng_blocks_.fill_bytes(0, policy_.stream);
      lengths_.fill_bytes(0, policy_.stream);
      returns_.fill_bytes(0, policy_.stream);
      done_episodes_.fill_bytes(0, policy_.stream);
      done_return_sum_.fill_bytes(0, policy_.stream);
      done_length_sum_.fill_bytes(0, policy_.stream);
      invalid_actions_.fill_bytes(0, policy_.stream);
    }
    if constexpr (detail::has_table<E>) {
      const std::vector<float> table = E::make_table(params_);
      table_ = array<float>(table.size());
      if constexpr (P::on_device) {
        cuda::copy(table_.span(), host_span<const float>(table.data(), table.size()), policy_.stream);
      } else {
        table_ = table;
      }
      E::bind_table(params_, table_.data());
    }
    if constexpr (P::on_device) {
      GMI_CUDA_TRY(cudaStreamSynchronize(policy_.stream));  // the host table copy above must outlive its copy
    }
  }

  [[nodiscard]] int num_envs() const noexcept { return static_cast<int>(n_); }
  [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
  // The params the environments see (tables bound to this driver's copy).
  [[nodiscard]] const params_type& params() const noexcept { return params_; }
  [[nodiscard]] const P& policy() const noexcept { return policy_; }

  // The per-environment entry points for a fused kernel (see env_batch_view). Valid while *this lives.
  [[nodiscard]] env_batch_view<E> view() const noexcept {
    return {const_cast<std::uint32_t*>(states_.data()), const_cast<std::uint64_t*>(rng_blocks_.data()),
            const_cast<std::int32_t*>(lengths_.data()), const_cast<float*>(returns_.data()),
            const_cast<std::uint32_t*>(done_episodes_.data()), const_cast<double*>(done_return_sum_.data()),
            const_cast<double*>(done_length_sum_.data()), const_cast<std::uint32_t*>(invalid_actions_.data()),
            params_, seed_, n_};
  }

  // Calls f(name, span) for every array that makes up the environments' state (what a checkpoint stores to
  // continue the same trajectories): states, RNG counters, episode lengths and running returns.
  template <class F>
  void visit_state(F&& f) {
    f("env.state_words", span<std::uint32_t>(states_.data(), states_.size()));
    f("env.rng_blocks", span<std::uint64_t>(rng_blocks_.data(), rng_blocks_.size()));
    f("env.lengths", span<std::int32_t>(lengths_.data(), lengths_.size()));
    f("env.returns", span<float>(returns_.data(), returns_.size()));
  }

  // Starts a new episode in every environment and writes the first observations (num_envs x obs_dim).
  // The RNG streams continue where they were, so a reset after some steps gives new initial states.
  // start: where the episode-step counters begin (episode_start; a trainer passes random_step at its first reset
  // only: the auto-resets that follow always start at step 0).
  void reset(span<float> obs, CUstream_st* stream = nullptr, episode_start start = episode_start::first_step) {
    check_size("obs", obs.size(), n_ * obs_dim);
    launch(stream, n_, detail::reset_all_fn<E>{view(), obs.data(), start});
  }

  // Steps every environment: actions num_envs x act_dim; obs num_envs x obs_dim (next observations, after
  // auto-reset); rewards, terminated, truncated num_envs each. final_obs, if given (num_envs x obs_dim), gets
  // the last observation of every episode that ended in this step (other rows are left as they were).
  void step(span<const float> actions, span<float> obs, span<float> rewards, span<std::uint8_t> terminated,
            span<std::uint8_t> truncated, CUstream_st* stream = nullptr, span<float> final_obs = {}) {
    check_size("actions", actions.size(), n_ * act_dim);
    check_size("obs", obs.size(), n_ * obs_dim);
    check_size("rewards", rewards.size(), n_);
    check_size("terminated", terminated.size(), n_);
    check_size("truncated", truncated.size(), n_);
    if (!final_obs.empty()) check_size("final_obs", final_obs.size(), n_ * obs_dim);
    launch(stream, n_,
           detail::step_all_fn<E>{view(), actions.data(), obs.data(), rewards.data(), terminated.data(),
                                  truncated.data(), final_obs.empty() ? nullptr : final_obs.data()});
  }

  // Episode statistics since the previous request. Enqueues a small reduction (and, for exec::cuda, a copy
  // to pinned memory plus an event) on the stream; poll_stats() returns the result once the stream got there,
  // without waiting. On exec::host the result is ready when request_stats returns.
  void request_stats(CUstream_st* stream = nullptr) {
    const auto lanes = detail::stats_lanes;
    launch(stream, lanes, detail::stats_lane_fn<E>{view(), partial_.data()});
    launch(stream, 1, detail::stats_total_fn{partial_.data()});
    if constexpr (P::on_device) {
      if (!stream) stream = policy_.stream;
      // The pinned slot and event are made once: cudaMallocHost costs far more than the readout itself.
      if (!std::holds_alternative<detail::device_stats_readout>(readout_)) {
        readout_.template emplace<detail::device_stats_readout>();
      }
      auto& r = std::get<detail::device_stats_readout>(readout_);
      GMI_CUDA_TRY(cudaMemcpyAsync(r.host.data(), partial_.data() + lanes, sizeof(detail::stats_partial),
                                   cudaMemcpyDeviceToHost, stream));
      r.ready.record(stream);
      r.pending = true;
    } else {
      host_total_ = partial_[lanes];
      host_pending_ = true;
    }
  }
  // The statistics of the last request if they are ready (each request is returned once).
  [[nodiscard]] std::optional<episode_stats> poll_stats() {
    if constexpr (P::on_device) {
      auto* r = std::get_if<detail::device_stats_readout>(&readout_);
      if (!r || !r->pending || !r->ready.ready()) return std::nullopt;
      r->pending = false;
      return to_stats(r->host[0]);
    } else {
      if (!host_pending_) return std::nullopt;
      host_pending_ = false;
      return to_stats(host_total_);
    }
  }
  // Waits for the last request's result (nullopt when none is pending).
  std::optional<episode_stats> wait_stats() {
    if constexpr (P::on_device) {
      auto* r = std::get_if<detail::device_stats_readout>(&readout_);
      if (!r || !r->pending) return std::nullopt;
      r->ready.synchronize();
    }
    return poll_stats();
  }

  // Requests and waits (for tests and end-of-run summaries).
  episode_stats read_stats(CUstream_st* stream = nullptr) {
    request_stats(stream);
    if constexpr (P::on_device) std::get<detail::device_stats_readout>(readout_).ready.synchronize();
    return *poll_stats();
  }

  // Bytes of storage per environment (states, counters, statistics).
  static constexpr std::size_t bytes_per_env =
      env_batch_view<E>::state_words * 4 + sizeof(std::uint64_t) + sizeof(std::int32_t) + sizeof(float) +
      2 * sizeof(std::uint32_t) + 2 * sizeof(double);

 private:
  template <class T>
  using array = std::conditional_t<P::on_device, cuda::device_buffer<T>, std::vector<T>>;

  static std::size_t checked_count(int num_envs, const params_type& params) {
    gmi::require(num_envs >= 1, "num_envs", num_envs, ">= 1");
    gmi::require(int(params.max_steps) >= 1, "params.max_steps", int(params.max_steps), ">= 1");
    gmi::require(int(params.max_steps) < (1 << 30), "params.max_steps", int(params.max_steps),
                 "< 2^30 (the step counter's bit 30 marks uncounted episodes)");
    const std::size_t n = std::size_t(num_envs);
    std::size_t available = 0;
    std::string where;
    if constexpr (P::on_device) {
      std::size_t free_bytes = 0, total = 0;
      GMI_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total));
      available = free_bytes;
      where = "free device memory";
    } else {
      available = detail::host_memory_bytes();
      where = "host memory";
    }
    const std::size_t fits = available / bytes_per_env;
    gmi::require(n <= fits, "num_envs", num_envs,
                 "<= " + std::to_string(fits) + " (" + std::to_string(bytes_per_env) + " bytes per environment, " +
                     std::to_string(available) + " bytes of " + where + ")");
    return n;
  }

  static void check_size(const char* what, std::size_t got, std::size_t need) {
    if (got != need) {
      throw gmi::config_error(gmi::got_need(std::string("env_batch: ") + what + " element count", got,
                                            "== " + std::to_string(need)));
    }
  }

  template <class F>
  void launch(CUstream_st* stream, std::size_t n, F f) {
    detail::launcher<P>::run(policy_, stream, n, f);
  }

  static episode_stats to_stats(const detail::stats_partial& p) {
    return {std::uint64_t(p.episodes), p.return_sum, p.length_sum, std::uint64_t(p.invalid_actions)};
  }

  P policy_;
  params_type params_;
  std::uint64_t seed_;
  std::size_t n_;
  array<std::uint32_t> states_;
  array<std::uint64_t> rng_blocks_;
  array<std::int32_t> lengths_;
  array<float> returns_;
  array<std::uint32_t> done_episodes_;
  array<double> done_return_sum_;
  array<double> done_length_sum_;
  array<std::uint32_t> invalid_actions_;
  array<detail::stats_partial> partial_;
  array<float> table_;
  std::conditional_t<P::on_device, std::variant<std::monostate, detail::device_stats_readout>, std::monostate> readout_;
  detail::stats_partial host_total_{};
  bool host_pending_ = false;
};

}  // namespace gmi::rl

#pragma once
// The environment concepts: gmi::env (one environment as __host__ __device__ static functions, stepped in
// batches by gmi::rl::env_batch) and gmi::batch_env (a simulator that steps all its environments at once).

#include <concepts>
#include <cstdint>
#include <type_traits>

#include <gmi/core/rng.hpp>
#include <gmi/core/span.hpp>

struct CUstream_st;  // cudaStream_t is CUstream_st*; declared here so host-only code needs no CUDA header

namespace gmi {

struct env_tag {};
struct batch_env_tag {};

// What one step of one environment returns. Truncation (the time limit) is not here: the batched driver
// counts steps and reports it from params.max_steps, so every task gets the same time-limit semantics.
struct transition {
  float reward;
  bool terminated;  // a terminal state: no bootstrapping from the next value
};

// One environment. Written once, run on host threads and in CUDA kernels:
//   using env_concept = gmi::env_tag;
//   static constexpr int obs_dim, act_dim;            // sizes of one observation and one action
//   struct params { ...; int max_steps; };            // task constants; trivially copyable (passed to kernels)
//   struct state  { ... };                            // one environment's state; trivially copyable
//   GMI_HD static void reset(state&, gmi::rng&, const params&);
//   GMI_HD static gmi::transition step(state&, const float* action, gmi::rng&, const params&);
//   GMI_HD static void observe(const state&, float* obs, const params&);
// Optional: tasks whose params point at read-only tables (matrices) too large for kernel parameters provide
//   static std::vector<float> make_table(const params&);   // host, built once per driver
//   GMI_HD static void bind_table(params&, const float*);  // the driver points params at its copy
// Optional: discrete actions. A task whose actions are one of N choices declares
//   static constexpr int num_actions = N;                 // N >= 2, with act_dim = 1
// and reads the chosen index as a float in action[0] (0.0f, 1.0f, ...); it trains with an agent of a categorical
// policy (gmi::agents::categorical_mlp), a continuous one with a Gaussian agent (gmi::agents::gaussian_mlp).
// Optional: tasks whose best reachable mean episode return is known (the LQ proxies: from the Riccati equation)
//   static double optimal_mean_return(const params&);       // host; gmi::run reports returns beside it
// The task declares discrete actions (`static constexpr int num_actions`).
template <class E>
inline constexpr bool has_discrete_actions = requires { { E::num_actions } -> std::convertible_to<int>; };

// What the policy head outputs for task E: num_actions logits for a discrete task, act_dim means otherwise.
template <class E>
consteval int policy_outputs() {
  if constexpr (has_discrete_actions<E>) return E::num_actions;
  else return E::act_dim;
}

template <class E>
concept env = requires {
  typename E::env_concept;
  requires std::same_as<typename E::env_concept, env_tag>;
  { E::obs_dim } -> std::convertible_to<int>;
  { E::act_dim } -> std::convertible_to<int>;
  requires E::obs_dim > 0 && E::act_dim > 0;
  requires !has_discrete_actions<E> || (E::act_dim == 1 && policy_outputs<E>() >= 2);
  typename E::params;
  typename E::state;
  requires std::is_trivially_copyable_v<typename E::params> && std::is_trivially_copyable_v<typename E::state>;
} && requires(typename E::state& s, const typename E::state& cs, const float* action, float* obs, gmi::rng& r,
              const typename E::params& p) {
  E::reset(s, r, p);
  { E::step(s, action, r, p) } -> std::same_as<transition>;
  E::observe(cs, obs, p);
  { p.max_steps } -> std::convertible_to<int>;
};

// Spells out which requirement a type misses, one sentence each: static_assert(gmi::check_env<my_env>()).
template <class E>
consteval bool check_env() {
  static_assert(requires { typename E::env_concept; },
                "gmi::env: the type must opt in with `using env_concept = gmi::env_tag;`");
  if constexpr (requires { typename E::env_concept; }) {
    static_assert(std::same_as<typename E::env_concept, env_tag>, "gmi::env: env_concept must be gmi::env_tag");
  }
  static_assert(requires { { E::obs_dim } -> std::convertible_to<int>; },
                "gmi::env: the type must give its observation size: `static constexpr int obs_dim`");
  static_assert(requires { { E::act_dim } -> std::convertible_to<int>; },
                "gmi::env: the type must give its action size: `static constexpr int act_dim`");
  if constexpr (requires { { E::obs_dim } -> std::convertible_to<int>; { E::act_dim } -> std::convertible_to<int>; }) {
    static_assert(E::obs_dim > 0 && E::act_dim > 0, "gmi::env: obs_dim and act_dim must be >= 1");
    if constexpr (has_discrete_actions<E>) {
      static_assert(E::act_dim == 1 && policy_outputs<E>() >= 2,
                    "gmi::env: a task with discrete actions declares num_actions >= 2 and act_dim = 1 (the index)");
    }
  }
  static_assert(requires { typename E::params; }, "gmi::env: the type must declare its constants: `struct params`");
  static_assert(requires { typename E::state; }, "gmi::env: the type must declare one environment's `struct state`");
  if constexpr (requires { typename E::params; typename E::state; }) {
    using P = typename E::params;
    using S = typename E::state;
    static_assert(std::is_trivially_copyable_v<P>,
                  "gmi::env: params must be trivially copyable (they are passed to kernels by value)");
    static_assert(std::is_trivially_copyable_v<S>,
                  "gmi::env: state must be trivially copyable (the driver stores it in device arrays)");
    static_assert(requires(const P& p) { { p.max_steps } -> std::convertible_to<int>; },
                  "gmi::env: params must give the time limit: `int max_steps`");
    static_assert(requires(S& s, gmi::rng& r, const P& p) { E::reset(s, r, p); },
                  "gmi::env: the type must have `static void reset(state&, gmi::rng&, const params&)`");
    static_assert(requires(S& s, const float* a, gmi::rng& r, const P& p) {
                    { E::step(s, a, r, p) } -> std::same_as<transition>;
                  },
                  "gmi::env: the type must have `static gmi::transition step(state&, const float* action, gmi::rng&, "
                  "const params&)`");
    static_assert(requires(const S& s, float* o, const P& p) { E::observe(s, o, p); },
                  "gmi::env: the type must have `static void observe(const state&, float* obs, const params&)`");
  }
  return env<E>;
}

// A simulator that steps all its environments at once (a user's own CUDA simulator, or gmi::rl::env_batch).
// Arrays are flat, row-major, num_envs() rows, in B::memory_space (gmi::device_memory for CUDA simulators):
// obs num_envs x obs_dim floats, rewards num_envs floats, terminated/truncated num_envs bytes (0 or 1).
// reset writes the first observation of every environment; step auto-resets finished environments and writes
// the next episode's first observation in their row.
template <class B>
concept batch_env = requires {
  typename B::batch_env_concept;
  requires std::same_as<typename B::batch_env_concept, batch_env_tag>;
  typename B::memory_space;
  { B::obs_dim } -> std::convertible_to<int>;
  { B::act_dim } -> std::convertible_to<int>;
} && requires(B& b, const B& cb, memory_span<const float, typename B::memory_space> actions,
              memory_span<float, typename B::memory_space> obs, memory_span<float, typename B::memory_space> rewards,
              memory_span<std::uint8_t, typename B::memory_space> terminated,
              memory_span<std::uint8_t, typename B::memory_space> truncated, CUstream_st* stream) {
  { cb.num_envs() } -> std::convertible_to<int>;
  b.reset(obs, stream);
  b.step(actions, obs, rewards, terminated, truncated, stream);
};

template <class B>
consteval bool check_batch_env() {
  static_assert(requires { typename B::batch_env_concept; },
                "gmi::batch_env: the type must opt in with `using batch_env_concept = gmi::batch_env_tag;`");
  static_assert(requires { typename B::memory_space; },
                "gmi::batch_env: the type must say where its arrays live: `using memory_space = gmi::device_memory;`");
  static_assert(requires { { B::obs_dim } -> std::convertible_to<int>; { B::act_dim } -> std::convertible_to<int>; },
                "gmi::batch_env: the type must give `static constexpr int obs_dim, act_dim`");
  static_assert(requires(const B& b) { { b.num_envs() } -> std::convertible_to<int>; },
                "gmi::batch_env: the type must have `int num_envs() const`");
  if constexpr (requires { typename B::memory_space; }) {
    using M = typename B::memory_space;
    static_assert(requires(B& b, memory_span<float, M> obs, CUstream_st* s) { b.reset(obs, s); },
                  "gmi::batch_env: the type must have `reset(span<float> obs, cudaStream_t)`");
    static_assert(requires(B& b, memory_span<const float, M> a, memory_span<float, M> o, memory_span<float, M> r,
                           memory_span<std::uint8_t, M> te, memory_span<std::uint8_t, M> tr, CUstream_st* s) {
                    b.step(a, o, r, te, tr, s);
                  },
                  "gmi::batch_env: the type must have `step(actions, obs, rewards, terminated, truncated, "
                  "cudaStream_t)` over spans in its memory_space");
  }
  return batch_env<B>;
}

// Whether a network's policy (Net::discrete: categorical or Gaussian) fits task E's actions, each mismatch
// refused at compile time with a sentence.
template <class Net, class E>
consteval bool network_fits_env() {
  static_assert(!(has_discrete_actions<E> && !Net::discrete),
                "gmi: this task has discrete actions (it declares num_actions) but the agent's policy is continuous "
                "(Gaussian): use a categorical agent, gmi::agents::categorical_mlp");
  static_assert(!(!has_discrete_actions<E> && Net::discrete),
                "gmi: this task has continuous actions (no num_actions) but the agent's policy is categorical: use a "
                "Gaussian agent, gmi::agents::gaussian_mlp");
  return Net::discrete == has_discrete_actions<E> && Net::dist_dim == policy_outputs<E>();
}

static_assert(!env<int>);
static_assert(!batch_env<int>);

}  // namespace gmi

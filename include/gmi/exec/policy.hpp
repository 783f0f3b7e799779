#pragma once
// Execution policies: the same batched code runs as host threads (exec::host: tests, CI, machines without a
// GPU) or as CUDA kernels on a stream (exec::cuda). Policies are plain values checked by a concept.

#include <concepts>
#include <memory>

struct CUstream_st;  // cudaStream_t is CUstream_st*; declared here so host-only code needs no CUDA header

namespace gmi::exec {

struct policy_tag {};

namespace detail {
class thread_pool;
}

// Host threads. threads == 0 uses every hardware thread; pool == nullptr uses the process-wide pool.
struct host {
  using exec_concept = policy_tag;
  static constexpr bool on_device = false;
  unsigned threads = 0;
  std::shared_ptr<detail::thread_pool> pool = nullptr;
};

// CUDA kernels on a stream (nullptr: the legacy default stream; GMIs always pass their own).
struct cuda {
  using exec_concept = policy_tag;
  static constexpr bool on_device = true;
  CUstream_st* stream = nullptr;
  int block_size = 256;
  int sm_count = 0;  // the SMs this work may use (a GMI's slice: green context, MPS share, MIG); 0: the whole device
};

// Opt-in tag plus structure: a policy says which side it runs on.
template <class P>
concept policy = requires {
  typename P::exec_concept;
  requires std::same_as<typename P::exec_concept, policy_tag>;
  { P::on_device } -> std::convertible_to<bool>;
};

// Spells out which requirement a type misses, for readable errors (static_assert(check_policy<T>())).
template <class P>
consteval bool check_policy() {
  static_assert(requires { typename P::exec_concept; },
                "gmi::exec::policy: the type must opt in with `using exec_concept = gmi::exec::policy_tag;`");
  if constexpr (requires { typename P::exec_concept; }) {
    static_assert(std::same_as<typename P::exec_concept, policy_tag>,
                  "gmi::exec::policy: exec_concept must be gmi::exec::policy_tag");
  }
  static_assert(requires { { P::on_device } -> std::convertible_to<bool>; },
                "gmi::exec::policy: the type must say where it runs: `static constexpr bool on_device`");
  return policy<P>;
}

static_assert(policy<host>);
static_assert(policy<cuda>);
static_assert(!policy<int>);

}  // namespace gmi::exec

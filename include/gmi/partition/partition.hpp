#pragma once
// Every partition backend: none (time slicing), mps, green_context, mig (attach only), cpu_cores (host). The GPU
// backends form a type list (gpu_backends): the run's flag choices and messages come from it, so a new backend is
// its header plus one entry here.

#include <array>
#include <string>
#include <string_view>

#include <gmi/partition/cpu_cores.hpp>
#include <gmi/partition/green_context.hpp>
#include <gmi/partition/mig.hpp>
#include <gmi/partition/mps.hpp>
#include <gmi/partition/none.hpp>

namespace gmi::partition {

template <class... Backends>
struct backend_list {
  static constexpr std::array<const char*, sizeof...(Backends)> names = {Backends::name...};
  static constexpr bool has(std::string_view name) {
    for (const char* n : names)
      if (name == n) return true;
    return false;
  }
  // "none, mps, green_context, mig": for messages.
  static std::string names_text() {
    std::string t;
    for (const char* n : names) t += (t.empty() ? "" : ", ") + std::string(n);
    return t;
  }
};

// The backends that cut a GPU into GMIs (cpu_cores serves host GMIs).
using gpu_backends = backend_list<none, mps, green_context, mig>;

static_assert(partition_policy<none> && partition_policy<mps> && partition_policy<green_context> &&
              partition_policy<mig> && partition_policy<cpu_cores>);
static_assert(!partition_policy<int>);
static_assert(gpu_backends::has("mps") && !gpu_backends::has("cpu_cores"));

}  // namespace gmi::partition

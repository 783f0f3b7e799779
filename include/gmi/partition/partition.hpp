#pragma once
// Every partition backend: none (time slicing), mps, green_context, mig (attach only), cpu_cores (host).

#include <gmi/partition/cpu_cores.hpp>
#include <gmi/partition/green_context.hpp>
#include <gmi/partition/mig.hpp>
#include <gmi/partition/mps.hpp>
#include <gmi/partition/none.hpp>

namespace gmi::partition {
static_assert(partition_policy<none> && partition_policy<mps> && partition_policy<green_context> &&
              partition_policy<mig> && partition_policy<cpu_cores>);
static_assert(!partition_policy<int>);
}  // namespace gmi::partition

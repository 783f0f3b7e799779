#pragma once
// partition::none: no partitioning; GMIs on one GPU share it by time slicing. One GMI per GPU is the
// Isaac-Gym-style baseline.

#include <string>

#include <gmi/core/status.hpp>

namespace gmi::partition {

struct partition_tag {};

struct none {
  using partition_concept = partition_tag;
  static constexpr const char* name = "none";

  // Any count of time-sliced GMIs works; the first-cut runtime starts one per GPU.
  static gmi::status can_implement(int gmis_per_gpu) {
    if (gmis_per_gpu < 1) return gmi::status::invalid("gmis_per_gpu: got " + std::to_string(gmis_per_gpu) + ", need >= 1");
    return gmi::status::ok();
  }
};

template <class P>
concept partition_policy = requires { typename P::partition_concept; };

}  // namespace gmi::partition

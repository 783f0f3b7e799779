#pragma once
// Layout policies: which roles share a GMI (the paper's resource-aware mapping).

namespace gmi::layout {

struct layout_tag {};

// env + agent in every GMI: policy serving (inference throughput), no training.
struct serving {
  using layout_concept = layout_tag;
  static constexpr const char* name = "serving";
  static constexpr bool trains = false;
};
// env + agent + trainer in every GMI: synchronous data-parallel PPO over all GMIs.
struct colocated {
  using layout_concept = layout_tag;
  static constexpr const char* name = "colocated";
  static constexpr bool trains = true;
};
// serving GMIs feed trainer GMIs through channels: asynchronous (APPO/A3C style).
struct split {
  using layout_concept = layout_tag;
  static constexpr const char* name = "split";
  static constexpr bool trains = true;
};

template <class L>
concept layout_policy = requires { typename L::layout_concept; } && requires { L::trains; };

}  // namespace gmi::layout

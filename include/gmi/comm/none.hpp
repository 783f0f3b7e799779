#pragma once
// comm::none: a single GMI exchanges nothing. Pipelines with more GMIs name a communicator
// (gmi::comm::hierarchical<...>) instead.

namespace gmi::comm {

struct communicator_tag {};

struct none {
  using communicator_concept = communicator_tag;
  static constexpr const char* name = "none";
  static constexpr bool reduces = false;
};

template <class C>
concept communicator_policy = requires { typename C::communicator_concept; };

}  // namespace gmi::comm

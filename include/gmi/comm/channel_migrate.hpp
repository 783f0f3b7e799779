#pragma once
// The channel's migrate stage as a policy: which consumer gets a producer's next slot (pure logic, tested
// on its own).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include <gmi/comm/channel_options.hpp>
#include <gmi/core/error.hpp>

namespace gmi::comm {

// Chooses the consumer of the next slot from what this producer knows: bytes it has queued on each link (sent,
// not yet given back) and whether the link has a free slot. Pure logic, so the policy is tested on its own.
class migrator {
 public:
  explicit migrator(int consumers, routing r = routing::least_queued) : n_(consumers), route_(r) {
    require(consumers >= 1, "migrator consumers", consumers, ">= 1");
  }
  // The chosen consumer, or -1 when no link has a free slot (the producer then waits: back-pressure).
  int choose(std::span<const std::uint64_t> queued_bytes, std::span<const std::uint8_t> has_free) {
    require(queued_bytes.size() == static_cast<std::size_t>(n_) && has_free.size() == static_cast<std::size_t>(n_),
            "migrator inputs (queued bytes, free flags)",
            std::to_string(queued_bytes.size()) + ", " + std::to_string(has_free.size()), "one per consumer");
    int best = -1;
    for (int k = 1; k <= n_; ++k) {  // round-robin order starting after the last pick: ties rotate
      const int c = (last_ + k) % n_;
      if (!has_free[static_cast<std::size_t>(c)]) continue;
      if (route_ == routing::round_robin) {
        best = c;
        break;
      }
      if (best < 0 || queued_bytes[static_cast<std::size_t>(c)] < queued_bytes[static_cast<std::size_t>(best)]) best = c;
    }
    if (best >= 0) last_ = best;
    return best;
  }

 private:
  int n_;
  routing route_;
  int last_ = -1;
};

}  // namespace gmi::comm

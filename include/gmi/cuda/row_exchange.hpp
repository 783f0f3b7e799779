#pragma once
// cuda::row_exchange: what one block of a kernel needs to sum a row of floats over a group of GMIs of one GPU
// from inside that kernel, with no extra launch: every member's row mapped into this GMI, the group's flag words
// in device memory and this member's call counter. Plain data, so host code carries it (rl::ppo_sync); the
// device side is row_exchange.cuh; comm::hierarchical_allreduce::row_exchange() builds one.

#include <cstddef>
#include <cstdint>

namespace gmi::cuda {

struct row_exchange {
  static constexpr int max_members = 16;
  const float* rows[max_members] = {};  // member r's row of `count` floats (this member's own at [rank])
  std::size_t count = 0;
  int rank = 0;
  int size = 0;                         // members; 0: no exchange
  std::uint32_t* posted = nullptr;      // member r's word at posted[r * apart]: the last call whose row is written
  std::uint32_t* released = nullptr;    // member r's word at released[r * apart]: the last call whose rows it read
  int apart = 1;
  std::uint32_t* counter = nullptr;     // this member's calls so far (its own device memory): graphs replay calls
  const volatile std::uint32_t* abort = nullptr;  // non-zero: stop waiting (the host's abort word, mapped)
  std::uint32_t* stalled = nullptr;     // set to 1 when a wait gave up (one word for the group; the host checks it)
  unsigned long long timeout_ns = 0;

  [[nodiscard]] bool valid() const noexcept {
    if (size < 1 || size > max_members || rank < 0 || rank >= size || count == 0) return false;
    if (!posted || !released || !counter || !abort || !stalled || apart < 1 || timeout_ns == 0) return false;
    for (int r = 0; r < size; ++r)
      if (!rows[r]) return false;
    return true;
  }
};

}  // namespace gmi::cuda

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>

#include <gmi/nn/lt_align.hpp>
#include <gmi/rl/sac_loss.hpp>
#include <gmi/rl/sac_sync.hpp>

namespace {

// Whether a critic's gradient written at float offset `off` of a 256-byte aligned buffer gives every layer's bias
// gradient the alignment a fused cuBLASLt epilogue needs (the device trainer's sum buffer 0).
template <class Critic>
bool bias_grads_fit(std::size_t off) {
  using L = typename Critic::layers;
  const std::uintptr_t base = 0x7f0000000000;
  for (int l = 0; l < Critic::count; ++l) {
    const std::size_t at = off + static_cast<std::size_t>(L::bias_offset(l));
    if (!gmi::nn::lt_bias_epilogue_fits(reinterpret_cast<const void*>(base + 4 * at))) return false;
  }
  return true;
}

template <int O, int A, int H>
void check_layout(bool old_layout_fits) {
  using critic = typename gmi::rl::sac_networks<O, A, H>::critic;
  const std::size_t C = critic::param_count, off = gmi::rl::sac_second_critic_offset(C);
  CAPTURE(O);
  CAPTURE(A);
  CAPTURE(H);
  CHECK(off >= C);
  CHECK(off - C < 64);
  CHECK(off % 64 == 0);  // 256 bytes: the weight gradients start as aligned as a fresh buffer
  CHECK(bias_grads_fit<critic>(0));
  CHECK(bias_grads_fit<critic>(off));
  // Critic 2's gradient right after critic 1's (offset C), as before: misaligned where C is not a multiple of 4.
  CHECK(bias_grads_fit<critic>(C) == old_layout_fits);
}

}  // namespace

// The device trainer's critic-2 gradient sits on 256 bytes: at Ant's sizes and 256-wide networks the critic has
// 75265 parameters, and directly after critic 1's gradient its bias gradients were 4-byte aligned, which the
// cuBLASLt bias-gradient epilogue may not take (the batch-4096 update's failure, issue 39).
TEST_CASE("sac.device_critic_gradients_aligned") {
  // A critic's size is odd at every even width (its output bias is one float), so the old offset never fit.
  check_layout<27, 8, 256>(false);  // Ant
  check_layout<3, 1, 256>(false);   // Pendulum
  check_layout<3, 1, 64>(false);
  check_layout<60, 4, 512>(false);
}

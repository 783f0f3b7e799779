#include <doctest/doctest.h>

#include <gmi/nn/layers.hpp>

#include <type_traits>

TEST_SUITE("cpu") {
  TEST_CASE("nn.layers.offsets_and_sizes") {
    using L = gmi::nn::layers<211, 512, 512, 512, 256, 20>;
    static_assert(L::count == 5 && L::depth == 6 && L::in == 211 && L::out == 20 && L::max_width == 512);
    CHECK(L::weight_offset(0) == 0);
    CHECK(L::bias_offset(0) == 211 * 512);
    CHECK(L::weight_offset(1) == 211 * 512 + 512);
    CHECK(L::bias_offset(4) == L::weight_offset(4) + 256 * 20);
    CHECK(L::param_count == 211 * 512 + 512 + 2 * (512 * 512 + 512) + 512 * 256 + 256 + 256 * 20 + 20);
    CHECK(L::activation_offset(3) == 512 * 3);
    CHECK(L::activation_size == 512 * 3 + 256 + 20);
    CHECK(L::forward_macs == 211LL * 512 + 2LL * 512 * 512 + 512LL * 256 + 256LL * 20);
    using H = gmi::nn::layers<32, 32>;
    static_assert(std::is_same_v<H::prepend<4>::append<2>, gmi::nn::layers<4, 32, 32, 2>>);
    static_assert(gmi::nn::is_layers<H> && !gmi::nn::is_layers<int>);
  }
}

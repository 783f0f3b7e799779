#pragma once
// Host entry points of the core_gpu tests' device code (kernels.cu), so the doctest files compile with g++.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gmi_test {

// Draws of gmi::rng(seed, stream) made on the device: `count` u32, then `count` uniform() from a fresh rng,
// then `count` normal() from another fresh rng, then `count` uniform(-0.2f, 0.3f) from another (a range whose
// width is not a power of two, so an FMA-contracted lo + (hi - lo) * u would round differently) (one thread).
struct device_draws {
  std::vector<std::uint32_t> u32;
  std::vector<float> uniform;
  std::vector<float> normal;
  std::vector<float> uniform_range;
};
device_draws rng_draws_on_device(std::uint64_t seed, std::uint64_t stream, int count);

// How often gmi::exec::for_each(exec::cuda{stream}, n, f) called f(i), for every i in [0, n).
std::vector<int> for_each_visits(std::size_t n);

}  // namespace gmi_test

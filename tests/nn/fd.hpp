#pragma once
// Shared helpers of the nn tests: seeded random vectors and central finite differences in double.

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include <gmi/core/rng.hpp>

namespace nn_test {

template <class T = double>
std::vector<T> random_vector(std::size_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  gmi::rng g(seed, 0);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(lo + (hi - lo) * g.uniform());
  return v;
}

// d f / d v[i] by central differences.
inline double central_difference(const std::function<double()>& f, double& v, double h = 1e-5) {
  const double keep = v;
  v = keep + h;
  const double up = f();
  v = keep - h;
  const double down = f();
  v = keep;
  return (up - down) / (2 * h);
}

// |a - b| <= tol * max(1, |a|, |b|)
inline bool close(double a, double b, double tol) {
  return std::abs(a - b) <= tol * std::max({1.0, std::abs(a), std::abs(b)});
}

}  // namespace nn_test

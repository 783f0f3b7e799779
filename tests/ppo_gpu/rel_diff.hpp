#pragma once
// ||a - b|| / ||b|| over two equally long vectors, in double: how far a GPU result is from the host's.
#include <cmath>
#include <cstddef>
#include <vector>

namespace gmi_test {
inline double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / (den + 1e-30));
}
}  // namespace gmi_test

#pragma once
// Repetition statistics for benchmarks: every reported figure is a median of several runs with min and max.

#include <algorithm>
#include <cstddef>
#include <vector>

#include <gmi/core/error.hpp>

namespace gmi::metrics {

struct summary {
  double median = 0, min = 0, max = 0;
  std::size_t reps = 0;
};

inline summary summarize(std::vector<double> samples) {
  gmi::require(!samples.empty(), "benchmark repetitions", 0, ">= 1");
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  const double median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  return {median, samples.front(), samples.back(), n};
}

}  // namespace gmi::metrics

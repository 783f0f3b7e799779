#pragma once
// The n-step table a trainer with sac_config::n_step = n should hold, checked against the one-step table of a trainer
// that collected the same steps (same seed, uniform actions through the warm-up; a fresh table fills its slots in
// order: row t * envs + e is vector step t, environment e). Episodes start at step 0 and end by the time limit
// alone (Pendulum: never terminated), at steps max_steps - 1, 2 max_steps - 1, ... For tests/sac (host) and
// tests/sac_gpu (device).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include <gmi/replay/snapshot.hpp>

namespace sac_test {

struct nstep_comparison {
  std::size_t compared = 0;  // transitions of the n-step table checked
  std::size_t cut = 0;       // of them, windows an episode's end cut short
  double worst = 0;          // the largest difference of any value from the expected one, over max(1, |expected|)
};

// O and A: the observation and action widths; steps: vector steps collected by both.
inline nstep_comparison compare_nstep(const gmi::replay::snapshot& one, const gmi::replay::snapshot& folded, int n,
                                      std::size_t envs, std::size_t steps, std::size_t max_steps, float gamma,
                                      std::size_t O, std::size_t A) {
  const auto at = [](const gmi::replay::snapshot& s, int col, std::size_t row, std::size_t k, std::size_t width) {
    float f;
    std::memcpy(&f, &s.columns[std::size_t(col)][row * width + k], sizeof f);
    return f;
  };
  nstep_comparison out;
  const auto note = [&](double got, double want) {
    out.worst = std::max(out.worst, std::fabs(got - want) / std::max(1.0, std::fabs(want)));
  };
  for (std::size_t t = 0; t + std::size_t(n) <= steps; ++t) {
    for (std::size_t e = 0; e < envs; ++e) {
      const std::size_t row = t * envs + e;
      int m = n;  // steps summed: n, or up to the episode's end
      for (int k = 0; k < n; ++k)
        if ((t + std::size_t(k)) % max_steps == max_steps - 1) {
          m = k + 1;
          break;
        }
      out.cut += m < n;
      float sum = 0, d = 1;  // in float, as the fold
      for (int k = 0; k < m; ++k) {
        sum += d * at(one, 2, (t + std::size_t(k)) * envs + e, 0, 1);
        if (k + 1 < m) d *= gamma;
      }
      const std::size_t last = (t + std::size_t(m) - 1) * envs + e;
      for (std::size_t k = 0; k < O; ++k) note(at(folded, 0, row, k, O), at(one, 0, row, k, O));
      for (std::size_t k = 0; k < A; ++k) note(at(folded, 1, row, k, A), at(one, 1, row, k, A));
      note(at(folded, 2, row, 0, 1), sum);
      for (std::size_t k = 0; k < O; ++k) note(at(folded, 3, row, k, O), at(one, 3, last, k, O));
      note(at(folded, 4, row, 0, 1), 1.0 - d);  // never terminated: 1 - gamma^(m - 1)
      ++out.compared;
    }
  }
  return out;
}

}  // namespace sac_test

#pragma once
// Helpers the replay tests share: a small table spec, rollouts whose values encode (env, time), and the
// chi-square critical value for a goodness-of-fit test.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gmi/replay/spec.hpp>

namespace replay_test {

// obs [3]: env, time, 0.5; act [2]; reward [1]; done [1]; ret [1] (for top_k).
inline gmi::replay::table_spec small_spec(std::size_t capacity) {
  gmi::replay::table_spec s;
  s.columns = {{"obs", 3}, {"act", 2}, {"reward", 1}, {"done", 1}, {"ret", 1}};
  s.capacity = capacity;
  s.done_column = "done";
  return s;
}

// Host arrays of one rollout [horizon, envs, width] per column; done where done_at(e, t) says so.
struct rollout_data {
  std::size_t horizon, envs;
  std::vector<std::vector<float>> cols;
  std::vector<float> priorities;
  template <class DoneAt>
  rollout_data(std::size_t h, std::size_t e, std::size_t t0, DoneAt done_at) : horizon(h), envs(e) {
    const std::size_t widths[] = {3, 2, 1, 1, 1};
    for (std::size_t w : widths) cols.emplace_back(h * e * w, 0.0f);
    for (std::size_t t = 0; t < h; ++t)
      for (std::size_t i = 0; i < e; ++i) {
        const std::size_t r = t * e + i;
        cols[0][r * 3 + 0] = static_cast<float>(i);
        cols[0][r * 3 + 1] = static_cast<float>(t0 + t);
        cols[0][r * 3 + 2] = 0.5f;
        cols[1][r * 2 + 0] = -static_cast<float>(t0 + t);
        cols[1][r * 2 + 1] = 1.0f;
        cols[2][r] = 0.25f * static_cast<float>(i);
        cols[3][r] = done_at(i, t0 + t) ? 1.0f : 0.0f;
        cols[4][r] = static_cast<float>(i * 1000 + t0 + t);
      }
  }
  rollout_data(std::size_t h, std::size_t e, std::size_t t0 = 0)
      : rollout_data(h, e, t0, [](std::size_t, std::size_t) { return false; }) {}
};

// Upper critical value of chi-square with df degrees of freedom at tail probability 1e-4 (Wilson-Hilferty).
inline double chi2_critical(double df) {
  const double z = 3.719;  // standard normal quantile at 1 - 1e-4
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

inline double chi2(const std::vector<double>& counts, const std::vector<double>& expected_p, double n) {
  double x = 0.0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const double e = expected_p[i] * n;
    if (e > 0) x += (counts[i] - e) * (counts[i] - e) / e;
  }
  return x;
}

}  // namespace replay_test

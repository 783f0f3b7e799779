#pragma once
// Split roles' transition format (pipeline/offpolicy_split.hpp): an actor packs each transition into one row of
// 2 * obs + act + 2 floats (obs, action, reward, next obs, terminated); a learner's table takes columns. Both SAC
// trainers, host and device, convert with these.

#include <array>
#include <cstddef>
#include <vector>

namespace gmi::rl::sac_packed {

// Floats in one packed transition.
[[nodiscard]] constexpr std::size_t width(std::size_t obs, std::size_t act) noexcept { return 2 * obs + act + 2; }

// Appends n transitions given as columns (obs [n][obs], act [n][act], rew [n], next [n][obs], term [n]) to rows.
inline void append_rows(std::size_t n, std::size_t obs, std::size_t act, const float* o, const float* a, const float* r,
                        const float* next, const float* term, std::vector<float>& rows) {
  rows.reserve(rows.size() + n * width(obs, act));
  for (std::size_t i = 0; i < n; ++i) {
    rows.insert(rows.end(), o + i * obs, o + (i + 1) * obs);
    rows.insert(rows.end(), a + i * act, a + (i + 1) * act);
    rows.push_back(r[i]);
    rows.insert(rows.end(), next + i * obs, next + (i + 1) * obs);
    rows.push_back(term[i]);
  }
}

// Where each column of n transitions starts in one buffer of columns (obs, act, rew, next, term; n * width floats
// in all): the layout the learner's table takes, and the device transport's (pipeline/split_channels.hpp).
[[nodiscard]] constexpr std::array<std::size_t, 5> column_offsets(std::size_t n, std::size_t obs, std::size_t act) noexcept {
  return {0, n * obs, n * (obs + act), n * (obs + act + 1), n * (2 * obs + act + 1)};
}
// The width of column k (0 .. 4) in floats.
[[nodiscard]] constexpr std::size_t column_width(int k, std::size_t obs, std::size_t act) noexcept {
  return k == 0 || k == 3 ? obs : k == 1 ? act : 1;
}

// n packed rows into one buffer of columns, laid out as column_offsets (cols holds n * width floats).
inline void rows_to_columns(std::size_t n, std::size_t obs, std::size_t act, const float* rows, float* cols) {
  const std::size_t w = width(obs, act);
  const auto off = column_offsets(n, obs, act);
  float* o = cols + off[0];
  float* a = cols + off[1];
  float* r = cols + off[2];
  float* next = cols + off[3];
  float* term = cols + off[4];
  for (std::size_t k = 0; k < n; ++k) {
    const float* row = rows + k * w;
    for (std::size_t j = 0; j < obs; ++j) o[k * obs + j] = row[j];
    for (std::size_t j = 0; j < act; ++j) a[k * act + j] = row[obs + j];
    r[k] = row[obs + act];
    for (std::size_t j = 0; j < obs; ++j) next[k * obs + j] = row[obs + act + 1 + j];
    term[k] = row[2 * obs + act + 1];
  }
}

}  // namespace gmi::rl::sac_packed

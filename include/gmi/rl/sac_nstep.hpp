#pragma once
// n-step returns for SAC (sac_config::n_step), folded where the transitions are collected, so the replay table and
// the update stay as they are: each environment's last n steps are kept in a ring, and once it is full every vector
// step emits, per environment, the transition that started n - 1 steps earlier with
//   reward  R = sum_{k < m} gamma^k r_k   (m = n, or fewer where the episode ended inside the window),
//   next    the next observation of step m - 1 (the episode's last one where it ended),
//   terminated column  1 - gamma^(m - 1) (1 - terminated_{m-1}),
// so the soft target r + gamma (1 - terminated) (min Q' - alpha log pi') of the unchanged update is the n-step
// target R + gamma^m (1 - terminated_{m-1}) (min Q' - alpha log pi'). With n = 1 (the default) every column is the
// collected one, bit for bit. Host- and device-callable: sac.hpp folds on host threads, sac.cuh in a kernel.

#include <cstddef>

#include <gmi/core/hd.hpp>

namespace gmi::rl::sac_nstep {

// The last n collected steps of `envs` environments, slot s holding rows [s * envs, (s + 1) * envs) of every column
// (obs [O], action [A], reward, stored next obs [O], terminated and ended as 0 or 1; ended: terminated or truncated).
struct ring {
  const float* obs;
  const float* act;
  const float* reward;
  const float* next;
  const float* terminated;
  const float* ended;
  std::size_t envs;
  int n;
};

// The ring's six columns in one array of floats_for(slots) floats (slots = n * envs rows), one after another.
template <int O, int A>
struct ring_layout {
  static constexpr std::size_t width = 2 * O + A + 3;  // floats a row: obs, action, reward, next, terminated, ended
  static constexpr std::size_t floats_for(std::size_t slots) { return slots * width; }
  // Column c's start (0 obs, 1 action, 2 reward, 3 next, 4 terminated, 5 ended) and width.
  static constexpr std::size_t offset(int c, std::size_t slots) {
    constexpr std::size_t starts[6] = {0, O, O + A, O + A + 1, 2 * O + A + 1, 2 * O + A + 2};
    return starts[c] * slots;
  }
  static constexpr std::size_t column_width(int c) { return c == 0 || c == 3 ? O : c == 1 ? A : 1; }
  static ring view(const float* base, std::size_t envs, int n) {
    const std::size_t slots = std::size_t(n) * envs;
    return {base + offset(0, slots), base + offset(1, slots), base + offset(2, slots), base + offset(3, slots),
            base + offset(4, slots), base + offset(5, slots), envs, n};
  }
};

// The ring slot the vector step collected after `collected` earlier ones goes into.
GMI_HD inline int slot_of(unsigned long long collected, int n) { return static_cast<int>(collected % unsigned(n)); }

// The slot the transition emitted after `collected` vector steps starts in (valid once collected >= n): the oldest.
GMI_HD inline int oldest_slot(unsigned long long collected, int n) { return static_cast<int>(collected % unsigned(n)); }

// Environment i's n-step transition starting at slot `oldest`, written as row i of the five output columns.
template <int O, int A>
GMI_HD void fold(const ring& r, std::size_t i, int oldest, float gamma, float* obs, float* act, float* reward,
                 float* next, float* terminated) {
  const std::size_t first = std::size_t(oldest) * r.envs + i;
  for (int k = 0; k < O; ++k) obs[i * O + k] = r.obs[first * O + k];
  for (int k = 0; k < A; ++k) act[i * A + k] = r.act[first * A + k];
  float sum = 0.0f, discount = 1.0f;  // discount = gamma^k at step k
  for (int k = 0; k < r.n; ++k) {
    const std::size_t row = std::size_t((oldest + k) % r.n) * r.envs + i;
    sum += discount * r.reward[row];
    if (r.ended[row] != 0.0f || k == r.n - 1) {
      for (int j = 0; j < O; ++j) next[i * O + j] = r.next[row * O + j];
      terminated[i] = 1.0f - discount * (1.0f - r.terminated[row]);
      break;
    }
    discount *= gamma;
  }
  reward[i] = sum;
}

}  // namespace gmi::rl::sac_nstep

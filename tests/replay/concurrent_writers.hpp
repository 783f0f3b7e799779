#pragma once
// Concurrent writers' rollouts and the check of a table they filled (tests/replay and tests/replay_gpu): every
// transition has a unique id, written whole in every column (id; 2 id + 1 and ~id; done at every second insert's
// last step), so a lost, doubled or torn row and a broken trajectory link show in a snapshot.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gmi/replay/replay.hpp>

namespace replay_writers {

inline gmi::replay::table_spec spec(std::size_t capacity) {
  gmi::replay::table_spec s;
  s.columns = {{"id", 1, gmi::replay::dtype::i32}, {"copy", 2, gmi::replay::dtype::i32}, {"done", 1}};
  s.capacity = capacity;
  s.done_column = "done";
  return s;
}

// Transition (writer w, insert i, step t, env e) of `inserts` inserts of [horizon, envs] per writer.
inline std::uint32_t id_of(int w, int i, std::size_t t, std::size_t e, int inserts, std::size_t horizon,
                           std::size_t envs) {
  return static_cast<std::uint32_t>(((std::size_t(w) * std::size_t(inserts) + std::size_t(i)) * horizon + t) * envs + e);
}

// One insert's host columns [horizon, envs, width].
struct rollout_rows {
  std::vector<std::uint32_t> id, copy;
  std::vector<float> done;
  std::size_t horizon, envs;
  rollout_rows(int w, int i, std::size_t h, std::size_t e, int inserts) : horizon(h), envs(e) {
    id.resize(h * e);
    copy.resize(2 * h * e);
    done.resize(h * e);
    for (std::size_t t = 0; t < h; ++t)
      for (std::size_t k = 0; k < e; ++k) {
        const std::size_t r = t * e + k;
        id[r] = id_of(w, i, t, k, inserts, h, e);
        copy[2 * r] = 2 * id[r] + 1;
        copy[2 * r + 1] = ~id[r];
        done[r] = (i % 2 == 1 && t + 1 == h) ? 1.0f : 0.0f;
      }
  }
  [[nodiscard]] gmi::replay::rollout view() const {
    gmi::replay::rollout r;
    r.columns = {id.data(), copy.data(), done.data()};
    r.horizon = horizon;
    r.envs = envs;
    return r;
  }
};

struct check_result {
  std::size_t present = 0, missing = 0, duplicated = 0, torn = 0, bad_links = 0;
};

// The snapshot of a table that `writers` writers each filled with `inserts` rollouts (no eviction).
inline check_result check(const gmi::replay::snapshot& s, int writers, int inserts, std::size_t horizon,
                          std::size_t envs) {
  check_result r;
  const std::size_t total = std::size_t(writers) * std::size_t(inserts) * horizon * envs;
  std::vector<int> seen(total, 0);
  const std::size_t cap = s.spec.capacity;
  for (std::size_t slot = 0; slot < cap; ++slot) {
    if (s.index.seq[slot] == 0) continue;
    ++r.present;
    const std::uint32_t id = s.columns[0][slot];
    if (id >= total || s.columns[1][2 * slot] != 2 * id + 1 || s.columns[1][2 * slot + 1] != ~id) {
      ++r.torn;
      continue;
    }
    ++seen[id];
    // A link goes to the same writer's same env one step later (the next insert's first step after the last).
    const std::int32_t nx = s.next[slot];
    if (nx < 0) continue;
    const auto n = static_cast<std::size_t>(nx);
    const std::uint32_t nid = s.columns[0][n];
    const std::size_t e = id % envs, step = (id / envs) % (horizon * std::size_t(inserts));
    const std::size_t ne = nid % envs, nstep = (nid / envs) % (horizon * std::size_t(inserts));
    const bool same_writer = id / (envs * horizon * std::size_t(inserts)) == nid / (envs * horizon * std::size_t(inserts));
    if (n >= cap || s.index.seq[n] == 0 || !same_writer || ne != e || nstep != step + 1) ++r.bad_links;
  }
  for (int v : seen) {
    r.missing += v == 0;
    r.duplicated += v > 1;
  }
  // Torn rows that lost their id count as missing through `seen`.
  return r;
}

}  // namespace replay_writers

// One env step at a time (teacher forcing) between builds: `record` writes the driver's state before each of
// `steps` env steps (64 environments, seed 2024, the GPU test's actions) and each step's outputs; `replay`
// (possibly another build, e.g. with FMA contraction) steps once from every recorded state and prints the
// test's statistic (|a - b| / (1 + |b|)) against the recorded outputs. nudge 1: the replayed qvel +1 ulp.
// Usage: one_step record|replay ant_v4|humanoid_v4|anymal|ant|humanoid steps nudge file
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <gmi/envs/ant.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid.hpp>
#include <gmi/envs/humanoid_v4.hpp>
#include <gmi/envs/renamed_tasks.hpp>
#include <gmi/rl/env_batch.hpp>
#include "envs/batch_snapshot.hpp"
#include "envs_gpu/gpu_runs.hpp"
namespace {
// Writes (record) or reads back (replay) one array of a snapshot or of a step's outputs.
template <class V>
void io(bool record, std::vector<V>& v, FILE* f) {
  const std::size_t got = record ? std::fwrite(v.data(), sizeof(V), v.size(), f)
                                 : std::fread(v.data(), sizeof(V), v.size(), f);
  if (got != v.size()) {
    std::fprintf(stderr, "one_step: file: got %zu of %zu values, need all\n", got, v.size());
    std::exit(2);
  }
}

// The GPU test's statistic, folded into worst and the count outside 1e-3.
void compare(const std::vector<float>& a, const std::vector<float>& b, double& worst, long& bad) {
  for (std::size_t j = 0; j < a.size(); ++j) {
    double e = std::fabs(double(a[j]) - double(b[j])) / (1 + std::fabs(double(b[j])));
    if (!(e == e)) e = INFINITY;
    bad += e > 1e-3;
    worst = std::max(worst, e);
  }
}

template <class T>
void run(bool record, int steps, int nudge, const char* path) {
  const int n = 64;
  gmi::rl::env_batch<T> b(n, 2024);
  std::vector<float> obs(std::size_t(n) * T::obs_dim), act(std::size_t(n) * T::act_dim), rew(n);
  std::vector<float> obs_r(obs.size()), rew_r(n);
  std::vector<std::uint8_t> te(n), tr(n);
  b.reset({obs.data(), obs.size()});
  FILE* f = std::fopen(path, record ? "wb" : "rb");
  if (!f) {
    std::fprintf(stderr, "one_step: file: got %s, need a file to %s\n", path, record ? "write" : "read");
    std::exit(2);
  }
  double worst = 0;
  long bad = 0;
  std::vector<double> by_step(steps);
  for (int t = 0; t < steps; ++t) {
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < T::act_dim; ++k) act[std::size_t(i) * T::act_dim + k] = test_action(7, t, i, T::act_dim, k);
    batch_snapshot s = take_snapshot(b);
    io(record, s.state_words, f);
    io(record, s.rng_blocks, f);
    io(record, s.lengths, f);
    io(record, s.returns, f);
    if (!record) {
      for (int i = 0; nudge && i < n; ++i) {  // qvel words follow the qpos words in the state
        for (int k = 0; k < T::sim::nv; ++k) {
          std::uint32_t& w = s.state_words[std::size_t(T::sim::nq + k) * n + i];
          float v;
          std::memcpy(&v, &w, 4);
          v = std::nextafter(v, INFINITY);
          std::memcpy(&w, &v, 4);
        }
      }
      load_snapshot(b, s);
    }
    b.step({act.data(), act.size()}, {obs.data(), obs.size()}, {rew.data(), rew.size()}, {te.data(), te.size()},
           {tr.data(), tr.size()});
    if (record) {
      io(true, obs, f);
      io(true, rew, f);
    } else {
      io(false, obs_r, f);
      io(false, rew_r, f);
      long bad_t = 0;
      compare(obs, obs_r, by_step[t], bad_t);
      compare(rew, rew_r, by_step[t], bad_t);
      bad += bad_t;
      worst = std::max(worst, by_step[t]);
    }
  }
  std::fclose(f);
  if (!record) {
    std::sort(by_step.begin(), by_step.end());
    std::printf("%s one-step: bad %ld worst %.3g; per-step worst: median %.2g p90 %.2g max %.2g\n", T::name, bad,
                worst, by_step[by_step.size() / 2], by_step[by_step.size() * 9 / 10], by_step.back());
  }
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 6 ? argv[1] : "", task = argc == 6 ? argv[2] : "";
  const int steps = argc == 6 ? std::atoi(argv[3]) : 0, nudge = argc == 6 ? std::atoi(argv[4]) : 0;
  if ((mode != "record" && mode != "replay") ||
      (task != "ant_v4" && task != "humanoid_v4" && task != "anymal" && task != "ant" && task != "humanoid") ||
      steps < 1) {
    if (const std::string renamed = gmi::envs::renamed_task(task); !renamed.empty()) {
      std::fprintf(stderr, "one_step: %s\n", renamed.c_str());
      return 2;
    }
    std::fprintf(stderr,
                 "one_step: arguments: got %d, need record|replay ant_v4|humanoid_v4|anymal|ant|humanoid "
                 "steps>=1 nudge file\n",
                 argc - 1);
    return 2;
  }
  if (task == "ant_v4") run<gmi::envs::ant_v4>(mode == "record", steps, nudge, argv[5]);
  if (task == "humanoid_v4") run<gmi::envs::humanoid_v4>(mode == "record", steps, nudge, argv[5]);
  if (task == "anymal") run<gmi::envs::anymal>(mode == "record", steps, nudge, argv[5]);
  if (task == "ant") run<gmi::envs::ant>(mode == "record", steps, nudge, argv[5]);
  if (task == "humanoid") run<gmi::envs::humanoid>(mode == "record", steps, nudge, argv[5]);
}

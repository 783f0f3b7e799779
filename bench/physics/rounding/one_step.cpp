// One env step at a time (teacher forcing) between builds: `record` writes the driver's state before each of
// `steps` env steps (64 environments, seed 2024, the GPU test's actions) and each step's outputs; `replay`
// (possibly another build, e.g. with FMA contraction) steps once from every recorded state and prints the
// test's statistic (|a - b| / (1 + |b|)) against the recorded outputs. nudge 1: the replayed qvel +1 ulp.
// Usage: one_step record|replay ant|humanoid|anymal steps nudge file
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <gmi/envs/ant.hpp>
#include <gmi/envs/humanoid.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/rl/env_batch.hpp>
#include "envs/batch_snapshot.hpp"
#include "envs_gpu/gpu_runs.hpp"
template <class T> void run(bool record, int steps, int nudge, const char* path) {
  const int n = 64;
  gmi::rl::env_batch<T> b(n, 2024);
  std::vector<float> obs(std::size_t(n) * T::obs_dim), act(std::size_t(n) * T::act_dim), rew(n);
  std::vector<std::uint8_t> te(n), tr(n);
  b.reset({obs.data(), obs.size()});
  FILE* f = std::fopen(path, record ? "wb" : "rb");
  double worst = 0; long bad = 0; std::vector<double> wstep(steps);
  std::vector<float> obs_r(obs.size()), rew_r(n);
  for (int t = 0; t < steps; ++t) {
    for (int i = 0; i < n; ++i) for (int k = 0; k < T::act_dim; ++k) act[std::size_t(i) * T::act_dim + k] = test_action(7, t, i, T::act_dim, k);
    if (record) {
      batch_snapshot s = take_snapshot(b);
      std::fwrite(s.state_words.data(), 4, s.state_words.size(), f); std::fwrite(s.rng_blocks.data(), 8, s.rng_blocks.size(), f);
      std::fwrite(s.lengths.data(), 4, s.lengths.size(), f); std::fwrite(s.returns.data(), 4, s.returns.size(), f);
    } else {
      batch_snapshot s = take_snapshot(b);
      std::fread(s.state_words.data(), 4, s.state_words.size(), f); std::fread(s.rng_blocks.data(), 8, s.rng_blocks.size(), f);
      std::fread(s.lengths.data(), 4, s.lengths.size(), f); std::fread(s.returns.data(), 4, s.returns.size(), f);
      if (nudge) {  // qvel words: after qpos in the state
        for (int i = 0; i < n; ++i) for (int k = 0; k < T::sim::nv; ++k) {
          float v; std::uint32_t& w = s.state_words[std::size_t(T::sim::nq + k) * n + i]; std::memcpy(&v, &w, 4);
          v = std::nextafter(v, INFINITY); std::memcpy(&w, &v, 4);
        }
      }
      load_snapshot(b, s);
    }
    b.step({act.data(), act.size()}, {obs.data(), obs.size()}, {rew.data(), rew.size()}, {te.data(), te.size()}, {tr.data(), tr.size()});
    if (record) { std::fwrite(obs.data(), 4, obs.size(), f); std::fwrite(rew.data(), 4, n, f); }
    else {
      std::fread(obs_r.data(), 4, obs.size(), f); std::fread(rew_r.data(), 4, n, f);
      for (std::size_t j = 0; j < obs.size(); ++j) { double e = std::fabs(double(obs[j]) - obs_r[j]) / (1 + std::fabs(double(obs_r[j]))); if (!(e == e)) e = INFINITY; bad += e > 1e-3; worst = std::max(worst, e); wstep[t] = std::max(wstep[t], e); }
      for (int j = 0; j < n; ++j) { double e = std::fabs(double(rew[j]) - rew_r[j]) / (1 + std::fabs(double(rew_r[j]))); bad += e > 1e-3; worst = std::max(worst, e); wstep[t] = std::max(wstep[t], e); }
    }
  }
  std::fclose(f);
  if (!record) {
    std::printf("%s one-step: bad %ld worst %.3g; per-step worst:", T::name, bad, worst);
    std::vector<double> ws = wstep; std::sort(ws.begin(), ws.end());
    std::printf(" median %.2g p90 %.2g max %.2g\n", ws[ws.size() / 2], ws[ws.size() * 9 / 10], ws.back());
  }
}
int main(int argc, char** argv) {
  const bool record = std::string(argv[1]) == "record"; int steps = std::atoi(argv[3]); int nudge = std::atoi(argv[4]);
  std::string t = argv[2];
  if (t == "ant") run<gmi::envs::ant>(record, steps, nudge, argv[5]);
  if (t == "humanoid") run<gmi::envs::humanoid>(record, steps, nudge, argv[5]);
  if (t == "anymal") run<gmi::envs::anymal>(record, steps, nudge, argv[5]);
}

// Free-running: the host run of tests/envs_gpu/physics_tasks_gpu_test.cpp (64 environments, seed 2024, its
// actions) with the solver's tolerance and sweeps set and optionally every reset qpos and qvel +1 ulp; writes the
// observations (reset, then each step) and rewards to a file for compare.py, to compare builds or settings.
// Usage: free_run ant_v4|humanoid_v4|anymal tolerance iterations nudge steps file
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid_v4.hpp>
#include <gmi/envs/renamed_tasks.hpp>
#include <gmi/rl/env_batch.hpp>
#include "envs_gpu/gpu_runs.hpp"

static int g_nudge = 0;
template <class B>
struct nudged : B {
  GMI_HD static void reset(typename B::state& s, gmi::rng& r, const typename B::params& p) {
    B::reset(s, r, p);
    if (!g_nudge) return;
    for (int k = 0; k < B::sim::nq; ++k) s.qpos[k] = std::nextafter(s.qpos[k], INFINITY);
    for (int k = 0; k < B::sim::nv; ++k) s.qvel[k] = std::nextafter(s.qvel[k], INFINITY);
  }
};

template <class T>
void run(int n, int steps, float tol, int iters, const char* path) {
  typename T::params prm{};
  prm.solver_tolerance = tol;
  prm.solver_iterations = iters;
  gmi::rl::env_batch<T> b(n, 2024, prm);
  std::vector<float> obs(std::size_t(n) * T::obs_dim), act(std::size_t(n) * T::act_dim), rew(n), out;
  std::vector<std::uint8_t> te(n), tr(n);
  b.reset({obs.data(), obs.size()});
  out = obs;
  int terms = 0;
  for (int t = 0; t < steps; ++t) {
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < T::act_dim; ++k)
        act[std::size_t(i) * T::act_dim + k] = test_action(7, t, i, T::act_dim, k);
    b.step({act.data(), act.size()}, {obs.data(), obs.size()}, {rew.data(), rew.size()}, {te.data(), te.size()},
           {tr.data(), tr.size()});
    out.insert(out.end(), obs.begin(), obs.end());
    out.insert(out.end(), rew.begin(), rew.end());
    for (auto x : te) terms += x;
  }
  FILE* f = std::fopen(path, "wb");
  if (!f) {
    std::fprintf(stderr, "free_run: file: got %s, need a writable path\n", path);
    std::exit(2);
  }
  std::fwrite(out.data(), 4, out.size(), f);
  std::fclose(f);
  std::fprintf(stderr, "%s: %zu floats, %d terminations\n", path, out.size(), terms);
}

int main(int argc, char** argv) {
  const std::string task = argc == 7 ? argv[1] : "";
  if (task != "ant_v4" && task != "humanoid_v4" && task != "anymal") {
    if (const std::string renamed = gmi::envs::renamed_task(task); !renamed.empty()) {
      std::fprintf(stderr, "free_run: %s\n", renamed.c_str());
      return 2;
    }
    std::fprintf(stderr,
                 "free_run: arguments: got %d, need ant_v4|humanoid_v4|anymal tolerance iterations nudge steps file\n",
                 argc - 1);
    return 2;
  }
  const float tol = std::atof(argv[2]);
  const int iters = std::atoi(argv[3]), steps = std::atoi(argv[5]);
  g_nudge = std::atoi(argv[4]);
  if (task == "ant_v4") run<nudged<gmi::envs::ant_v4>>(64, steps, tol, iters, argv[6]);
  if (task == "humanoid_v4") run<nudged<gmi::envs::humanoid_v4>>(64, steps, tol, iters, argv[6]);
  if (task == "anymal") run<nudged<gmi::envs::anymal>>(64, steps, tol, iters, argv[6]);
}

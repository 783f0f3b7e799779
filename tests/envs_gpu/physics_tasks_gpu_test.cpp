// The physics tasks (ant_v4, humanoid_v4, anymal, ant, humanoid) on the device against the host, through the same
// env_batch driver and actions. The device compiles the same stages with FMA contraction and its own
// sinf/cosf/expf/logf, and contact-rich dynamics amplify such rounding differences: free-running host trajectories
// whose states start one ulp apart part by more than 1e-3 within 20 env steps in the ant_v4
// (tests/envs/physics_tasks_test.cpp, docs/physics.md). So the device is checked where rounding can not grow: the first
// observations (the resets draw the same numbers; within 1e-5 (1 + |gpu|)) and one env step at a time from the host's
// own states (teacher forcing; within 1e-3 (1 + |gpu|), flags equal) over 30 steps in which contacts start and end and
// episodes end. The free-running difference is reported, not checked.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <gmi/envs/ant.hpp>
#include <gmi/envs/ant_v4.hpp>
#include <gmi/envs/anymal.hpp>
#include <gmi/envs/humanoid.hpp>
#include <gmi/envs/humanoid_v4.hpp>
#include <gmi/physics/stage_shared.hpp>
#include <gmi/physics/step_path.hpp>
#include <gmi/physics/thread_shared.hpp>
#include <gmi/rl/env_batch.hpp>

#include "envs/batch_snapshot.hpp"
#include "physics_tasks_runs.hpp"

namespace {
// The host driver's run of n environments under the test's actions; before (if given) gets its state before each step.
template <class T>
trajectory host_run(int n, int steps, std::uint64_t seed, std::uint64_t action_seed,
                    std::vector<batch_snapshot>* before = nullptr) {
  gmi::rl::env_batch<T> b(n, seed);
  std::vector<float> obs(std::size_t(n) * T::obs_dim), act(std::size_t(n) * T::act_dim), rew(n);
  std::vector<std::uint8_t> te(n), tr(n);
  trajectory out;
  b.reset({obs.data(), obs.size()});
  out.obs = obs;
  for (int t = 0; t < steps; ++t) {
    if (before) before->push_back(take_snapshot(b));
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < T::act_dim; ++k)
        act[std::size_t(i) * T::act_dim + k] = test_action(action_seed, t, std::size_t(i), T::act_dim, k);
    b.step({act.data(), act.size()}, {obs.data(), obs.size()}, {rew.data(), rew.size()}, {te.data(), te.size()},
           {tr.data(), tr.size()});
    out.obs.insert(out.obs.end(), obs.begin(), obs.end());
    out.rewards.insert(out.rewards.end(), rew.begin(), rew.end());
    out.terminated.insert(out.terminated.end(), te.begin(), te.end());
    out.truncated.insert(out.truncated.end(), tr.begin(), tr.end());
  }
  return out;
}

// Entries outside tol (1 + |gpu|) and the worst relative difference.
std::pair<long, double> outside(const std::vector<float>& h, const std::vector<float>& g, double tol) {
  long bad = 0;
  double worst = 0;
  for (std::size_t i = 0; i < h.size() && i < g.size(); ++i) {
    double e = std::fabs(double(h[i]) - double(g[i])) / (1.0 + std::fabs(double(g[i])));
    if (!(e == e)) e = INFINITY;
    bad += e <= tol ? 0 : 1;
    worst = e > worst ? e : worst;
  }
  return {bad, worst};
}

// The staged paths' check against the host (the thread kernel's own host agreement is checked at 1e-3 in the first
// case; the staged paths equal the thread kernel bit for bit, reported): over 300 environments a contact-rich model
// (humanoid: 11 of 1004400 observation values at 1.1e-3 to 2.7e-3 on an H200, the thread kernel's too) has a
// few float roundings past 1e-3, so at most 1 in 10^4 values past 1e-3 and none past 1e-2.
bool near_host(const std::vector<float>& g, const std::vector<float>& host) {
  const auto [past_1e3, worst] = outside(g, host, 1e-3);
  return past_1e3 * 10000 <= long(g.size()) && worst <= 1e-2;
}
}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE_TEMPLATE("envs_gpu.physics_tasks.host_and_gpu_agree_step_by_step" * doctest::timeout(300), T,
                     gmi::envs::ant_v4, gmi::envs::humanoid_v4, gmi::envs::anymal,
                     gmi::envs::ant, gmi::envs::humanoid) {
    const int n = 64, steps = 30;
    const std::size_t rows = std::size_t(n) * T::obs_dim;
    std::vector<batch_snapshot> before;
    const trajectory h = host_run<T>(n, steps, 2024, 7, &before);
    const trajectory g = step_physics_task_gpu_from(T::name, n, 2024, 7, before);
    REQUIRE(h.obs.size() == g.obs.size());
    REQUIRE(h.rewards.size() == g.rewards.size());
    const std::vector<float> h0(h.obs.begin(), h.obs.begin() + rows), g0(g.obs.begin(), g.obs.begin() + rows);
    const std::vector<float> hs(h.obs.begin() + rows, h.obs.end()), gs(g.obs.begin() + rows, g.obs.end());
    const auto [bad_reset, worst_reset] = outside(h0, g0, 1e-5);
    const auto [bad_obs, worst_obs] = outside(hs, gs, 1e-3);
    const auto [bad_rew, worst_rew] = outside(h.rewards, g.rewards, 1e-3);
    long ends = 0;
    for (auto f : h.terminated) ends += f;
    MESSAGE(std::string(T::name) << ": first observations, worst relative difference " << worst_reset
                                 << "; one step from the host's states, observations " << worst_obs << ", rewards "
                                 << worst_rew << " (" << ends << " episodes ended)");
    CHECK(bad_reset == 0);
    CHECK(bad_obs == 0);
    CHECK(bad_rew == 0);
    CHECK(h.terminated == g.terminated);
    CHECK(h.truncated == g.truncated);
    CHECK(outside(h0, std::vector<float>(h.obs.end() - rows, h.obs.end()), 1e-3).first > 0);  // the states moved

    // Free-running (reported): where the device's own trajectory parts from the host's, step by step.
    const trajectory hf = host_run<T>(n, 10, 2024, 7);
    const trajectory gf = run_physics_task_gpu(T::name, n, 10, 2024, 7);
    REQUIRE(hf.obs.size() == gf.obs.size());
    std::string by_step;
    for (int t = 0; t <= 10; ++t) {
      const auto at = [&](const trajectory& x) {
        return std::vector<float>(x.obs.begin() + t * rows, x.obs.begin() + (t + 1) * rows);
      };
      by_step += " " + std::to_string(outside(at(hf), at(gf), 1e-3).second);
    }
    MESSAGE(std::string(T::name) << ": free-running, worst relative difference of the observations by step:"
                                 << by_step);
  }

  TEST_CASE("envs_gpu.physics_tasks.local_batch_follows_the_host" * doctest::timeout(120)) {
    // batch_local.cuh (what gmi.bench.physics_tasks --physics-only measures) against the host stages: the ant_v4
    // from qpos0 under fixed controls, 4 launches of 5 physics steps.
    using sim = gmi::envs::ant_v4::sim;
    const int n = 32;
    std::vector<float> ctrl(std::size_t(sim::nu) * n);
    for (int u = 0; u < sim::nu; ++u)
      for (int e = 0; e < n; ++e) ctrl[std::size_t(u) * n + e] = 0.8f * std::sin(0.3f * e + u);
    const std::vector<float> g = run_local_batch_ant_v4(n, ctrl, 4, 5);
    const std::vector<float> table = sim::table();
    const gmi::physics::model_view<float> m = sim::view(table.data());
    std::vector<float> scratch(sim::scratch_reals), h(g.size());
    for (int e = 0; e < n; ++e) {
      float q[sim::nq], v[sim::nv] = {}, c[sim::nu];
      for (int k = 0; k < sim::nq; ++k) q[k] = m.qpos0[k];
      for (int u = 0; u < sim::nu; ++u) c[u] = ctrl[std::size_t(u) * n + e];
      for (int l = 0; l < 4; ++l) sim::simulate(m, scratch.data(), q, v, c, 5);
      for (int k = 0; k < sim::nq; ++k) h[std::size_t(k) * n + e] = q[k];
    }
    const auto [bad, worst] = outside(h, g, 1e-3);
    MESSAGE("local_batch: worst relative difference " << worst);
    CHECK(bad == 0);
    CHECK(outside(h, std::vector<float>(h.size(), 0.0f), 1e-3).first > 0);  // the comparison is not vacuous
  }

  TEST_CASE_TEMPLATE("envs_gpu.physics_tasks.warp_per_env_follows_thread_per_env" * doctest::timeout(300), T,
                     gmi::envs::ant_v4, gmi::envs::humanoid_v4, gmi::envs::anymal,
                     gmi::envs::ant, gmi::envs::humanoid) {
    // physics/batch_warp.cuh against the host stages (4 control steps free-running from qpos0) and against the
    // thread-per-env device layout, batch_local.cuh, one control step at a time from its states (20 steps, in
    // which the models fall, land and push: free-running, contact-rich runs part under rounding alone, see above),
    // under fixed controls; qpos and qvel compared.
    using sim = typename T::sim;
    const typename T::params p{};
    const int sub = T::physics_substeps(p);
    const int n = 64;
    std::vector<float> ctrl(std::size_t(sim::nu) * n);
    for (int u = 0; u < sim::nu; ++u)
      for (int e = 0; e < n; ++e) ctrl[std::size_t(u) * n + e] = 0.8f * std::sin(0.3f * e + u);
    const std::vector<float> table = sim::table();
    const gmi::physics::model_view<float> m = sim::view(table.data());
    const std::size_t states = std::size_t(sim::nq + sim::nv) * n;
    std::vector<float> scratch(sim::scratch_reals), h(states), start(states, 0.0f);
    for (int e = 0; e < n; ++e) {
      float q[sim::nq], v[sim::nv] = {}, c[sim::nu];
      for (int k = 0; k < sim::nq; ++k) q[k] = start[std::size_t(k) * n + e] = m.qpos0[k];
      for (int u = 0; u < sim::nu; ++u) c[u] = ctrl[std::size_t(u) * n + e];
      for (int l = 0; l < 4; ++l) sim::simulate(m, scratch.data(), q, v, c, sub);
      for (int k = 0; k < sim::nq; ++k) h[std::size_t(k) * n + e] = q[k];
      for (int k = 0; k < sim::nv; ++k) h[std::size_t(sim::nq + k) * n + e] = v[k];
    }
    // Every layout: tiles of 32 (a warp, the first warp path), 16 and 8 lanes, the constraint rows in shared memory
    // or in global slots; max_blocks 3 makes each tile step several environments in turn (its arrays, and its
    // slot, reused), as a grid of only the resident blocks does at large counts.
    struct layout_case {
      int lanes;
      bool spill;
      int max_blocks;
    };
    for (const layout_case c : {layout_case{32, false, 0}, layout_case{16, false, 0}, layout_case{8, false, 0},
                                layout_case{32, true, 0}, layout_case{16, true, 3}, layout_case{8, true, 3},
                                layout_case{16, false, 3}}) {
      CAPTURE(c.lanes);
      CAPTURE(c.spill);
      CAPTURE(c.max_blocks);
      const gmi::physics::tile_layout layout{c.lanes, c.spill};
      const std::vector<float> w4 = run_physics_layout(T::name, true, n, ctrl, 4, sub, layout, c.max_blocks);
      const auto [bad_host, worst_host] = outside(h, w4, 1e-3);
      const auto [t20, w20] = run_physics_layouts_stepwise(T::name, n, ctrl, 20, sub, layout, c.max_blocks);
      const auto [bad_dev, worst_dev] = outside(t20, w20, 1e-3);
      // std::string throughout: doctest prints a bare const char* as a pointer.
      MESSAGE(std::string(T::name) << " " << c.lanes << " lanes per env"
                                   << std::string(c.spill ? ", rows in global slots" : "")
                                   << std::string(c.max_blocks ? ", 3 blocks" : "")
                                   << ": worst relative difference " << worst_host
                                   << " from the host (4 control steps), " << worst_dev
                                   << " from thread per env (20 single steps)");
      CHECK(bad_host == 0);
      CHECK(bad_dev == 0);
      const std::vector<float> last(w20.end() - static_cast<long>(start.size()), w20.end());
      CHECK(outside(start, last, 1e-3).first > 0);  // the environments moved: the comparison is not vacuous
    }
  }

  TEST_CASE_TEMPLATE("envs_gpu.physics_tasks.thread_shared_slices_follow_the_plain_thread_kernel" *
                         doctest::timeout(300),
                     T, gmi::envs::ant_v4, gmi::envs::humanoid_v4, gmi::envs::anymal,
                     gmi::envs::ant, gmi::envs::humanoid) {
    // The thread path with the hottest arrays in shared memory (physics/thread_shared.hpp, rl/physics_thread_step.cuh)
    // against the plain thread kernel: 300 environments (3 blocks of 128), 30 env steps, each from the host's own
    // states (as above), slices of 31, 111 and 255 floats. The arithmetic is the same (the host twin,
    // physics.thread_shared.*, is bit-identical), so observations and rewards within 1e-3 (1 + |plain|) and flags
    // equal are checked, and how many observations are equal bit for bit is reported.
    const int n = 300, steps = 30;
    gmi::rl::env_batch<T> hb(n, 2024);
    std::vector<float> obs(std::size_t(n) * T::obs_dim), act(std::size_t(n) * T::act_dim), rew(n);
    std::vector<std::uint8_t> te(n), tr(n);
    std::vector<batch_snapshot> before;
    hb.reset({obs.data(), obs.size()});
    for (int t = 0; t < steps; ++t) {
      before.push_back(take_snapshot(hb));
      for (int i = 0; i < n; ++i)
        for (int k = 0; k < T::act_dim; ++k) act[std::size_t(i) * T::act_dim + k] = test_action(7, t, i, T::act_dim, k);
      hb.step({act.data(), act.size()}, {obs.data(), obs.size()}, {rew.data(), rew.size()}, {te.data(), te.size()},
              {tr.data(), tr.size()});
    }
    struct restore {  // the process-wide requests back to the defaults, however the case ends
      ~restore() {
        gmi::physics::request_thread_shared_reals(0);
        gmi::physics::request_step_path("auto");
      }
    } restore_requests;
    gmi::physics::request_step_path("threads");
    gmi::physics::request_thread_shared_reals(0);
    const trajectory plain = step_physics_task_gpu_from(T::name, n, 2024, 7, before);
    for (const int slice : {31, 111, 255}) {
      CAPTURE(slice);
      gmi::physics::request_thread_shared_reals(slice);
      const trajectory g = step_physics_task_gpu_from(T::name, n, 2024, 7, before);
      REQUIRE(g.obs.size() == plain.obs.size());
      const auto [bad_obs, worst_obs] = outside(g.obs, plain.obs, 1e-3);
      const auto [bad_rew, worst_rew] = outside(g.rewards, plain.rewards, 1e-3);
      long equal = 0;
      for (std::size_t k = 0; k < g.obs.size(); ++k) equal += g.obs[k] == plain.obs[k];
      MESSAGE(std::string(T::name) << ", shared slice " << slice << ": observations " << worst_obs << ", rewards "
                                   << worst_rew << " from the plain thread kernel; " << equal << " of " << g.obs.size()
                                   << " observation values equal bit for bit");
      CHECK(bad_obs == 0);
      CHECK(bad_rew == 0);
      CHECK(g.terminated == plain.terminated);
      CHECK(g.truncated == plain.truncated);
    }
  }

  TEST_CASE_TEMPLATE("envs_gpu.physics_tasks.staged_path_follows_the_thread_path" * doctest::timeout(300), T,
                     gmi::envs::ant_v4, gmi::envs::humanoid_v4, gmi::envs::anymal,
                     gmi::envs::ant, gmi::envs::humanoid) {
    // The staged path (a kernel per stage, the arrays between them in global memory; rl/physics_staged_step.cuh)
    // against the plain thread kernel and the host: 300 environments, 30 env steps, each from the host's own states
    // (as above). The arithmetic is the host's (its host twin, rl.physics_staged.*, is bit-identical to the one-call
    // step), so observations and rewards within 1e-3 (1 + |other|), flags equal; values equal bit for bit reported.
    // Blocks of 256 and 64 threads give the same bits.
    const int n = 300, steps = 30;
    std::vector<batch_snapshot> before;
    const trajectory host = host_run<T>(n, steps, 2024, 7, &before);
    struct restore {  // the process-wide request back to the default, however the case ends
      ~restore() {
        gmi::physics::request_step_path("auto");
        gmi::physics::request_staged_block(0);
      }
    } restore_request;
    gmi::physics::request_step_path("threads");
    CHECK(physics_task_path_gpu(T::name, n) == "thread_per_env");
    const trajectory plain = step_physics_task_gpu_from(T::name, n, 2024, 7, before);
    gmi::physics::request_step_path("staged");
    CHECK(physics_task_path_gpu(T::name, n) == "staged_per_env");
    {  // a smaller batch first, whose stream is gone when it ends, so the next batch grows the staged buffers after
       // it (the growth once synchronized that destroyed stream: the bench crashed at 3aba6d2)
      std::vector<batch_snapshot> small_before;
      const trajectory small_host = host_run<T>(64, 2, 2024, 7, &small_before);
      CHECK(step_physics_task_gpu_from(T::name, 64, 2024, 7, small_before).obs.size() == small_host.obs.size());
    }
    // Blocks of 256 (two, the second partly past the environments) and the default 64 (five).
    gmi::physics::request_staged_block(256);
    const trajectory g256 = step_physics_task_gpu_from(T::name, n, 2024, 7, before);
    gmi::physics::request_staged_block(0);
    const trajectory g = step_physics_task_gpu_from(T::name, n, 2024, 7, before);
    CHECK(g256.obs == g.obs);  // the block changes which thread steps an environment, not its arithmetic
    CHECK(g256.rewards == g.rewards);
    REQUIRE(g.obs.size() == plain.obs.size());
    REQUIRE(g.obs.size() == host.obs.size());
    const auto [bad_obs, worst_obs] = outside(g.obs, plain.obs, 1e-3);
    const auto [bad_rew, worst_rew] = outside(g.rewards, plain.rewards, 1e-3);
    const double worst_host = outside(g.obs, host.obs, 1e-3).second;
    const double worst_host_rew = outside(g.rewards, host.rewards, 1e-3).second;
    long equal = 0;
    for (std::size_t k = 0; k < g.obs.size(); ++k) equal += g.obs[k] == plain.obs[k];
    MESSAGE(std::string(T::name) << ", staged path: observations " << worst_obs << ", rewards " << worst_rew
                                 << " from the plain thread kernel, " << worst_host << " and " << worst_host_rew
                                 << " from the host; " << equal << " of " << g.obs.size()
                                 << " observation values equal the thread kernel's bit for bit");
    CHECK(bad_obs == 0);
    CHECK(bad_rew == 0);
    CHECK(near_host(g.obs, host.obs));
    CHECK(near_host(g.rewards, host.rewards));
    CHECK(g.terminated == plain.terminated);
    CHECK(g.terminated == host.terminated);
    CHECK(g.truncated == plain.truncated);
    CHECK(outside(std::vector<float>(g.obs.begin(), g.obs.begin() + std::size_t(n) * T::obs_dim),
                  std::vector<float>(g.obs.end() - std::size_t(n) * T::obs_dim, g.obs.end()), 1e-3)
              .first > 0);  // the environments moved: the comparison is not vacuous
  }

  TEST_CASE_TEMPLATE("envs_gpu.physics_tasks.staged_shared_slices_follow_the_staged_path" * doctest::timeout(300), T,
                     gmi::envs::ant_v4, gmi::envs::humanoid_v4, gmi::envs::anymal,
                     gmi::envs::ant, gmi::envs::humanoid) {
    // The staged path with each stage's hottest arrays in a slice of shared memory (physics/stage_shared.hpp:
    // only where they live changes; the host twin with slices is bit-identical, physics.stage_shared.*) against the
    // staged path without: 300 environments, 30 env steps from the host's states, slices of 111 floats, auto (-1:
    // here the most a block of 64 may have) and 1023 in blocks of 256 (cut to what a block may have). Observations
    // and rewards within 1e-3 (1 + |other|) of the plain staged path and of the host, flags equal; values equal bit
    // for bit reported.
    const int n = 300, steps = 30;
    std::vector<batch_snapshot> before;
    const trajectory host = host_run<T>(n, steps, 2024, 7, &before);
    struct restore {  // the process-wide requests back to the defaults, however the case ends
      ~restore() {
        gmi::physics::request_step_path("auto");
        gmi::physics::request_staged_block(0);
        gmi::physics::request_staged_shared_reals(0);
      }
    } restore_request;
    gmi::physics::request_step_path("staged");
    const trajectory plain = step_physics_task_gpu_from(T::name, n, 2024, 7, before);
    for (const auto& [reals, block] : {std::pair{111, 64}, std::pair{-1, 64}, std::pair{1023, 256}}) {
      CAPTURE(reals);
      CAPTURE(block);
      gmi::physics::request_staged_block(block);
      gmi::physics::request_staged_shared_reals(reals);
      const trajectory g = step_physics_task_gpu_from(T::name, n, 2024, 7, before);
      REQUIRE(g.obs.size() == plain.obs.size());
      const auto [bad_obs, worst_obs] = outside(g.obs, plain.obs, 1e-3);
      const auto [bad_rew, worst_rew] = outside(g.rewards, plain.rewards, 1e-3);
      const double worst_host = outside(g.obs, host.obs, 1e-3).second;
      long equal = 0;
      for (std::size_t k = 0; k < g.obs.size(); ++k) equal += g.obs[k] == plain.obs[k];
      MESSAGE(std::string(T::name) << ", staged path with slices of " << reals << " floats (blocks of " << block
                                   << "): observations " << worst_obs << ", rewards " << worst_rew
                                   << " from the staged path without, " << worst_host << " from the host; " << equal
                                   << " of " << g.obs.size() << " observation values equal bit for bit");
      CHECK(bad_obs == 0);
      CHECK(bad_rew == 0);
      CHECK(near_host(g.obs, host.obs));
      CHECK(g.terminated == plain.terminated);
      CHECK(g.truncated == plain.truncated);
    }
  }

  TEST_CASE_TEMPLATE("envs_gpu.physics_tasks.rule_follows_the_resident_count" * doctest::timeout(60), T, gmi::envs::ant_v4,
                     gmi::envs::humanoid_v4, gmi::envs::anymal, gmi::envs::ant, gmi::envs::humanoid) {
    // On this device: the occupancy calculator's resident count for each layout, the rule's bound at
    // warp_max_waves times it (warp at the bound, threads one past), and the rows in global slots holding more
    // environments per SM than the rows in shared memory at the same width.
    for (const int lanes : {32, 16, 8}) {
      const rule_probe shared = probe_physics_rule(T::name, lanes, false);
      const rule_probe global = probe_physics_rule(T::name, lanes, true);
      MESSAGE(std::string(T::name) << " " << lanes << " lanes: " << shared.resident_envs_per_sm << " resident per SM ("
                      << shared.envs_per_block << " per block, " << shared.shared_bytes_per_env
                      << " bytes each), rows in global slots " << global.resident_envs_per_sm << " (" << global.envs_per_block
                      << " per block, " << global.shared_bytes_per_env << " bytes each), " << shared.sm_count << " SMs");
      for (const rule_probe& r : {shared, global}) {
        CHECK(r.lanes == lanes);
        CHECK(r.resident_envs_per_sm > 0);
        CHECK(r.at_bound == "warp_per_env");
        CHECK(r.past_bound == "thread_per_env");
      }
      CHECK(global.shared_bytes_per_env < shared.shared_bytes_per_env);
      CHECK(global.resident_envs_per_sm >= shared.resident_envs_per_sm);
    }
  }

  TEST_CASE_TEMPLATE("envs_gpu.physics_tasks.env_driver_warp_path_follows_thread_path" * doctest::timeout(300), T,
                     gmi::envs::ant_v4, gmi::envs::humanoid_v4, gmi::envs::anymal,
                     gmi::envs::ant, gmi::envs::humanoid) {
    // The env driver (env_batch over exec::cuda) with a warp per environment (rl/physics_env_step.cuh) against the
    // same driver with a thread per environment: each of 30 env steps from the thread path's own states (driver
    // state copied over before each step: free-running contact-rich runs part under rounding alone, see above),
    // with resets, auto-resets and episode ends. Observations and rewards within 1e-3 (1 + |threads|), flags and
    // episode counts equal; the first observations (resets, no physics) equal bit for bit. Then the same with the
    // warp batch stepped by rl::batched_dynamics (the batched rollout's env step) instead of env_batch::step.
    // Tiles of 32, 16 and 8 lanes, rows in shared memory or global slots (env_batch::step), and the model's default
    // layout through batched_dynamics; then 2048 environments, past what the SMs hold at once, so each tile steps
    // several environments in turn.
    struct driver_case {
      int lanes;
      bool spill, via_dynamics;
      int n, steps;
    };
    for (const driver_case c : {driver_case{32, false, false, 96, 30}, driver_case{16, false, false, 96, 30},
                                driver_case{8, false, false, 96, 30}, driver_case{16, true, false, 96, 30},
                                driver_case{8, true, false, 96, 30}, driver_case{0, false, true, 96, 30},
                                driver_case{0, false, false, 2048, 6}, driver_case{0, true, false, 2048, 6}}) {
      CAPTURE(c.lanes);
      CAPTURE(c.spill);
      CAPTURE(c.via_dynamics);
      CAPTURE(c.n);
      const int n = c.n, steps = c.steps;
      const bool via_dynamics = c.via_dynamics;
      const std::size_t rows = std::size_t(n) * T::obs_dim;
      const paired_paths r =
          step_physics_task_both_paths(T::name, n, steps, 2025, 11, via_dynamics, c.lanes, c.spill);
      CHECK(r.threads_path == "thread_per_env");
      CHECK(r.warp_path == "warp_per_env");
      REQUIRE(r.threads.obs.size() == r.warp.obs.size());
      REQUIRE(r.threads.obs.size() == rows * (steps + 1));
      const std::vector<float> t0(r.threads.obs.begin(), r.threads.obs.begin() + rows),
          w0(r.warp.obs.begin(), r.warp.obs.begin() + rows);
      const std::vector<float> ts(r.threads.obs.begin() + rows, r.threads.obs.end()),
          ws(r.warp.obs.begin() + rows, r.warp.obs.end());
      const auto [bad_obs, worst_obs] = outside(ws, ts, 1e-3);
      const auto [bad_rew, worst_rew] = outside(r.warp.rewards, r.threads.rewards, 1e-3);
      long ends = 0;
      for (auto f : r.threads.terminated) ends += f;
      MESSAGE(std::string(T::name) << std::string(via_dynamics ? " batched_dynamics" : " env driver") << ", "
                                   << c.lanes << " lanes (0: default)"
                                   << std::string(c.spill ? ", rows in global slots" : "") << ", " << n
                                   << " envs, warp path against thread per env, one step from the same "
                                   << "states: observations " << worst_obs << ", rewards " << worst_rew << " ("
                                   << ends << " episodes ended; the rule picks " << r.auto_path << " for " << n
                                   << " environments)");
      CHECK(t0 == w0);
      CHECK(bad_obs == 0);
      CHECK(bad_rew == 0);
      CHECK(r.threads.terminated == r.warp.terminated);
      CHECK(r.threads.truncated == r.warp.truncated);
      CHECK(outside(t0, std::vector<float>(ts.end() - static_cast<long>(rows), ts.end()), 1e-3).first > 0);  // moved
      CHECK(r.threads.stats.episodes == r.warp.stats.episodes);
    }
  }
}
